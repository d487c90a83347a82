import crypto from 'node:crypto';
import fs from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { blake3 } from '../../infra/blake3';
import { offPage } from './off-page';

/**
 * The CLI's hashing thread (started by FileHasher, file-hasher.ts): hashes files by reading them, each up to the
 * length the main thread says is there (a download still being written is followed as it grows), so the main thread
 * only moves bytes between the socket and the disk.
 */

export type HashAlgorithm = 'blake3' | 'sha256';

export type ToHashWorker =
  | { t: 'open'; id: number; file: string; algorithm: HashAlgorithm }
  /** The first `length` bytes of the file are written: hash up to there. */
  | { t: 'grow'; id: number; length: number }
  /** No more bytes: answer the hash once `length` bytes are hashed. */
  | { t: 'end'; id: number }
  | { t: 'drop'; id: number };

export type FromHashWorker =
  | { t: 'progress'; id: number; hashed: number }
  | { t: 'done'; id: number; hash: string }
  | { t: 'error'; id: number; message: string; code?: string };

const READ = 4 << 20;

interface Job {
  fd: number;
  update(c: Uint8Array): void;
  value(): string;
  hashed: number;
  length: number;
  ended: boolean;
  /** Two read buffers while it is read (the next read lands in one while the other is hashed), then given back. */
  bufs?: [Buffer, Buffer];
  /** A run of `pump` is reading or hashing this file: a drop then leaves its descriptor to that run. */
  running: boolean;
}

function hasherOf(algorithm: HashAlgorithm): Pick<Job, 'update' | 'value'> {
  if (algorithm === 'sha256') {
    const h = crypto.createHash('sha256');
    return { update: (c) => void h.update(c), value: () => `sha256:${h.digest('hex')}` };
  }
  const h = blake3().create();
  return { update: (c) => h.update(c), value: () => `blake3:${h.hex()}` };
}

const jobs = new Map<number, Job>();
/** Buffer pairs of files no longer read, for the next ones (a tree of small files does not allocate 8 MiB each). */
const spare: [Buffer, Buffer][] = [];
const MAX_SPARE = 4;

/** Closes the file's descriptor and gives its buffers back; once its last read has returned. */
function release(job: Job): void {
  fs.closeSync(job.fd);
  if (job.bufs && spare.length < MAX_SPARE) spare.push(job.bufs);
  job.bufs = undefined;
}
const post = (m: FromHashWorker): void => parentPort!.postMessage(m);

function close(id: number): void {
  const job = jobs.get(id);
  jobs.delete(id);
  if (job && !job.running) release(job);
}

function readAt(job: Job, buf: Buffer, position: number): Promise<number> {
  return new Promise((resolve, reject) =>
    fs.read(job.fd, buf, 0, Math.min(READ, job.length - position), position, (err, n) =>
      err ? reject(err) : resolve(n),
    ),
  );
}

/**
 * Hashes what is written of `id` and answers the hash once it has ended. The reads (the kernel's copy from the page
 * cache, on libuv's thread pool) overlap the hashing on this thread: while one 4 MiB buffer is hashed the next read
 * fills the other, so a file takes about the time of its hashing alone instead of reads plus hashing
 * (`node bench/profiles/cli-hash.cjs`). Messages (`grow`, `end`, `drop`, other files) are handled between reads.
 */
async function pump(id: number): Promise<void> {
  const job = jobs.get(id);
  if (!job || job.running) return;
  job.running = true;
  /** Dropped (or finished) since: no longer this run's to read. */
  const gone = (): boolean => jobs.get(id) !== job;
  let k = 0;
  let at = job.hashed;
  const bufs = (job.bufs ??= spare.pop() ?? [offPage(READ), offPage(READ)]);
  let next = at < job.length ? readAt(job, bufs[k], at) : undefined;
  try {
    while (next) {
      const n = await next;
      next = undefined;
      if (gone()) return;
      if (n === 0)
        throw Object.assign(new Error(`the file ended at ${at} bytes, before ${job.length}`), { code: 'EFILECHANGED' });
      const filled = bufs[k];
      at += n;
      k ^= 1;
      if (at < job.length) next = readAt(job, bufs[k], at);
      job.update(filled.subarray(0, n));
      job.hashed += n;
      post({ t: 'progress', id, hashed: job.hashed });
    }
    if (job.ended) {
      close(id);
      post({ t: 'done', id, hash: job.value() });
    }
  } catch (err) {
    if (!gone()) {
      close(id);
      post({ t: 'error', id, message: (err as Error).message, code: (err as NodeJS.ErrnoException).code });
    }
  } finally {
    // The descriptor and buffers go once no read of this run is in flight.
    if (next) await next.catch(() => 0);
    job.running = false;
    if (gone()) release(job);
  }
}

parentPort!.on('message', (m: ToHashWorker) => {
  switch (m.t) {
    case 'open':
      try {
        jobs.set(m.id, {
          fd: fs.openSync(m.file, 'r'),
          ...hasherOf(m.algorithm),
          hashed: 0,
          length: 0,
          ended: false,
          running: false,
        });
      } catch (err) {
        post({ t: 'error', id: m.id, message: (err as Error).message, code: (err as NodeJS.ErrnoException).code });
      }
      return;
    case 'grow':
      if (jobs.has(m.id)) jobs.get(m.id)!.length = m.length;
      return void pump(m.id);
    case 'end':
      if (jobs.has(m.id)) jobs.get(m.id)!.ended = true;
      return void pump(m.id);
    case 'drop':
      return close(m.id);
  }
});
