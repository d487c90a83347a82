import fs from 'node:fs';
import path from 'node:path';

/** A regular file an import may read: where it is, its tree path, and what it was when the walk saw it. */
export interface FoundFile {
  /** The path to open: inside the root (a symbolic link inside the root is resolved to its target, also inside). */
  abs: string;
  /** `<root name>/<path inside the root>`, POSIX separators: the file's place in a ComfyUI tree. */
  treePath: string;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  dev: bigint;
}

/** Something under a root that is not imported, with why (named in the import's `errors`). */
export interface WalkProblem {
  treePath: string;
  code: 'SYMLINK_OUTSIDE_ROOT' | 'NOT_A_FILE' | 'UNREADABLE' | 'INVALID_FILE_NAME' | 'ROOT_MISSING';
  message: string;
}

/** The reason without the server's own paths (the walk's answers name tree paths only). */
const errMessage = (err: unknown): string =>
  `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;

function kindOf(st: fs.Stats | fs.BigIntStats | fs.Dirent): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

const inside = (real: string, root: string): boolean => real === root || real.startsWith(root + path.sep);

/**
 * Every regular file under `dir` (the folder of root `name`), in name order, hidden names skipped as `push` skips them.
 * Symbolic links are followed only while their target stays inside the root (each folder once, so a loop ends);
 * links that leave it, special files (FIFOs, sockets, devices) and entries that cannot be read are problems. Only
 * metadata is read here (lstat, realpath, readdir); no file is opened.
 */
export async function walkRoot(name: string, dir: string, files: FoundFile[], problems: WalkProblem[]): Promise<void> {
  let root: string;
  try {
    root = await fs.promises.realpath(dir);
  } catch (err) {
    problems.push({
      treePath: name,
      code: 'ROOT_MISSING',
      message: `the folder of root ${name} cannot be read: ${errMessage(err)}`,
    });
    return;
  }
  const seen = new Set<string>();
  const visit = async (real: string, tree: string): Promise<void> => {
    if (seen.has(real)) return;
    seen.add(real);
    let entries: fs.Dirent[];
    try {
      entries = await fs.promises.readdir(real, { withFileTypes: true });
    } catch (err) {
      problems.push({ treePath: tree, code: 'UNREADABLE', message: errMessage(err) });
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const abs = path.join(real, e.name);
      const treePath = `${tree}/${e.name}`;
      if (e.name.includes('\ufffd')) {
        problems.push({ treePath, code: 'INVALID_FILE_NAME', message: 'the file name is not UTF-8' });
        continue;
      }
      let target = abs;
      if (e.isSymbolicLink()) {
        try {
          target = await fs.promises.realpath(abs);
        } catch (err) {
          // ELOOP, a dangling link, a component that cannot be searched.
          problems.push({ treePath, code: 'UNREADABLE', message: errMessage(err) });
          continue;
        }
        if (!inside(target, root)) {
          problems.push({
            treePath,
            code: 'SYMLINK_OUTSIDE_ROOT',
            message: 'a symbolic link to a place outside the import root',
          });
          continue;
        }
      }
      let st: fs.BigIntStats;
      try {
        st = await fs.promises.lstat(target, { bigint: true });
      } catch (err) {
        problems.push({ treePath, code: 'UNREADABLE', message: errMessage(err) });
        continue;
      }
      if (st.isDirectory()) await visit(target, treePath);
      else if (st.isFile()) {
        files.push({
          abs: target,
          treePath,
          size: st.size,
          mtimeNs: st.mtimeNs,
          ctimeNs: st.ctimeNs,
          ino: st.ino,
          dev: st.dev,
        });
      } else problems.push({ treePath, code: 'NOT_A_FILE', message: `${kindOf(st)}: only regular files are imported` });
    }
  };
  await visit(root, name);
}
