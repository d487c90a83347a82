import fs from 'node:fs';
import path from 'node:path';

/** A file as `stat` sees it: what must be unchanged for a remembered hash to still be its content's. */
export interface FileIdentity {
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  dev: bigint;
}

const keyOf = (st: FileIdentity): string => `${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}:${st.dev}`;

/**
 * What `push` hashed, by absolute path: size, mtime, ctime, inode and device → BLAKE3, so pushing an unchanged tree
 * again opens no file (as `git status` and `rsync` decide from stat alone). Any write to a file moves its ctime (which
 * no tool can set back), so a changed file is hashed again. One JSON file (`<cache dir>/assets-cli/hashes.json`),
 * written whole and renamed into place; deleting it only costs the next push its hashing.
 */
export class HashCache {
  private entries: Record<string, [string, string]> = {};
  private dirty = false;

  constructor(readonly file: string | undefined) {
    if (!file) return;
    try {
      const data = JSON.parse(fs.readFileSync(file, 'utf8')) as {
        version?: number;
        files?: Record<string, [string, string]>;
      };
      if (data.version === 1 && data.files && typeof data.files === 'object') this.entries = data.files;
    } catch {
      // Missing or unreadable: start empty.
    }
  }

  get(abs: string, st: FileIdentity): string | undefined {
    const e = this.entries[abs];
    return e && e[0] === keyOf(st) ? e[1] : undefined;
  }

  set(abs: string, st: FileIdentity, hash: string): void {
    this.entries[abs] = [keyOf(st), hash];
    this.dirty = true;
  }

  /** Writes the cache if it changed; a failure costs only the next run's hashing. */
  save(): void {
    if (!this.file || !this.dirty) return;
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      fs.mkdirSync(path.dirname(this.file), { recursive: true });
      fs.writeFileSync(tmp, JSON.stringify({ version: 1, files: this.entries }));
      fs.renameSync(tmp, this.file);
      this.dirty = false;
    } catch {
      fs.rmSync(tmp, { force: true });
    }
  }
}
