import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { blake3, type Blake3Incremental } from '../blake3';
import type { FromWorker, IngestWorkerData, ToWorker } from './ingest.worker';

/**
 * Hashing (BLAKE3 + SHA-256) and writing of uploaded bytes on worker threads.
 *
 * Measured on the upload path (BENCHMARKS.md, figure 1): on the request thread the two hashes cost about a
 * core-second per GiB, and the received chunks (a new 64 KiB ArrayBuffer each, from Node's HTTP parser) made V8 run
 * a full mark-compact every ~40 MB, since they count as external memory while the young generation barely fills:
 * another half second per GiB. Here the request thread parses and runs BLAKE3, and hands each chunk's ArrayBuffer
 * to a worker (transferred, not copied, so it leaves the request thread's heap at once); the worker runs SHA-256 and
 * queues the chunk for `writev` on the thread pool (one write in flight, in order, while it hashes the next),
 * overlaps writeback with a background `fdatasync` every 64 MiB, and `fsync`s the file at the end. Durability is the
 * same as FsBlobStore.writeTemp's: the caller renames the file only after `finish` resolved.
 *
 * Downloads use jobs without a file (hashing only, both hashes on the worker, the state kept across resumed
 * attempts): their chunks are views of undici's buffers, so they are copied, then moved.
 */

/** Bytes a job may have posted and not yet had acknowledged before `write` asks its caller to wait. */
const IN_FLIGHT = 4 << 20;
/** Chunks are posted in batches of about this many bytes. */
const BATCH = 1 << 20;
/** A chunk is transferred when it holds nearly all of its ArrayBuffer; otherwise it is copied. */
const TRANSFER_MIN = 16 << 10;

/**
 * The worker's built file. At run time this module is dist/src/infra/blob-store/ingest-pool.js and the worker is
 * beside it. Under jest this module runs from its TypeScript source, which a worker thread cannot load: the pool then
 * takes the project's build in dist/ (`npm test` builds first), so a test sees the worker as last built.
 */
function workerFile(): string {
  if (!__filename.endsWith('.ts')) return path.join(__dirname, 'ingest.worker.js');
  const built = path.resolve(__dirname, '../../../dist/src/infra/blob-store/ingest.worker.js');
  if (!fs.existsSync(built)) throw new Error(`the ingest worker is not built (${built} is missing): run \`npm run build\` first (npm test does)`);
  return built;
}

export interface HashedFile {
  blake3: string;
  sha256: string;
  size: number;
}

/**
 * A small pool of hashing/writing threads (ingest.worker.ts), started on first use; idle threads do not keep the
 * process alive. Built once by the composition root and never closed: an idle thread dies with the process.
 */
export class IngestWorkers {
  private readonly workers: Array<{ worker: Worker; jobs: Map<number, IngestJob> } | undefined>;
  private next = 0;
  private nextId = 1;
  private file: string | undefined;

  constructor(size = Math.max(1, Math.min(4, os.availableParallelism()))) {
    this.workers = new Array(size).fill(undefined);
  }

  /**
   * Starts writing `file` (created exclusively), or, without a file, only hashing. `ownsChunks`: the chunks given to
   * `write` are not used by anyone afterwards, so their ArrayBuffers may be transferred (detached here) instead of
   * copied.
   */
  open(file: string | undefined, opts: { ownsChunks: boolean; blake3OnWorker?: boolean }): IngestJob {
    const slot = this.next++ % this.workers.length;
    const w = (this.workers[slot] ??= this.start(slot));
    const job = new IngestJob(this.nextId++, file, w.worker, opts.ownsChunks, !!opts.blake3OnWorker, () => {
      w.jobs.delete(job.id);
      if (w.jobs.size === 0) w.worker.unref();
    });
    w.jobs.set(job.id, job);
    // A thread with work keeps the process alive (a pending answer is awaited); an idle one does not.
    if (w.jobs.size === 1) w.worker.ref();
    send(w.worker, { t: 'open', id: job.id, file, blake3: !!opts.blake3OnWorker });
    return job;
  }

  private start(slot: number): { worker: Worker; jobs: Map<number, IngestJob> } {
    const data: IngestWorkerData = { blake3: blake3().impl };
    const worker = new Worker((this.file ??= workerFile()), {
      workerData: data,
      // The worker holds a few MiB of chunks at most; keep its heap small.
      resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
      stdout: false,
      stderr: false,
    });
    const entry = { worker, jobs: new Map<number, IngestJob>() };
    worker.on('message', (m: FromWorker) => entry.jobs.get(m.id)?.onMessage(m));
    const dead = (err: Error) => {
      if (this.workers[slot] === entry) this.workers[slot] = undefined;
      for (const job of entry.jobs.values()) job.workerStopped(err);
      entry.jobs.clear();
    };
    worker.on('error', dead);
    worker.on('exit', (code) => dead(new Error(`exit code ${code}`)));
    // Idle until its first job (after the listeners: adding a 'message' listener references the port again).
    worker.unref();
    return entry;
  }
}

