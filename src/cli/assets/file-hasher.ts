import fs from 'node:fs';
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
  if (!fs.existsSync(built)) throw new Error(`the hashing worker is not built (${built} is missing): run \`npm run build\` first`);
  return built;
}

interface Pending {
  onHashed?: (n: number) => void;
  resolve(hash: string): void;
  reject(err: Error): void;
  result?: Promise<string>;
}

/**
 * Hashes files on one worker thread by reading them (pull: the part file as it is written, so what is checked is what
 * is on disk; push: each file before or while it is sent), which keeps the main thread for the transfers. The thread
 * starts with the first file and does not keep the process alive.
 */
export class FileHasher {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  /** The thread keeps the process alive while a file is being hashed, and only then. */
  private track(id: number, p: Pending): void {
    this.pending.set(id, p);
    this.worker?.ref();
  }

  private untrack(id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker?.unref();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(workerFile());
    w.unref();
    w.on('message', (m: FromHashWorker) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      if (m.t === 'progress') return p.onHashed?.(m.hashed);
      this.untrack(m.id);
      if (m.t === 'done') p.resolve(m.hash);
      else p.reject(Object.assign(new Error(m.message), { code: m.code }));
    });
    w.on('error', (err) => {
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.worker = undefined;
    });
    return (this.worker = w);
  }

  /** Starts following `file`; `onHashed` sees the bytes hashed so far. */
  follow(file: string, algorithm: HashAlgorithm, onHashed?: (n: number) => void): FollowedFile {
    const w = this.start();
    const id = this.nextId++;
    const send = (m: ToHashWorker): void => w.postMessage(m);
    const p: Pending = { onHashed, resolve: () => undefined, reject: () => undefined };
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

  /** The hash of the first `size` bytes of `file` (default: its whole length now). */
  hashFile(file: string, algorithm: HashAlgorithm, opts: { size?: number; onHashed?: (n: number) => void } = {}): Promise<string> {
    const f = this.follow(file, algorithm, opts.onHashed);
    f.grow(opts.size ?? fs.statSync(file).size);
    return f.finish();
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate();
  }
}
