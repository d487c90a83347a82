import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { FromHashWorker, HashAlgorithm, ToHashWorker } from './file-hash.worker';

export type { HashAlgorithm } from './file-hash.worker';

/** A file being hashed as it is written: `grow` as bytes land, `finish` after the last. */
export interface FollowedFile {
  /** The first `length` bytes of the file are written. */
  grow(length: number): void;
  /** The hash (`blake3:<hex>` / `sha256:<hex>`) of the first `length` bytes, once hashed. */
  finish(): Promise<string>;
  /** Stops hashing it (the file may go). */
  drop(): void;
}

/** The worker's built file, beside this module (under jest, which runs the sources, the build in dist/). */
function workerFile(): string {
  if (!__filename.endsWith('.ts')) return path.join(__dirname, 'file-hash.worker.js');
  const built = path.resolve(__dirname, '../../../dist/src/cli/assets/file-hash.worker.js');
  if (!fs.existsSync(built))
    throw new Error(`the hashing worker is not built (${built} is missing): run \`npm run build\` first`);
  return built;
}

interface Pending {
  /** The thread hashing it. */
  thread: Thread;
  onHashed?: (n: number) => void;
  resolve(hash: string): void;
  reject(err: Error): void;
  result?: Promise<string>;
}

/** One hashing thread and how many files it is hashing. */
interface Thread {
  worker: Worker;
  busy: number;
}

/**
 * Hashes files on worker threads by reading them (pull: the part file as it is written, so what is checked is what
 * is on disk; push: each file before it is sent), which keeps the main thread for the transfers. A file is hashed on
 * one thread (BLAKE3 of one file is sequential here: the native addon has no multi-threaded update), several files at
 * once on up to one thread per core (`threads`): a push of stored files is nothing but hashing, which a single thread
 * would do one core at a time. Threads start with the files that need them and do not keep the process alive.
 */
export class FileHasher {
  private readonly threads: Thread[] = [];
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(private readonly maxThreads = Math.max(1, os.availableParallelism())) {}

  /** A thread keeps the process alive while it hashes a file, and only then. */
  private track(id: number, p: Pending): void {
    this.pending.set(id, p);
    p.thread.busy++;
    p.thread.worker.ref();
  }

  private untrack(id: number): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if (--p.thread.busy === 0) p.thread.worker.unref();
  }

  /** An idle thread, a new one while there are fewer than maxThreads, else the one with the fewest files. */
  private pick(): Thread {
    const idle = this.threads.find((t) => t.busy === 0);
    if (idle) return idle;
    if (this.threads.length < this.maxThreads) return this.start();
    return this.threads.reduce((a, b) => (b.busy < a.busy ? b : a));
  }

  private start(): Thread {
    const worker = new Worker(workerFile());
    worker.unref();
    const t: Thread = { worker, busy: 0 };
    worker.on('message', (m: FromHashWorker) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      if (m.t === 'progress') return p.onHashed?.(m.hashed);
      this.untrack(m.id);
      if (m.t === 'done') p.resolve(m.hash);
      else p.reject(Object.assign(new Error(m.message), { code: m.code }));
    });
    worker.on('error', (err) => {
      for (const [id, p] of this.pending) {
        if (p.thread !== t) continue;
        p.reject(err);
        this.pending.delete(id);
      }
      t.busy = 0;
      this.threads.splice(this.threads.indexOf(t), 1);
    });
    this.threads.push(t);
    return t;
  }

  /** Starts following `file`; `onHashed` sees the bytes hashed so far. */
  follow(file: string, algorithm: HashAlgorithm, onHashed?: (n: number) => void): FollowedFile {
    const t = this.pick();
    const id = this.nextId++;
    const send = (m: ToHashWorker): void => t.worker.postMessage(m);
    const p: Pending = { thread: t, onHashed, resolve: () => undefined, reject: () => undefined };
    p.result = new Promise<string>((resolve, reject) => {
      p.resolve = resolve;
      p.reject = reject;
    });
    p.result.catch(() => undefined); // observed by finish(); a dropped file's failure is nobody's
    this.track(id, p);
    send({ t: 'open', id, file, algorithm });
    return {
      grow: (length) => send({ t: 'grow', id, length }),
      finish: () => {
        send({ t: 'end', id });
        return p.result!;
      },
      drop: () => {
        this.untrack(id);
        send({ t: 'drop', id });
      },
    };
  }

  /**
   * The hash of the first `size` bytes of `file` (default: its whole length now). `until`: once it rejects, the file
   * is dropped and its hash rejects with that error.
   */
  hashFile(
    file: string,
    algorithm: HashAlgorithm,
    opts: { size?: number; onHashed?: (n: number) => void; until?: Promise<never> } = {},
  ): Promise<string> {
    const f = this.follow(file, algorithm, opts.onHashed);
    f.grow(opts.size ?? fs.statSync(file).size);
    if (!opts.until) return f.finish();
    const stop = (err: unknown): Promise<never> => {
      f.drop();
      return Promise.reject(err);
    };
    return Promise.race([f.finish(), opts.until.catch(stop)]);
  }

  async close(): Promise<void> {
    const threads = this.threads.splice(0);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }
}
