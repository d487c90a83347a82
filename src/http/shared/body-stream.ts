import type { Readable } from 'node:stream';

/**
 * A request body's chunks on their way from the socket to the ingest (a resumable upload's PATCH): an async iterable
 * that pauses its producer when `high` bytes wait and resumes it below half of that, and can be ended early without
 * failing and without destroying the request (tus still answers on it). The chunks are the socket's, not copies.
 */
export class ChunkQueue implements AsyncIterableIterator<Buffer> {
  private chunks: Buffer[] = [];
  private head = 0;
  private bytes = 0;
  private paused = false;
  private ended = false;
  private error: Error | undefined;
  private waiter: { resolve: (r: IteratorResult<Buffer>) => void; reject: (e: Error) => void } | undefined;

  constructor(
    private readonly high: number,
    private readonly pause: () => void,
    private readonly resume: () => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.ended || this.error) return;
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w.resolve({ value: chunk, done: false });
      return;
    }
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    if (!this.paused && this.bytes >= this.high) {
      this.paused = true;
      this.pause();
    }
  }

  end(): void {
    this.ended = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.resolve({ value: undefined, done: true });
  }

  destroy(err: Error): void {
    this.error ??= err;
    this.chunks = [];
    const w = this.waiter;
    this.waiter = undefined;
    w?.reject(err);
  }

  next(): Promise<IteratorResult<Buffer>> {
    if (this.error) return Promise.reject(this.error);
    if (this.head < this.chunks.length) {
      const value = this.chunks[this.head]!;
      this.chunks[this.head++] = EMPTY;
      if (this.head === this.chunks.length) {
        this.chunks = [];
        this.head = 0;
      }
      this.bytes -= value.length;
      if (this.paused && this.bytes <= this.high / 2) {
        this.paused = false;
        this.resume();
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  /** The consumer stopped early (it failed): drop what is queued; the upload's failure path takes over. */
  return(): Promise<IteratorResult<Buffer>> {
    this.ended = true;
    this.chunks = [];
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * File bytes of an upload's file part (multipart, GraphQL) parsed and not yet taken by the ingest before its stream is
 * paused: 2 MiB raised the 1 GiB upload's peak RSS by about 20 MB in large-upload.test, for no speed.
 */
export const FILE_PART_BUFFER = 512 * 1024;

/**
 * A readable stream's chunks as it emits them ('data' events), the stream paused while `high` bytes wait: iterating
 * the stream itself has `read()` concatenate whatever is buffered into a new buffer each time (a copy of most of an
 * upload, 102 ms per GiB in `node bench/profiles/profile-upload.cjs`, and its garbage). A stream error ends the
 * iteration with that error.
 */
export function chunksOf(stream: Readable, high: number): ChunkQueue {
  const queue = new ChunkQueue(
    high,
    () => stream.pause(),
    () => stream.resume(),
  );
  stream.on('data', (c: Buffer) => queue.push(c));
  stream.on('end', () => queue.end());
  stream.on('error', (err) => queue.destroy(err));
  return queue;
}
