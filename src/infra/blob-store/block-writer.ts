import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { promisify } from 'node:util';

/**
 * The pieces of block writing shared by FsBlobStore (request thread) and the ingest worker thread: kept free of other
 * imports so the worker loads nothing more than it needs.
 */

/** Writes are coalesced into blocks of this size. */
export const WRITE_BLOCK = 1 << 20;

/**
 * While a file is written, a `fdatasync` is started in the background after every this many bytes (one at a time),
 * so the kernel writes the file back while the rest still arrives. Without it the dirty pages of a large upload sit
 * in the page cache (below the writeback thresholds) until the final fsync, which then writes the whole file while
 * the client waits. The final fsync stays: durability is unchanged, only the waiting overlaps with receiving.
 */
export const SYNC_EVERY = 64 << 20;

/** Where blocks go: an `fs.promises.FileHandle`, or a plain descriptor through `fdSink`. */
export interface BlockSink {
  write(buf: Uint8Array, offset: number, length: number): Promise<{ bytesWritten: number }>;
  writev(bufs: Uint8Array[]): Promise<{ bytesWritten: number }>;
  datasync(): Promise<void>;
}

const writeFd = promisify(fs.write);
const writevFd = promisify(fs.writev);
const fdatasync = promisify(fs.fdatasync);

/** A descriptor as a sink (the worker opens its file synchronously, to report a failure before any data comes). */
export const fdSink = (fd: number): BlockSink => ({
  write: (buf, offset, length) => writeFd(fd, buf, offset, length),
  writev: (bufs) => writevFd(fd, bufs),
  datasync: () => fdatasync(fd),
});

/** Writes `bufs` (`len` bytes in all) with one `writev`, finishing a short write buffer by buffer. */
export async function writeFully(sink: BlockSink, bufs: Uint8Array[], len: number): Promise<void> {
  let { bytesWritten } = bufs.length === 1 ? await sink.write(bufs[0]!, 0, bufs[0]!.length) : await sink.writev(bufs);
  if (bytesWritten === len) return;
  // A short write (rare on regular files): finish the rest one buffer at a time.
  for (const buf of bufs) {
    if (bytesWritten >= buf.length) {
      bytesWritten -= buf.length;
      continue;
    }
    let off = bytesWritten;
    bytesWritten = 0;
    while (off < buf.length) off += (await sink.write(buf, off, buf.length - off)).bytesWritten;
  }
}

/**
 * Starts a background `fdatasync` every `every` bytes written (SYNC_EVERY by default), one at a time. A failed one is
 * kept (`failure`) and must fail the file: Linux reports a writeback error to one fsync of the descriptor only, so the
 * final fsync after it would succeed on lost bytes.
 */
export class BackgroundSync {
  private sinceSync = 0;
  private syncing: Promise<void> | undefined;
  /** The first error of a background sync; the writer checks it after its final fsync. */
  failure: Error | undefined;

  constructor(
    private readonly sink: BlockSink,
    private readonly every = SYNC_EVERY,
  ) {}

  wrote(bytes: number): void {
    this.sinceSync += bytes;
    if (this.sinceSync < this.every || this.syncing) return;
    this.sinceSync = 0;
    this.syncing = this.sink.datasync().then(
      () => (this.syncing = undefined),
      (err: Error) => {
        this.failure ??= err;
        this.syncing = undefined;
      },
    );
  }

  /** Resolves once no background sync runs (before the final fsync or closing); never rejects (see `failure`). */
  async settled(): Promise<void> {
    await this.syncing;
  }
}

/** Makes a folder's entries durable (a file created, linked or removed in it). */
export async function syncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
