import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import {
  BlobNotFoundError,
  blobPath,
  checkObjectName,
  DERIVED_KINDS,
  PARTIAL_NAME,
  QUARANTINE_DAY,
  type BlobStore,
  type CopiedLocalFile,
  type BlobStoreCapabilities,
  type CommitOptions,
  type HashedWrites,
  type LocalFiles,
  type DerivedKind,
  type PartialBlob,
  type QuarantinedBlob,
  type SpaceReport,
  type StoredBlob,
  type TempBlob,
} from './blob-store';
import { isProcessAlive } from '../process';
import { BackgroundSync, syncDir, writeFully, WRITE_BLOCK } from './block-writer';
import { fileBody, ReadBufferPool } from './file-body';
import type { FetchedBody, HashedFile, HashSession, IngestWorkers, StoredBody } from './ingest-pool';

export { BlobNotFoundError } from './blob-store';

/**
 * Local-disk blob store under `root`: content at `root/ab/cd/<hex>`, temporaries in `root/.tmp` (same filesystem, so
 * commit is an atomic rename), partial downloads in `root/.partial`, blobs moved aside in `root/.orphans/<day>/ab/cd/<hex>`
 * (renamed there and back, never copied). Every temporary is fsynced before it is renamed, and the directory after, so
 * a committed blob survives a power cut.
 */
export class FsBlobStore implements BlobStore, HashedWrites, LocalFiles, SpaceReport {
  readonly kind = 'fs' as const;
  /** Hashing and writing on the ingest workers, paths of blobs on this disk, and its free space. */
  readonly capabilities: BlobStoreCapabilities = { hashedWrites: this, localFiles: this, space: this };
  private readonly tmpDir: string;
  private readonly partialDir: string;
  private readonly objectsDir: string;
  private readonly orphansDir: string;
  /** Temp names carry host and pid, so start-up can tell the leftovers of a dead process from live uploads. */
  private readonly tempPrefix = `${os.hostname().replace(/[^\w-]/g, '_')}.${process.pid}.`;
  /** The read buffers of `FileBody.sendTo` (serving content), reused across requests. */
  readonly readBuffers = new ReadBufferPool();

  /** `workers`: the process's ingest threads, for `writeTempHashed`. */
  constructor(
    private readonly root: string,
    private readonly workers: IngestWorkers,
  ) {
    this.tmpDir = path.join(root, '.tmp');
    this.partialDir = path.join(root, '.partial');
    this.objectsDir = path.join(root, '.objects');
    this.orphansDir = path.join(root, '.orphans');
  }

  async init(): Promise<void> {
    await fsp.mkdir(this.tmpDir, { recursive: true });
    await fsp.mkdir(this.partialDir, { recursive: true });
    await this.removeDeadTemps();
  }

  async writeTemp(source: AsyncIterable<Buffer>): Promise<TempBlob> {
    const file = path.join(this.tmpDir, `${this.tempPrefix}${crypto.randomUUID()}`);
    const fh = await fsp.open(file, 'wx', 0o644);
    try {
      const size = await writeAll(fh, source);
      await fh.sync();
      await fh.close();
      return { key: path.relative(this.root, file), size };
    } catch (err) {
      await fh.close().catch(() => undefined);
      await fsp.rm(file, { force: true });
      throw err;
    }
  }

  /**
   * Like `writeTemp`, with the BLAKE3 + SHA-256 of the bytes computed on the way by an ingest worker's job (see
   * ingest-pool.ts). The chunks are written from this thread as they came, while they are still in the CPU's caches (a
   * copy of them goes to the worker for hashing): the worker writing its copies cost the kernel's copy into the page
   * cache about a CPU-second more per GiB (`npm run bench -- hashing`).
   */
  async writeTempHashed(source: AsyncIterable<Buffer>): Promise<{ temp: TempBlob; digest: HashedFile }> {
    const job = this.workers.open();
    async function* hashed() {
      for await (const chunk of source) {
        const wait = job.write(chunk);
        if (wait) await wait;
        yield chunk;
      }
    }
    let temp: TempBlob | undefined;
    try {
      temp = await this.writeTemp(hashed());
      const digest = await job.finish();
      return { temp, digest };
    } catch (err) {
      await job.abort();
      if (temp) await this.discard(temp);
      throw err;
    }
  }

