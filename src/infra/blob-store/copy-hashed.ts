import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { blobPath } from './blob-path';
import { syncDir } from './block-writer';

/**
 * A whole local file copied into a new file and hashed (BLAKE3 + SHA-256) in one pass, all on the ingest worker
 * thread (ingest.worker.ts): the import's many small files cost its caller one message each way instead of a read,
 * a buffer and a message per chunk (`npm run bench -- import`). Imports only modules the worker loads anyway.
 */

/** What a local file was (its fstat), as much of it as tells whether the file changed. */
export interface FileState {
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  dev: bigint;
}

export interface CopyRequest {
  t: 'copy';
  id: number;
  src: string;
  /** Where the copy goes; undefined: the file is only read and hashed (an in-place import root's file). */
  file: string | undefined;
  /** How many leading bytes to send back (content sniffing, derived metadata). */
  headBytes: number;
  /**
   * The disk store's root: once copied, the file is also given its content address there (a hard link, the temporary
   * kept: FsBlobStore.commit with `keepTemp`), made durable before the answer.
   */
  commitUnder?: string;
  /**
   * Shared with the caller (an Int32Array's memory): once its first element is not 0 the copy stops between reads
   * and answers the code CANCELLED, so a large file can be given to the worker whole and still be stopped.
   */
  cancel?: SharedArrayBuffer;
}

export type CopyAnswer =
  | {
      t: 'copied';
      id: number;
      blake3: string;
      /** Given its content address under `commitUnder`. */
      committed: boolean;
      sha256: string;
      size: number;
      head: Uint8Array;
      before: FileState;
      after: FileState;
    }
  | { t: 'error'; id: number; message: string; code?: string };

export const fileStateOf = (s: fs.BigIntStats): FileState => ({
  size: s.size,
  mtimeNs: s.mtimeNs,
  ctimeNs: s.ctimeNs,
  ino: s.ino,
  dev: s.dev,
});

/** Why a source cannot be read at all: the caller reports it by this code. */
class SourceError extends Error {
  constructor(
    readonly code: 'UNREADABLE' | 'NOT_A_FILE' | 'CANCELLED',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Copies `src` to `file` (created exclusively, fsynced) while hashing it, or only hashes it without `file`; reads the
 * size fstat gave, so a file that grows or shrinks shows in `after`. Never follows a link and never blocks on a FIFO.
 * On failure `file` is removed.
 */
export async function copyHashed(
  m: CopyRequest,
  b3impl: { create(): { update(b: Uint8Array): void; hex(): string } },
): Promise<CopyAnswer> {
  let src: fsp.FileHandle | undefined;
  let out: fsp.FileHandle | undefined;
  let created = false;
  try {
    src = await fsp
      .open(m.src, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK)
      .catch((err: NodeJS.ErrnoException) => {
        throw new SourceError('UNREADABLE', `cannot be opened (${err.code ?? err.message})`);
      });
    const st = await src.stat({ bigint: true });
    if (!st.isFile()) throw new SourceError('NOT_A_FILE', 'no longer a regular file');
    if (m.file !== undefined) {
      out = await fsp.open(m.file, 'wx', 0o644);
      created = true;
    }
    const sha = crypto.createHash('sha256');
    const b3 = b3impl.create();
    let left = Number(st.size);
    const buf = Buffer.allocUnsafeSlow(Math.max(1, Math.min(left, 1 << 20)));
    const head = Buffer.allocUnsafeSlow(Math.min(left, m.headBytes));
    let size = 0;
    const cancel = m.cancel ? new Int32Array(m.cancel) : undefined;
    while (left > 0) {
      if (cancel && Atomics.load(cancel, 0) !== 0) throw new SourceError('CANCELLED', 'the read was cancelled');
      const { bytesRead } = await src.read(buf, 0, Math.min(left, buf.length), null).catch((err: Error) => {
        throw new SourceError('UNREADABLE', `cannot be read (${(err as NodeJS.ErrnoException).code ?? err.message})`);
      });
      if (bytesRead === 0) break;
      const chunk = buf.subarray(0, bytesRead);
      sha.update(chunk);
      b3.update(chunk);
      if (size < head.length) chunk.copy(head, size, 0, Math.min(bytesRead, head.length - size));
      if (out) for (let off = 0; off < bytesRead;) off += (await out.write(chunk, off, bytesRead - off)).bytesWritten;
      size += bytesRead;
      left -= bytesRead;
    }
    if (out) {
      await out.sync();
      await out.close();
      out = undefined;
    }
    const after = fileStateOf(await src.stat({ bigint: true }));
    const blake3 = b3.hex();
    const committed =
      m.file !== undefined &&
      m.commitUnder !== undefined &&
      (await linkDurably(m.file, path.join(m.commitUnder, blobPath(blake3))));
    return {
      t: 'copied',
      id: m.id,
      blake3,
      committed,
      sha256: sha.digest('hex'),
      size,
      head: head.subarray(0, Math.min(size, head.length)),
      before: fileStateOf(st),
      after,
    };
  } catch (err) {
    if (out) {
      await out.close().catch(() => undefined);
    }
    if (created && m.file !== undefined) await fsp.rm(m.file, { force: true }).catch(() => undefined);
    const code = err instanceof SourceError ? err.code : (err as NodeJS.ErrnoException).code;
    return { t: 'error', id: m.id, message: (err as Error).message, ...(code ? { code } : {}) };
  } finally {
    await src?.close().catch(() => undefined);
  }
}

/**
 * `dest` as a second name of `file` (an existing `dest` holds the same bytes: content-addressed), its folder synced.
 * False when a link cannot be made here (a file system without hard links, say): the caller commits the usual way.
 */
async function linkDurably(file: string, dest: string): Promise<boolean> {
  const link = () =>
    fsp.link(file, dest).then(
      () => 'linked',
      (e: NodeJS.ErrnoException) => (e.code === 'EEXIST' ? 'exists' : e.code === 'ENOENT' ? 'no-dir' : 'failed'),
    );
  let how = await link();
  if (how === 'no-dir') {
    await fsp.mkdir(path.dirname(dest), { recursive: true });
    how = await link();
  }
  if (how === 'exists') return true;
  if (how !== 'linked') return false;
  await syncDir(path.dirname(dest));
  return true;
}
