import crypto from 'node:crypto';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { parentPort, workerData } from 'node:worker_threads';
import { loadBlake3, type Blake3Incremental, type Blake3Kind } from '../blake3';
import { BackgroundSync, fdSink, writeFully, WRITE_BLOCK, type BlockSink } from './block-writer';
import { copyHashed, type CopyAnswer, type CopyRequest } from './copy-hashed';
import type { FetchError, FetchOptions, FetchResponse, HttpFetcher, HttpFetcherOptions } from '../http-fetch';

/**
 * The ingest worker thread (started by IngestWorkers, ingest-pool.ts): SHA-256 (and BLAKE3 when asked) of each job's
 * chunks, and for jobs with a file, their writing in blocks, one write in flight at a time, in order, while it hashes
 * the next.
 */

/**
 * What the pool sends. The batch of `data` is in one of the pool's slots (shared memory, sent with the slot's first
 * message and kept here by id); the `ack` gives the slot back once its bytes are hashed and written. `forget`: the
 * pool dropped a slot.
 */
export type ToWorker =
  | OpenMessage
  | DataMessage
  | EndMessage
  | DropMessage
  | ForgetMessage
  | CopyRequest
  | FetchMessage
  | BodyMessage
  | CancelMessage;
interface OpenMessage {
  t: 'open';
  id: number;
  file: string | undefined;
  blake3: boolean;
  /**
   * The job continues a hash state kept here across jobs (a resumable upload's, see HashSession in ingest-pool.ts):
   * `fresh` creates it; `append` opens an existing file for appending (kept whatever happens); `final` answers the
   * digests and forgets the state.
   */
  session?: { id: number; fresh: boolean; append: boolean; final?: boolean };
}
interface DataMessage {
  t: 'data';
  id: number;
  /** The pool's slot that holds the batch: its first `bytes` are the data. */
  slot: number;
  bytes: number;
  /** The slot's memory, with the first message that names it. */
  sab?: SharedArrayBuffer;
}
interface ForgetMessage {
  t: 'forget';
  slot: number;
}
interface EndMessage {
  t: 'end' | 'abort';
  id: number;
  file: string | undefined;
}
interface DropMessage {
  t: 'drop';
  session: number;
}

/**
 * A download's request, made here so that its socket reads (a new ArrayBuffer each, external memory for V8) are
 * collected on this thread's small heap rather than by full collections of the service's (`node
 * bench/profiles/profile-download.cjs`). Answered by `response` (the status and headers, after redirects) or
 * `fetch-failed`; the body then waits for a BodyMessage.
 */
interface FetchMessage {
  t: 'fetch';
  id: number;
  url: string;
  headers: Record<string, string>;
  auth?: FetchOptions['auth'];
  fetcher: HttpFetcherOptions;
}
/**
 * What to do with a fetched body: without `store`, drop it (answered by `closed`); with it, append it to `file` while
 * the session's hashes continue (answered by `progress` now and then, and `stored`, or `error` then `closed`).
 */
interface BodyMessage {
  t: 'body';
  id: number;
  store?: {
    file: string;
    session: { id: number; fresh: boolean };
    /** The body may have at most this many bytes: a larger one is cut there (`tooLarge`). */
    limit: number;
    /** The body's first bytes to send back (for MIME sniffing). */
    headBytes: number;
  };
}
/** The download was cancelled: its request (or body) is aborted. */
interface CancelMessage {
  t: 'cancel';
  id: number;
}

/** A fetched answer, as it crosses to the pool. */
export interface FetchedHead {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  url: string;
  redirects: Array<{ url: string; status: number; headers: Record<string, string | string[] | undefined> }>;
}

/**
 * What the worker answers: `ack` once a message's bytes are written, giving its slots back to the pool; `done` or
 * `closed` ends a job.
 */
export type FromWorker =
  | { t: 'ack'; id: number; bytes: number; slots: number[] }
  | { t: 'error'; id: number; message: string; code?: string }
  | { t: 'done'; id: number; blake3?: string; sha256?: string; size: number }
  | { t: 'closed'; id: number }
  | ({ t: 'response'; id: number } & FetchedHead)
  | { t: 'fetch-failed'; id: number; kind: FetchError['kind']; message: string }
  | { t: 'progress'; id: number; bytes: number }
  | {
      t: 'stored';
      id: number;
      /** Bytes of the body written (and hashed). */
      size: number;
      head: Uint8Array;
      tooLarge: boolean;
      /** The body broke (or was cancelled) after `size` bytes: those are written all the same. */
      broken?: { message: string; code?: string };
    }
  | CopyAnswer;