  async copyFileHashed(src: string, opts: { headBytes: number; precommit?: boolean }): Promise<CopiedLocalFile> {
    const file = path.join(this.tmpDir, `${this.tempPrefix}${crypto.randomUUID()}`);
    const under = opts.precommit ? this.root : undefined;
    const { head, before, after, committed, ...digest } = await this.workers.copyHashed(
      src,
      file,
      opts.headBytes,
      under,
    );
    return { temp: { key: path.relative(this.root, file), size: digest.size }, digest, head, committed, before, after };
  }

  partialKey(name: string): string {
    return path.relative(this.root, this.partialFile(name));
  }

  private partialFile(name: string): string {
    if (!PARTIAL_NAME.test(name)) throw new Error(`invalid partial name ${name}`);
    return path.join(this.partialDir, name);
  }

  async openPartial(name: string): Promise<PartialBlob> {
    const file = this.partialFile(name);
    // A missing part is an empty one; a part that cannot be read is a failure, not an empty part.
    const size = await fsp.stat(file).then(
      (s) => s.size,
      (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return 0;
        throw err;
      },
    );
    const key = this.partialKey(name);
    return {
      key,
      size,
      readExisting: () =>
        fs.createReadStream(file, { end: size > 0 ? size - 1 : undefined, highWaterMark: WRITE_BLOCK }),
      append: async (source, opts) => {
        const fh = await fsp.open(file, opts?.truncate ? 'w' : 'a', 0o644);
        try {
          await writeAll(fh, source);
          await fh.sync();
          const total = (await fh.stat()).size;
          await fh.close();
          return { key, size: total };
        } catch (err) {
          // Keep what was written: it is the point of a partial file. Make it durable for the next attempt.
          await fh.sync().catch(() => undefined);
          await fh.close().catch(() => undefined);
          throw err;
        }
      },
      truncate: async (to) => {
        const fh = await fsp.open(file, 'r+');
        try {
          await fh.truncate(to);
          await fh.sync();
        } finally {
          await fh.close();
        }
      },
      discard: async () => {
        await fsp.rm(file, { force: true });
        await syncDir(this.partialDir); // durable before the caller answers that the part is gone
      },
      snapshot: async () => {
        // A temporary of this process (a crash leaves it to removeDeadTemps at the next start).
        const tmp = path.join(this.tmpDir, `${this.tempPrefix}${crypto.randomUUID()}`);
        await linkOrCopy(file, tmp);
        return { key: path.relative(this.root, tmp), size: (await fsp.stat(tmp)).size };
      },
    };
  }

  /**
   * HashedWrites.appendHashed: the worker of `hash` appends to the partial's file and continues its hashes. When
   * `source` fails (a client gone mid-request), what it gave so far is still written and fsynced, then the failure is
   * rethrown.
   */
  async appendHashed(partial: PartialBlob, source: AsyncIterable<Buffer>, hash: HashSession): Promise<TempBlob> {
    const key = partial.key;
    const file = this.resolveKey(key);
    const job = hash.append(file);
    let failure: unknown;
    try {
      for await (const chunk of source) {
        const wait = job.write(chunk);
        if (wait) await wait;
      }
    } catch (err) {
      failure = err;
    }
    try {
      await job.finish();
    } catch (err) {
      failure ??= err;
    }
    if (failure !== undefined) throw failure;
    return { key, size: (await fsp.stat(file)).size };
  }

  /** HashedWrites.appendFetched: the worker that fetched `body` appends it to the partial's file. */
  async appendFetched(
    partial: PartialBlob,
    body: FetchedBody,
    hash: HashSession,
    o: { limit: number; headBytes: number; onProgress?: (bytes: number) => void },
  ): Promise<{ temp: TempBlob; stored: StoredBody }> {
    const file = this.resolveKey(partial.key);
    const stored = await body.store(hash, file, o);
    return { temp: { key: partial.key, size: (await fsp.stat(file)).size }, stored };
  }

