import fs from 'node:fs';
import { fileStateOf, type LocalFileState } from '../../infra/blob-store/blob-store';
import type { FoundFile } from './import-walk';

/** What a file was when it was opened (its fstat), the baseline a read is checked against. */
export type OpenedStat = LocalFileState;

export class ImportReadError extends Error {
  constructor(
    readonly code: 'FILE_CHANGED' | 'UNREADABLE' | 'NOT_A_FILE',
    message: string,
  ) {
    super(message);
  }
}

const same = (a: OpenedStat, b: OpenedStat): boolean =>
  a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.ino === b.ino && a.dev === b.dev;

const replaced = () => new ImportReadError('FILE_CHANGED', 'the file was replaced while the import ran');
const changed = () =>
  new ImportReadError('FILE_CHANGED', 'the file changed while it was read; it is imported once it is left alone');

/**
 * The judgement `openFound`'s `check` makes, for a file copied in one piece elsewhere (ContentService.ingestLocalFile):
 * the file the walk saw, the same before and after, and as many bytes as its size.
 */
export function checkCopied(f: FoundFile, before: OpenedStat, after: OpenedStat, bytes: number): void {
  if (before.ino !== f.ino || before.dev !== f.dev) throw replaced();
  if (!same(before, after) || BigInt(bytes) !== before.size) throw changed();
}

/** A failure to read a file at all (UNREADABLE, NOT_A_FILE from ingestLocalFile) as the import reports it. */
export function readFailure(err: unknown): unknown {
  const code = (err as { code?: unknown }).code;
  // A worker's read stopped by the seed's cancel: as a streamed read stops (`openFound`).
  if (code === 'CANCELLED') return new ImportReadError('UNREADABLE', 'the import was stopped');
  return code === 'UNREADABLE' || code === 'NOT_A_FILE' ? new ImportReadError(code, (err as Error).message) : err;
}

/**
 * Opens a found file for one read: never following a link (the walk resolved them inside the root) and never
 * blocking (a FIFO put in its place answers at once), refusing anything that is no longer the regular file the
 * walk saw. `read` yields its bytes once; `check` then tells whether the file stayed as it was while it was read
 * (same size, mtime, ctime, inode, and as many bytes as its size), else FILE_CHANGED: its hash may not be of any
 * state the file was in, so nothing of it is kept.
 */
export async function openFound(f: FoundFile): Promise<{
  stat: OpenedStat;
  read: (stop: () => boolean) => AsyncIterable<Buffer>;
  check: (bytes: number) => Promise<void>;
  close: () => Promise<void>;
}> {
  let fh: fs.promises.FileHandle;
  try {
    fh = await fs.promises.open(f.abs, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    throw new ImportReadError(
      'UNREADABLE',
      `cannot be opened (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  try {
    const st = await fh.stat({ bigint: true });
    if (!st.isFile()) throw new ImportReadError('NOT_A_FILE', 'no longer a regular file');
    if (st.ino !== f.ino || st.dev !== f.dev) throw replaced();
    const stat = fileStateOf(st);
    const read = async function* (stop: () => boolean): AsyncIterable<Buffer> {
      // Reads the size fstat gave, in chunks of at most 1 MiB, each a buffer of exactly its length (a small file
      // is one allocation, moved whole to the ingest's worker); a file that grew or shrank meanwhile fails `check`.
      let left = Number(st.size);
      while (left > 0) {
        if (stop()) throw new ImportReadError('UNREADABLE', 'the import was stopped');
        const size = Math.min(left, 1024 * 1024);
        const buf = Buffer.allocUnsafeSlow(size);
        const { bytesRead } = await fh.read(buf, 0, size, null);
        if (bytesRead === 0) return;
        left -= bytesRead;
        yield bytesRead === size ? buf : buf.subarray(0, bytesRead);
      }
    };
    const check = async (bytes: number): Promise<void> => {
      const after = fileStateOf(await fh.stat({ bigint: true }));
      if (!same(stat, after) || BigInt(bytes) !== stat.size) throw changed();
    };
    return { stat, read, check, close: () => fh.close() };
  } catch (err) {
    await fh.close();
    throw err;
  }
}