const send = (worker: Worker, m: ToWorker, transfer?: ArrayBuffer[]) => worker.postMessage(m, transfer);

/**
 * One file being written and hashed by a worker, or (without a file) only hashed. Use: `write` each chunk (await
 * it when it returns a promise), then `finish`; or `abort`.
 */
export class IngestJob {
  private batch: Uint8Array[] = [];
  private transfer: ArrayBuffer[] = [];
  private batchBytes = 0;
  private inFlight = 0;
  private error: Error | undefined;
  private drained: (() => void) | undefined;
  private settled: ((m: FromWorker) => void) | undefined;
  private ended = false;
  /** BLAKE3 on this thread (the default: it balances the two threads of an upload), or on the worker. */
  private readonly b3: Blake3Incremental | undefined;
  private stopped = false;
  /** Bytes given to `write` so far. */
  size = 0;
  /** Bytes whose ArrayBuffer was transferred rather than copied (tests check that the fast path is taken). */
  transferred = 0;
  copied = 0;

  constructor(
    readonly id: number,
    private readonly file: string | undefined,
    private readonly worker: Worker,
    private readonly ownsChunks: boolean,
    blake3OnWorker: boolean,
    private readonly forget: () => void,
  ) {
    this.b3 = blake3OnWorker ? undefined : blake3().create();
  }

  /** The worker reported an error (or died): nothing more can be written or hashed. */
  get failed(): boolean {
    return this.error !== undefined;
  }

  /** Queues `chunk`; returns a promise when the caller should wait before writing more. */
  write(chunk: Buffer): Promise<void> | undefined {
    if (this.error) throw this.error;
    if (chunk.length === 0) return undefined;
    this.b3?.update(chunk);
    this.size += chunk.length;
    const ab = chunk.buffer;
    if (this.ownsChunks && ab instanceof ArrayBuffer && chunk.length >= TRANSFER_MIN && ab.byteLength - chunk.length <= TRANSFER_MIN) {
      this.batch.push(chunk);
      if (!this.transfer.includes(ab)) this.transfer.push(ab);
      this.transferred += chunk.length;
    } else {
      const copy = new Uint8Array(chunk); // its own ArrayBuffer (never Node's shared pool), so it can be transferred
      this.batch.push(copy);
      this.transfer.push(copy.buffer);
      this.copied += chunk.length;
    }
    this.batchBytes += chunk.length;
    if (this.batchBytes >= BATCH) this.post();
    if (this.inFlight < IN_FLIGHT) return undefined;
    return new Promise<void>((resolve) => (this.drained = resolve)).then(() => {
      if (this.error) throw this.error;
    });
  }

  /**
   * Writes what is queued, fsyncs and closes the file; resolves with its hashes and size. On failure the file is
   * already removed.
   */
  async finish(): Promise<HashedFile> {
    if (!this.error) this.post();
    const m = await this.end('end');
    if (m.t !== 'done') throw this.error ?? new Error('the ingest worker did not finish the file');
    return { blake3: this.b3 ? this.b3.hex() : m.blake3!, sha256: m.sha256, size: m.size };
  }

  /** Stops, closes and removes the file. */
  async abort(): Promise<void> {
    this.batch = [];
    this.transfer = [];
    if (!this.ended) await this.end('abort');
  }

  onMessage(m: FromWorker): void {
    if (m.t === 'ack') {
      this.inFlight -= m.bytes;
      if (this.inFlight < IN_FLIGHT / 2) this.wake();
      return;
    }
    if (m.t === 'error') {
      this.error ??= Object.assign(new Error(m.message), m.code ? { code: m.code } : {});
      this.wake();
      return;
    }
    this.settle(m);
  }

  /** The worker died (it sends nothing more): fail this job, and remove its file here. */
  workerStopped(err: Error): void {
    this.stopped = true;
    this.error ??= new Error(`the ingest worker stopped: ${err.message}`);
    this.wake();
    this.settle({ t: 'closed', id: this.id });
  }

  private post(): void {
    if (this.batch.length === 0) return;
    send(this.worker, { t: 'data', id: this.id, chunks: this.batch, bytes: this.batchBytes }, this.transfer);
    this.inFlight += this.batchBytes;
    this.batch = [];
    this.transfer = [];
    this.batchBytes = 0;
  }

  private async end(t: 'end' | 'abort'): Promise<FromWorker> {
    this.ended = true;
    const m = this.stopped
      ? ({ t: 'closed', id: this.id } as FromWorker)
      : await new Promise<FromWorker>((resolve) => {
          this.settled = resolve;
          send(this.worker, { t, id: this.id, file: this.file });
        });
    if (this.stopped && this.file) await fsp.rm(this.file, { force: true });
    return m;
  }

  private settle(m: FromWorker): void {
    const s = this.settled;
    this.settled = undefined;
    if (s) {
      this.forget();
      s(m);
    }
  }

  private wake(): void {
    const d = this.drained;
    this.drained = undefined;
    d?.();
  }
}