  async commit(temp: TempBlob, blake3Hex: string, opts: CommitOptions = {}): Promise<void> {
    const src = this.resolveKey(temp.key);
    const dest = this.contentPath(blake3Hex);
    if (await exists(dest)) {
      // Content-addressed: an existing blob with this hash holds the same bytes.
      if (!opts.keepTemp) await fsp.rm(src, { force: true });
      return;
    }
    await fsp.mkdir(path.dirname(dest), { recursive: true });
    if (opts.keepTemp) await linkOrCopy(src, dest);
    else await fsp.rename(src, dest);
    await syncDir(path.dirname(dest));
  }

  async discard(temp: TempBlob): Promise<void> {
    // A temporary is one file: unlink, not rm's walk (a batch of the import discards 64 at once).
    await fsp.unlink(this.resolveKey(temp.key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  async exists(blake3Hex: string): Promise<boolean> {
    return exists(this.contentPath(blake3Hex));
  }

  async read(blake3Hex: string, range?: { start: number; end: number }): Promise<Readable> {
    // Open first so a missing blob is an error here, not an 'error' event after headers went out.
    const fh = await fsp.open(this.contentPath(blake3Hex), 'r').catch(notFound(blake3Hex));
    return fileBody(fh, range, this.readBuffers);
  }

  async localPath(blake3Hex: string): Promise<string> {
    const file = this.contentPath(blake3Hex);
    await fsp.access(file, fs.constants.R_OK).catch(notFound(blake3Hex));
    return file;
  }

  async quarantine(blake3Hex: string, day: string): Promise<void> {
    const file = this.contentPath(blake3Hex);
    if (await moveWithDerived(file, this.quarantinePath(blake3Hex, day))) return;
    // No blob (an in-place content's bytes are its file, contract 6.4): its derived files (a thumbnail made from the
    // file) have nothing to go aside with, and nothing lists them there; they are made again if the content returns.
    for (const kind of DERIVED_KINDS) await fsp.rm(`${file}.${kind}`, { force: true });
  }

  async restore(blake3Hex: string): Promise<boolean> {
    const dest = this.contentPath(blake3Hex);
    // The newest copy first; any copy holds the same bytes (content-addressed).
    for (const day of (await this.quarantineDays()).reverse()) {
      if (await moveWithDerived(this.quarantinePath(blake3Hex, day), dest)) return true;
    }
    return false;
  }

  async *listQuarantined(): AsyncIterable<QuarantinedBlob> {
    for (const day of await this.quarantineDays()) {
      for await (const b of walkBlobs(path.join(this.orphansDir, day))) yield { blake3: b.blake3, day, size: b.size };
    }
  }

  async purgeQuarantined(blake3Hex: string, day: string): Promise<void> {
    const file = this.quarantinePath(blake3Hex, day);
    for (const kind of DERIVED_KINDS) await fsp.rm(`${file}.${kind}`, { force: true });
    await fsp.rm(file, { force: true });
    // Emptied folders go too (ab/cd, then the day), so the quarantine does not keep 65,536 folders per day.
    for (let dir = path.dirname(file); dir !== this.orphansDir; dir = path.dirname(dir)) {
      if (
        !(await fsp.rmdir(dir).then(
          () => true,
          () => false,
        ))
      )
        break;
    }
  }

  /** The days of the quarantine, oldest first. */
  private async quarantineDays(): Promise<string[]> {
    const names = await fsp.readdir(this.orphansDir).catch(() => [] as string[]);
    return names.filter((n) => QUARANTINE_DAY.test(n)).sort();
  }

  private quarantinePath(blake3Hex: string, day: string): string {
    if (!QUARANTINE_DAY.test(day)) throw new Error(`invalid quarantine day ${day}`);
    return path.join(this.orphansDir, day, path.relative(this.root, this.contentPath(blake3Hex)));
  }

  async putDerived(blake3Hex: string, kind: DerivedKind, bytes: Buffer): Promise<void> {
    const dest = `${this.contentPath(blake3Hex)}.${kind}`;
    const tmp = path.join(this.tmpDir, `${this.tempPrefix}${crypto.randomUUID()}`);
    try {
      const fh = await fsp.open(tmp, 'wx', 0o644);
      try {
        await fh.writeFile(bytes);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.mkdir(path.dirname(dest), { recursive: true });
      await fsp.rename(tmp, dest);
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      throw err;
    }
  }

  async readDerived(blake3Hex: string, kind: DerivedKind): Promise<Buffer | undefined> {
    return fsp.readFile(`${this.contentPath(blake3Hex)}.${kind}`).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
  }

  async sweepTemps(olderThanMs: number): Promise<number> {
    let removed = 0;
    const cutoff = Date.now() - olderThanMs;
    for (const dir of [this.tmpDir, this.partialDir]) {
      for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
        const file = path.join(dir, name);
        const st = await fsp.stat(file).catch(() => undefined);
        if (st && st.mtimeMs < cutoff) {
          await fsp.rm(file, { force: true });
          removed++;
        }
      }
    }
    return removed;
  }

  async *listBlobs(olderThanMs: number, now = Date.now()): AsyncIterable<string> {
    const cutoff = now - olderThanMs;
    for await (const b of walkBlobs(this.root)) if (b.lastModified < cutoff) yield b.blake3;
  }

  listStored(): AsyncIterable<StoredBlob> {
    return walkBlobs(this.root);
  }

  async writeObject(name: string, source: AsyncIterable<Buffer>): Promise<number> {
    const dest = path.join(this.objectsDir, checkObjectName(name));
    const temp = await this.writeTemp(source);
    try {
      await fsp.mkdir(path.dirname(dest), { recursive: true });
      await fsp.rename(this.resolveKey(temp.key), dest);
      await syncDir(path.dirname(dest));
      return temp.size;
    } catch (err) {
      await this.discard(temp);
      throw err;
    }
  }

  async readObject(name: string, range?: { start: number; end: number }): Promise<Readable> {
    const fh = await fsp.open(path.join(this.objectsDir, checkObjectName(name)), 'r');
    return fileBody(fh, range, this.readBuffers);
  }

  async objectSize(name: string): Promise<number | undefined> {
    return fsp.stat(path.join(this.objectsDir, checkObjectName(name))).then(
      (s) => s.size,
      () => undefined,
    );
  }

  async deleteObject(name: string): Promise<void> {
    await fsp.rm(path.join(this.objectsDir, checkObjectName(name)), { force: true });
  }

  async ping(): Promise<void> {
    await fsp.access(this.root, fs.constants.W_OK);
  }

  async close(): Promise<void> {
    // Nothing to release: files are opened per call.
  }

  async freeBytes(): Promise<number> {
    const st = await fsp.statfs(this.root);
    return st.bavail * st.bsize;
  }

  /** Filesystem path of a blob (used by tests and the orphan sweeper). */
  contentPath(blake3Hex: string): string {
    if (!/^[a-f0-9]{64}$/.test(blake3Hex)) throw new Error(`invalid blake3 hex ${blake3Hex}`);
    return path.join(this.root, blobPath(blake3Hex));
  }

  private resolveKey(key: string): string {
    const p = path.resolve(this.root, key);
    if (!p.startsWith(this.tmpDir + path.sep) && !p.startsWith(this.partialDir + path.sep)) {
      throw new Error(`not a temporary blob: ${key}`);
    }
    return p;
  }

  /** Temporaries of processes on this host that no longer run are leftovers of a crash. */
  private async removeDeadTemps(): Promise<void> {
    const host = os.hostname().replace(/[^\w-]/g, '_');
    for (const name of await fsp.readdir(this.tmpDir)) {
      const [h, pidText] = name.split('.');
      const pid = Number(pidText);
      const ours = h === host && Number.isInteger(pid);
      if (ours && pid !== process.pid && !isProcessAlive(pid)) {
        await fsp.rm(path.join(this.tmpDir, name), { force: true });
      }
    }
  }
}

/** The blobs of a tree laid out as `ab/cd/<hex>` (the store, or one day of its quarantine). */
async function* walkBlobs(root: string): AsyncIterable<StoredBlob> {
  const hex2 = /^[0-9a-f]{2}$/;
  const dirs = async (dir: string) => (await fsp.readdir(dir).catch(() => [] as string[])).filter((n) => hex2.test(n));
  for (const a of await dirs(root)) {
    for (const b of await dirs(path.join(root, a))) {
      for (const name of await fsp.readdir(path.join(root, a, b)).catch(() => [] as string[])) {
        if (!/^[0-9a-f]{64}$/.test(name) || !name.startsWith(a + b)) continue;
        const st = await fsp.stat(path.join(root, a, b, name)).catch(() => undefined);
        if (st) yield { blake3: name, size: st.size, lastModified: st.mtimeMs };
      }
    }
  }
}

/**
 * Renames a blob and its derived objects from `from` to `to` (creating the folder), derived objects first so a crash
 * in between never leaves them behind without their blob; both folders are synced after. Whether the blob moved (false:
 * there was none at `from`). An existing `to` is replaced: it holds the same bytes.
 */
async function moveWithDerived(from: string, to: string): Promise<boolean> {
  const missing = (err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
    return false;
  };
  if (!(await exists(from))) return false;
  await fsp.mkdir(path.dirname(to), { recursive: true });
  for (const kind of DERIVED_KINDS) await fsp.rename(`${from}.${kind}`, `${to}.${kind}`).catch(missing);
  const moved = await fsp.rename(from, to).then(() => true, missing);
  await syncDir(path.dirname(to));
  await syncDir(path.dirname(from)).catch(() => undefined);
  return moved;
}

const notFound =
  (blake3Hex: string) =>
  (err: NodeJS.ErrnoException): never => {
    throw err.code === 'ENOENT' ? new BlobNotFoundError(blake3Hex) : err;
  };

async function exists(p: string): Promise<boolean> {
  return fsp.access(p).then(
    () => true,
    () => false,
  );
}

/**
 * Gives `src` a second name `dest` (atomic; an existing `dest` is kept). Where hard links are not supported, copies to
 * a temporary sibling and renames it into place.
 */
async function linkOrCopy(src: string, dest: string): Promise<void> {
  try {
    await fsp.link(src, dest);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV' && code !== 'EMLINK') throw err;
    const tmp = `${dest}.${process.pid}.${crypto.randomUUID()}.copy`;
    try {
      await fsp.copyFile(src, tmp);
      const fh = await fsp.open(tmp, 'r+');
      await fh.sync().finally(() => fh.close());
      await fsp.rename(tmp, dest);
    } finally {
      await fsp.rm(tmp, { force: true });
    }
  }
}

/**
 * Copies `source` into `fh`, gathering chunks into 1 MiB blocks written with one `writev` (no copy into a new
 * buffer) and keeping one write in flight while the next block fills, so network reads, hashing and disk writes
 * overlap with bounded memory (about two blocks).
 */
async function writeAll(fh: fsp.FileHandle, source: AsyncIterable<Buffer>): Promise<number> {
  let pending: Promise<unknown> = Promise.resolve();
  const sync = new BackgroundSync(fh);
  let parts: Buffer[] = [];
  let partsLen = 0;
  let total = 0;
  const flush = async () => {
    const block = parts;
    const len = partsLen;
    parts = [];
    partsLen = 0;
    await pending;
    pending = writeFully(fh, block, len);
    // Marked handled now; the failure is rethrown where `pending` is next awaited.
    pending.catch(() => undefined);
    sync.wrote(len);
  };
  try {
    for await (const chunk of source) {
      if (chunk.length === 0) continue;
      parts.push(chunk);
      partsLen += chunk.length;
      total += chunk.length;
      if (partsLen >= WRITE_BLOCK) await flush();
    }
    if (partsLen > 0) await flush();
  } finally {
    await pending.catch(() => undefined);
    await sync.settled();
  }
  await pending;
  if (sync.failure) throw sync.failure;
  return total;
}