export interface IngestWorkerData {
  blake3: Blake3Kind;
}

interface Hashes {
  b3: Blake3Incremental | undefined;
  sha: crypto.Hash;
}

interface Job {
  file: string | undefined;
  /** The session this job continues (its hashes are the session's), and whether it is the session's last. */
  session: number | undefined;
  final: boolean;
  /** An existing file appended to: never removed here. */
  keep: boolean;
  fd: number;
  sink: BlockSink | undefined;
  sync: BackgroundSync | undefined;
  b3: Blake3Incremental | undefined;
  sha: crypto.Hash;
  parts: Uint8Array[];
  /** The slots the parts (and any refused batch) are in, given back with the next ack. */
  slots: number[];
  len: number;
  unacked: number;
  size: number;
  chain: Promise<void>;
  error: (Error & { code?: string }) | undefined;
}

const fsync = promisify(fs.fsync);
const close = promisify(fs.close);
const port = parentPort!;
const b3impl = loadBlake3((workerData as IngestWorkerData).blake3);
/**
 * Background fdatasync interval of jobs that append to a resumable upload's part, chosen by
 * `BENCH_TUS_MIB=4096 npm run bench -- tus-upload` (shorter intervals cut the PATCH tail but cost throughput).
 */
const APPEND_SYNC_EVERY = 8 << 20;
const jobs = new Map<number, Job>();
const sessions = new Map<number, Hashes>();
/** The pool's slots this worker has been given: views of shared memory, by slot id. */
const slots = new Map<number, Uint8Array>();

const post = (m: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer);

function fail(id: number, job: Job, err: Error & { code?: string }): void {
  if (job.error) return;
  job.error = err;
  // What the session hashed may no longer be what was stored: it is over.
  if (job.session !== undefined) sessions.delete(job.session);
  post({ t: 'error', id, message: err.message, code: err.code });
}

/**
 * Queues the gathered chunks as one write; writes run one at a time on the thread pool, in order, while this thread
 * goes on hashing. Each message is acknowledged once its bytes are written, which bounds what is in flight.
 */
function flush(id: number, job: Job): void {
  const parts = job.parts;
  const held = job.slots;
  const len = job.len;
  const ack = job.unacked;
  job.parts = [];
  job.slots = [];
  job.len = 0;
  job.unacked = 0;
  job.chain = job.chain.then(async () => {
    if (!job.error && len > 0 && !job.sink) {
      job.size += len;
    } else if (!job.error && len > 0) {
      try {
        await writeFully(job.sink!, parts, len);
        job.size += len;
        // Writeback overlaps with receiving; the final fsync reports any error that matters.
        job.sync!.wrote(len);
      } catch (err) {
        fail(id, job, err as Error);
      }
    }
    // The written batches' slots go back to the pool (a failed write's too: the file is being abandoned).
    if (ack > 0 || held.length > 0) post({ t: 'ack', id, bytes: ack, slots: held });
  });
}

async function closeAndRemove(job: Job, file: string | undefined): Promise<void> {
  await job.chain;
  await job.sync?.settled();
  // A part appended to keeps what was written, durably (the next attempt continues from its size).
  if (job.fd >= 0 && job.keep) await fsync(job.fd).catch(() => undefined);
  if (job.fd >= 0) await close(job.fd).catch(() => undefined);
  job.fd = -1;
  if (file && !job.keep) fs.rmSync(file, { force: true });
}

function open(m: OpenMessage): void {
  const s = m.session;
  let hashes: Hashes | undefined;
  if (s?.fresh)
    sessions.set(s.id, (hashes = { b3: m.blake3 ? b3impl.create() : undefined, sha: crypto.createHash('sha256') }));
  else if (s) hashes = sessions.get(s.id);
  const job: Job = {
    file: m.file,
    session: s?.id,
    final: s?.final === true,
    keep: s?.append === true,
    fd: -1,
    sink: undefined,
    sync: undefined,
    b3: hashes ? hashes.b3 : m.blake3 ? b3impl.create() : undefined,
    sha: hashes ? hashes.sha : crypto.createHash('sha256'),
    parts: [],
    slots: [],
    len: 0,
    unacked: 0,
    size: 0,
    chain: Promise.resolve(),
    error: undefined,
  };
  jobs.set(m.id, job);
  if (s && !hashes) return fail(m.id, job, new Error(`hash session ${s.id} is not held by this worker`));
  // Without a file the job only hashes (a download's SHA-256, kept across its attempts).
  if (!m.file) return;
  try {
    job.fd = fs.openSync(m.file, job.keep ? 'a' : 'wx', 0o644);
    job.sink = fdSink(job.fd);
    // A resumable upload's PATCH ends with an fsync that its client waits for before it sends the next one: syncing
    // every few MiB while the bytes arrive leaves that fsync little to write (with SYNC_EVERY it wrote up to 64 MiB,
    // which halved the throughput of 64 MiB PATCHes).
    job.sync = new BackgroundSync(job.sink, job.keep ? APPEND_SYNC_EVERY : undefined);
  } catch (err) {
    fail(m.id, job, err as Error);
  }
}

