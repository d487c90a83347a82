'use strict';
// The alternative the hashing benchmark measures against the service's one-pass hasher: BLAKE3 + SHA-256 computed
// on a worker thread. The request thread copies each chunk into a ring of 1 MiB blocks in a SharedArrayBuffer (one
// memcpy, no per-message cloning) and posts the block index; the worker hashes blocks in order and frees them.
const { Worker } = require('node:worker_threads');

const BLOCK = 1 << 20;
const SLOTS = 8;

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const crypto = require('node:crypto');
const { Blake3Hasher } = require(workerData.blake3Path);
const jobs = new Map();
parentPort.on('message', (m) => {
  if (m.t === 'start') {
    jobs.set(m.job, { sab: m.sab, b3: new Blake3Hasher(), sha: crypto.createHash('sha256') });
  } else if (m.t === 'data') {
    const j = jobs.get(m.job);
    const view = Buffer.from(j.sab, m.slot * ${BLOCK}, m.len);
    j.b3.update(view);
    j.sha.update(view);
    parentPort.postMessage({ t: 'free', job: m.job, slot: m.slot });
  } else if (m.t === 'end') {
    const j = jobs.get(m.job);
    jobs.delete(m.job);
    parentPort.postMessage({ t: 'digest', job: m.job, blake3: j.b3.digest('hex'), sha256: j.sha.digest('hex') });
  }
});
`;

let worker;
let nextJob = 1;
const listeners = new Map();

function getWorker() {
  if (worker) return worker;
  worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { blake3Path: require.resolve('@napi-rs/blake-hash') } });
  worker.unref();
  worker.on('message', (m) => listeners.get(m.job)?.(m));
  return worker;
}

/** Same results as DualHasher; `update` returns a promise only when every block is in use (backpressure). */
class WorkerHasher {
  constructor() {
    this.w = getWorker();
    this.job = nextJob++;
    this.sab = new SharedArrayBuffer(BLOCK * SLOTS);
    this.free = Array.from({ length: SLOTS }, (_, i) => i);
    this.slot = this.free.shift();
    this.fill = 0;
    this.size = 0;
    this.waiter = undefined;
    this.done = undefined;
    listeners.set(this.job, (m) => {
      if (m.t === 'free') {
        this.free.push(m.slot);
        const w = this.waiter;
        this.waiter = undefined;
        w?.();
      } else if (m.t === 'digest') {
        listeners.delete(this.job);
        this.done?.(m);
      }
    });
    this.w.postMessage({ t: 'start', job: this.job, sab: this.sab });
  }

  update(chunk) {
    this.size += chunk.length;
    let off = 0;
    while (off < chunk.length) {
      if (this.slot === undefined) this.slot = this.free.shift();
      if (this.slot === undefined) return this.waitThen(chunk, off);
      const n = Math.min(BLOCK - this.fill, chunk.length - off);
      new Uint8Array(this.sab, this.slot * BLOCK + this.fill, n).set(chunk.subarray(off, off + n));
      this.fill += n;
      off += n;
      if (this.fill === BLOCK) this.post();
    }
    return undefined;
  }

  async waitThen(chunk, off) {
    while (off < chunk.length) {
      if (this.slot === undefined) {
        await this.nextFree();
        continue;
      }
      const n = Math.min(BLOCK - this.fill, chunk.length - off);
      new Uint8Array(this.sab, this.slot * BLOCK + this.fill, n).set(chunk.subarray(off, off + n));
      this.fill += n;
      off += n;
      if (this.fill === BLOCK) this.post();
    }
  }

  /** Takes a free block, waiting for the worker to release one when all are in use. */
  async nextFree() {
    if (this.free.length === 0) await new Promise((r) => (this.waiter = r));
    this.slot = this.free.shift();
  }

  post() {
    this.w.postMessage({ t: 'data', job: this.job, slot: this.slot, len: this.fill });
    this.fill = 0;
    this.slot = this.free.shift();
  }

  async digest() {
    while (this.slot === undefined) await this.nextFree();
    if (this.fill > 0) this.post();
    const m = await new Promise((r) => {
      this.done = r;
      this.w.postMessage({ t: 'end', job: this.job });
    });
    return { blake3: m.blake3, sha256: m.sha256, size: this.size };
  }
}

module.exports = { WorkerHasher };
