import type fsp from 'node:fs/promises';
import { Readable } from 'node:stream';

/** Bytes per read of a blob (stream reads and `sendTo` alike). */
export const READ_SIZE = 256 * 1024;

/**
 * A few read buffers of `READ_SIZE` bytes, reused across requests. A buffer taken for a read is given back only once
 * the socket has taken its bytes (the write's callback), so no bytes are ever overwritten while they wait to be sent.
 * At most `keep` idle buffers are kept; a buffer whose write never completes is simply not returned.
 */
export class ReadBufferPool {
  private readonly free: Buffer[] = [];
  /** Buffers allocated so far (tests check that serving reuses them). */
  allocated = 0;

  constructor(private readonly keep = 16) {}

  take(): Buffer {
    const reused = this.free.pop();
    if (reused) return reused;
    this.allocated++;
    return Buffer.allocUnsafeSlow(READ_SIZE);
  }

  give(buf: Buffer): void {
    if (this.free.length < this.keep) this.free.push(buf);
  }
}

/** Where `sendTo` writes: a response or any writable whose write callback means "the bytes are taken". */
export interface ByteSink {
  write(chunk: Buffer, callback: (err?: Error | null) => void): boolean;
  end(): unknown;
  once(event: 'drain' | 'close', listener: () => void): unknown;
  off(event: 'drain' | 'close', listener: () => void): unknown;
  readonly destroyed: boolean;
}

/** The bytes of an open file in `range` (inclusive, as in `Range: bytes=a-b`), else all of it. */
export async function fileBody(
  fh: fsp.FileHandle,
  range: { start: number; end: number } | undefined,
  pool: ReadBufferPool,
): Promise<FileBody> {
  try {
    return new FileBody(fh, range?.start ?? 0, range ? range.end + 1 : (await fh.stat()).size, pool);
  } catch (err) {
    await fh.close().catch(() => undefined);
    throw err;
  }
}

/**
 * The bytes `[start, end)` of an open blob file. As a `Readable` it reads `READ_SIZE` bytes at a time into new
 * buffers (its consumer keeps them as long as it likes), like `fs.createReadStream`. `sendTo` is the way to send it
 * to a socket: each read goes into a buffer of the store's pool, which the write hands back once the socket has
 * taken it, with the next read in flight while the previous chunk is written. Serving a GiB then allocates a few
 * buffers instead of 4,096 short-lived ones, which V8 frees only with full mark-compacts of the whole heap (they are
 * external memory and barely fill the young generation).
 */
export class FileBody extends Readable {
  private pos: number;
  private sending = false;

  constructor(
    private readonly fh: fsp.FileHandle,
    start: number,
    private readonly end: number,
    private readonly pool: ReadBufferPool,
  ) {
    super({ highWaterMark: READ_SIZE });
    this.pos = start;
  }

  override _read(): void {
    const n = Math.min(READ_SIZE, this.end - this.pos);
    if (n <= 0) {
      this.push(null);
      return;
    }
    const buf = Buffer.allocUnsafeSlow(n);
    this.fh.read(buf, 0, n, this.pos).then(
      ({ bytesRead }) => {
        this.pos += bytesRead;
        this.push(bytesRead === 0 ? null : bytesRead === n ? buf : buf.subarray(0, bytesRead));
      },
      (err: Error) => this.destroy(err),
    );
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    // FileHandle.close waits for a read still in flight.
    this.fh.close().then(
      () => callback(err),
      (closeErr: Error) => callback(err ?? closeErr),
    );
  }

  /**
   * Writes the rest of the body to `out` and ends it; `onChunk` is told each chunk's size as it is written. Rejects
   * when `out` closes first (the client went away) or a read fails; the file is closed either way.
   */
  async sendTo(out: ByteSink, onChunk: (bytes: number) => void): Promise<void> {
    if (this.sending || this.readableDidRead) throw new Error('FileBody.sendTo: the body is already being read');
    this.sending = true;
    let next: Promise<Chunk | undefined> | undefined;
    try {
      next = this.pos < this.end ? this.readPooled() : undefined;
      while (next) {
        const chunk = await next;
        if (!chunk) break;
        next = this.pos < this.end ? this.readPooled() : undefined;
        onChunk(chunk.bytes.length);
        if (!out.write(chunk.bytes, chunk.release)) await drained(out);
      }
      out.end();
    } finally {
      // A read still in flight when the client left: its buffer goes back once it is done.
      next?.then(
        (c) => c?.release(),
        () => undefined,
      );
      this.destroy();
    }
  }

  private async readPooled(): Promise<Chunk | undefined> {
    const buf = this.pool.take();
    const n = Math.min(READ_SIZE, this.end - this.pos);
    const at = this.pos;
    this.pos += n;
    let bytesRead: number;
    try {
      ({ bytesRead } = await this.fh.read(buf, 0, n, at));
    } catch (err) {
      this.pool.give(buf);
      throw err;
    }
    if (bytesRead < n) {
      // The file is shorter than its record says: with the Content-Length already sent, the response is cut.
      this.pool.give(buf);
      throw new Error('the blob file ended early');
    }
    return { bytes: n === buf.length ? buf : buf.subarray(0, n), release: () => this.pool.give(buf) };
  }
}

interface Chunk {
  bytes: Buffer;
  release(): void;
}

function drained(out: ByteSink): Promise<void> {
  if (out.destroyed) return Promise.reject(new Error('the response was closed'));
  return new Promise((resolve, reject) => {
    const onDrain = () => {
      out.off('close', onClose);
      resolve();
    };
    const onClose = () => {
      out.off('drain', onDrain);
      reject(new Error('the response was closed'));
    };
    out.once('drain', onDrain);
    out.once('close', onClose);
  });
}