/** Hashes `c` and queues it for the job's next write. */
function take(job: Job, c: Uint8Array): void {
  job.b3?.update(c);
  job.sha.update(c);
  job.parts.push(c);
  job.len += c.length;
}

function data(m: DataMessage, job: Job): void {
  job.unacked += m.bytes;
  job.slots.push(m.slot);
  if (!job.error) {
    try {
      const view = slots.get(m.slot);
      if (!view) throw new Error(`slot ${m.slot} was never given to this worker`);
      take(job, view.subarray(0, m.bytes));
    } catch (err) {
      fail(m.id, job, err as Error);
    }
  }
  if (job.len >= WRITE_BLOCK || job.error) flush(m.id, job);
}

/** Writes what is queued, then makes the file durable and closes it; false when the job failed (`error` was sent). */
async function complete(id: number, job: Job): Promise<boolean> {
  jobs.delete(id);
  flush(id, job);
  await job.chain;
  if (job.error) return false;
  try {
    if (job.file) {
      await job.sync!.settled();
      await fsync(job.fd);
      // A background sync that failed may have taken the error this fsync would have reported.
      if (job.sync!.failure) throw job.sync!.failure;
      await close(job.fd);
      job.fd = -1;
    }
    return true;
  } catch (err) {
    fail(id, job, err as Error);
    return false;
  }
}

async function end(m: EndMessage, job: Job): Promise<void> {
  if (await complete(m.id, job)) {
    try {
      if (job.session !== undefined && !job.final) {
        post({ t: 'done', id: m.id, size: job.size });
        return;
      }
      if (job.session !== undefined) sessions.delete(job.session);
      post({ t: 'done', id: m.id, blake3: job.b3?.hex(), sha256: job.sha.digest('hex'), size: job.size });
      return;
    } catch (err) {
      fail(m.id, job, err as Error);
    }
  }
  await closeAndRemove(job, m.file);
  post({ t: 'closed', id: m.id });
}

async function abort(m: EndMessage, job: Job): Promise<void> {
  jobs.delete(m.id);
  if (job.session !== undefined) sessions.delete(job.session);
  job.error ??= new Error('aborted');
  // Slots of batches not yet flushed go back unwritten.
  if (job.slots.length > 0) post({ t: 'ack', id: m.id, bytes: job.unacked, slots: job.slots });
  job.slots = [];
  job.parts = [];
  await closeAndRemove(job, m.file);
  post({ t: 'closed', id: m.id });
}

/** A download's request made here: its body waits until the pool says what to do with it. */
interface Fetch {
  controller: AbortController;
  res?: FetchResponse;
}
/** The downloads' requests, by job id. */
const fetches = new Map<number, Fetch>();
/** A `progress` answer (the download's progress and metrics) after this many bytes of a body, or this long. */
const PROGRESS_EVERY = 4 << 20;
const PROGRESS_MS = 100;
/** Writes of a body queued before reading waits for the oldest (what a body holds here in memory). */
const BODY_WRITES_QUEUED = 4;
let fetchModule: typeof import('../http-fetch') | undefined;
const fetchers = new Map<string, HttpFetcher>();

/** http-fetch.ts (and undici with it) is loaded on the first download only: an upload's worker never needs it. */
const httpFetch = () => (fetchModule ??= require('../http-fetch') as typeof import('../http-fetch'));

function fetcherFor(opts: HttpFetcherOptions): { http: typeof import('../http-fetch'); fetcher: HttpFetcher } {
  const http = httpFetch();
  const key = JSON.stringify(opts);
  let fetcher = fetchers.get(key);
  if (!fetcher) fetchers.set(key, (fetcher = new http.HttpFetcher(opts)));
  return { http, fetcher };
}

