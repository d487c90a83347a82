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

export type FromHashWorker = { t: 'progress'; id: number; hashed: number } | { t: 'done'; id: number; hash: string } | { t: 'error'; id: number; message: string; code?: string };

const READ = 4 << 20;

interface Job {
  fd: number;
  update(c: Uint8Array): void;
  value(): string;
  hashed: number;
  length: number;
  ended: boolean;
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
const buf = offPage(READ);
const post = (m: FromHashWorker): void => parentPort!.postMessage(m);

function close(id: number): void {
  const job = jobs.get(id);
  jobs.delete(id);
  if (job) fs.closeSync(job.fd);
}

/** Reads between two looks at the message queue (a `drop` or another file's bytes wait at most this long). */
const READS_PER_TURN = 16;

/** Hashes what is written of `id` (reads of up to 4 MiB, each reported), and answers the hash once it has ended. */
function pump(id: number): void {
  const job = jobs.get(id);
  if (!job) return;
  try {
    for (let reads = 0; job.hashed < job.length; reads++) {
      if (reads === READS_PER_TURN) return void setImmediate(pump, id);
      const n = fs.readSync(job.fd, buf, 0, Math.min(READ, job.length - job.hashed), job.hashed);
      if (n === 0) throw Object.assign(new Error(`the file ended at ${job.hashed} bytes, before ${job.length}`), { code: 'EFILECHANGED' });
      job.update(buf.subarray(0, n));
      job.hashed += n;
      post({ t: 'progress', id, hashed: job.hashed });
    }
    if (job.ended) {
      close(id);
      post({ t: 'done', id, hash: job.value() });
    }
  } catch (err) {
    close(id);
    post({ t: 'error', id, message: (err as Error).message, code: (err as NodeJS.ErrnoException).code });
  }
}

parentPort!.on('message', (m: ToHashWorker) => {
  switch (m.t) {
    case 'open':
      try {
        jobs.set(m.id, { fd: fs.openSync(m.file, 'r'), ...hasherOf(m.algorithm), hashed: 0, length: 0, ended: false });
      } catch (err) {
        post({ t: 'error', id: m.id, message: (err as Error).message, code: (err as NodeJS.ErrnoException).code });
      }
      return;
    case 'grow':
      if (jobs.has(m.id)) jobs.get(m.id)!.length = m.length;
      return pump(m.id);
    case 'end':
      if (jobs.has(m.id)) jobs.get(m.id)!.ended = true;
      return pump(m.id);
    case 'drop':
      return close(m.id);
  }
});