async function fetchRemote(m: FetchMessage): Promise<void> {
  const entry: Fetch = { controller: new AbortController() };
  fetches.set(m.id, entry);
  const { http, fetcher } = fetcherFor(m.fetcher);
  try {
    const res = await fetcher.open(new URL(m.url), {
      headers: m.headers,
      auth: m.auth,
      signal: entry.controller.signal,
    });
    // The body may break (or be cancelled) before the pool says what to do with it: that must not end this thread.
    res.body.on('error', () => undefined);
    entry.res = res;
    post({
      t: 'response',
      id: m.id,
      status: res.status,
      headers: res.headers,
      url: res.url.href,
      redirects: res.redirects.map((h) => ({ url: h.url.href, status: h.status, headers: h.headers })),
    });
  } catch (err) {
    fetches.delete(m.id);
    const e = err instanceof http.FetchError ? err : new http.FetchError('network', (err as Error).message);
    post({ t: 'fetch-failed', id: m.id, kind: e.kind, message: e.message });
  }
}

/**
 * A fetched body dropped, or appended to its file while the session's hashes continue (the writes queued in order,
 * as a job's from the pool). A body that breaks keeps what came before, written, durable and hashed.
 */
async function storeBody(m: BodyMessage): Promise<void> {
  const entry = fetches.get(m.id);
  if (!entry?.res) return;
  const http = httpFetch();
  const body = entry.res.body;
  const o = m.store;
  if (!o) {
    fetches.delete(m.id);
    http.dropBody(body);
    post({ t: 'closed', id: m.id });
    return;
  }
  open({ t: 'open', id: m.id, file: o.file, blake3: true, session: { ...o.session, append: true } });
  const job = jobs.get(m.id)!;
  const head = Buffer.alloc(o.headBytes);
  let headLen = 0;
  let received = 0;
  let reported = 0;
  let reportedAt = performance.now();
  let tooLarge = false;
  let broken: { message: string; code?: string } | undefined;
  const queued: Promise<void>[] = [];
  const brokenBy = (e: (Error & { code?: string }) | null) =>
    entry.controller.signal.aborted
      ? { message: 'the download was cancelled' }
      : { message: e?.message ?? 'premature close', code: e?.code };
  // Broken (or cancelled) while it waited: no event will come from it now.
  if (body.destroyed || entry.controller.signal.aborted) broken = brokenBy(body.errored);
  try {
    for await (const chunk of broken ? [] : http.bodyChunks(body)) {
      if (job.error) break;
      if (received + chunk.length > o.limit) {
        tooLarge = true;
        break;
      }
      if (headLen < head.length) headLen += chunk.copy(head, headLen);
      received += chunk.length;
      take(job, chunk);
      if (job.len >= WRITE_BLOCK) {
        flush(m.id, job);
        queued.push(job.chain);
        if (queued.length > BODY_WRITES_QUEUED) await queued.shift();
      }
      if (received - reported >= PROGRESS_EVERY || performance.now() - reportedAt >= PROGRESS_MS) {
        post({ t: 'progress', id: m.id, bytes: (reported = received) });
        reportedAt = performance.now();
      }
    }
  } catch (err) {
    broken = brokenBy(err as Error);
  }
  // Cancelling is over: what came is written whatever is said now.
  fetches.delete(m.id);
  if (tooLarge || job.error || broken) http.dropBody(body);
  if (await complete(m.id, job)) {
    const h = head.subarray(0, headLen);
    post({ t: 'stored', id: m.id, size: job.size, head: h, tooLarge, ...(broken ? { broken } : {}) }, [
      h.buffer as ArrayBuffer,
    ]);
    return;
  }
  await closeAndRemove(job, o.file);
  post({ t: 'closed', id: m.id });
}

port.on('message', (m: ToWorker) => {
  if (m.t === 'fetch') return void fetchRemote(m);
  if (m.t === 'body') return void storeBody(m);
  if (m.t === 'cancel') return void fetches.get(m.id)?.controller.abort();
  if (m.t === 'open') return open(m);
  if (m.t === 'drop') return void sessions.delete(m.session);
  if (m.t === 'forget') return void slots.delete(m.slot);
  // A slot's memory comes with the first message that names it, whichever job's (its job may be gone).
  if (m.t === 'data' && m.sab) slots.set(m.slot, new Uint8Array(m.sab));
  if (m.t === 'copy')
    return void copyHashed(m, b3impl).then((a) => post(a, a.t === 'copied' ? [a.head.buffer as ArrayBuffer] : []));
  const job = jobs.get(m.id);
  if (!job) return;
  if (m.t === 'data') data(m, job);
  else if (m.t === 'end') void end(m, job);
  else void abort(m, job);
});
