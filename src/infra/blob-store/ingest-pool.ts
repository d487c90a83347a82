import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { blake3, type Blake3Incremental } from '../blake3';
import type { FileState } from './copy-hashed';
import type { FetchError, FetchOptions, HttpFetcherOptions } from '../http-fetch';
import type { FetchedHead, FromWorker, IngestWorkerData, ToWorker } from './ingest.worker';

/**
 * Hashing (BLAKE3 + SHA-256) and writing of uploaded bytes on worker threads.
 *
 * Why (`npm run bench -- upload`): on the request thread the two hashes take a core on their own. Here the request
 * thread parses and writes the file (FsBlobStore.writeTempHashed), and copies each chunk into a batch buffer for a
 * worker that runs both hashes. A HashSession's jobs (a resumable upload's PATCH) also write on the worker:
 * it queues each batch for a write on the thread pool (one in flight, in order, while it hashes the next), overlaps
 * writeback with a background `fdatasync`, and `fsync`s the part at the end.
 *
 * The bytes travel in batch slots the pool allocates and owns (SlotPool): SharedArrayBuffers the worker is given
 * once, so a batch's message names its slot and length, and the ack gives the slot back for reuse. Nothing is
 * transferred: a transfer makes a new ArrayBuffer on each side every time, and the external memory V8 counts for
 * those made it run a full collection every few dozen MiB (on the service's heap, ~0.4 s per GiB uploaded; `node
 * bench/profiles/profile-upload.cjs`). The received chunks are never moved or freed here: they are the HTTP
 * parser's (or a library's), and are only copied into a slot.
 *
 * Resumable uploads keep a HashSession per upload: the BLAKE3 + SHA-256 state stays on one worker between jobs (one
 * job per PATCH, appending to the upload's part), so every PATCH continues the hashes where the last one stopped. A
 * session holds no job between PATCHes, so it does not keep its worker (or the process) alive. Downloads do the same
 * per attempt (both hashes on the worker, so the request thread only copies).
 */

/** Bytes a job may have posted and not yet had acknowledged before `write` asks its caller to wait. */
const IN_FLIGHT = 4 << 20;
/** Chunks are posted in batches of this many bytes (one pooled buffer each). */
const BATCH = 1 << 20;
/** Batch slots kept for reuse: a job's in-flight window and one being filled, for a few jobs at once. */
const POOLED = 24;

/** A batch's memory: shared with the workers, which keep their view of it by `id`. */
interface Slot {
  id: number;
  sab: SharedArrayBuffer;
  view: Buffer;
}

/**
 * The batch slots of the ingest jobs: allocated here, lent to a job, named in its messages to a worker and given
 * back by the worker's ack. A slot past the POOLED kept is dropped, and the workers that saw it are told to forget
 * it; one that does not come back (its worker died) is left to the garbage collector.
 */
class SlotPool {
  private readonly free: Slot[] = [];
  private readonly lent = new Map<number, Slot>();
  private nextId = 1;

  constructor(private readonly dropped: (id: number) => void) {}

  take(): Slot {
    let slot = this.free.pop();
    if (!slot) {
      const sab = new SharedArrayBuffer(BATCH);
      slot = { id: this.nextId++, sab, view: Buffer.from(sab) };
    }
    this.lent.set(slot.id, slot);
    return slot;
  }

  giveBack(ids: readonly number[]): void {
    for (const id of ids) {
      const slot = this.lent.get(id);
      if (!slot) continue;
      this.lent.delete(id);
      if (this.free.length < POOLED) this.free.push(slot);
      else this.dropped(id);
    }
  }

  /** Slots a dead worker held: never coming back. */
  lose(ids: Iterable<number>): void {
    for (const id of ids) if (this.lent.delete(id)) this.dropped(id);
  }
}

/**
 * The worker's built file. At run time this module is dist/src/infra/blob-store/ingest-pool.js and the worker is
 * beside it. Under jest this module runs from its TypeScript source, which a worker thread cannot load: the pool then
 * takes the project's build in dist/ (`npm test` builds first), so a test sees the worker as last built.
 */
function workerFile(): string {
  if (!__filename.endsWith('.ts')) return path.join(__dirname, 'ingest.worker.js');
  const built = path.resolve(__dirname, '../../../dist/src/infra/blob-store/ingest.worker.js');
  if (!fs.existsSync(built))
    throw new Error(
      `the ingest worker is not built (${built} is missing): run \`npm run build\` first (npm test does)`,
    );
  return built;
}

export interface HashedFile {
  blake3: string;
  sha256: string;
  size: number;
}

/**
 * A small pool of hashing/writing threads (ingest.worker.ts), started on first use; idle threads do not keep the
 * process alive. Built once by the composition root, which closes it last on shutdown.
 */
export class IngestWorkers {
  private readonly workers: Array<WorkerEntry | undefined>;
  private nextId = 1;
  private nextSession = 1;
  private file: string | undefined;
  private readonly slots = new SlotPool((id) => {
    for (const w of this.workers) if (w?.seen.delete(id)) send(w.worker, { t: 'forget', slot: id });
  });

  constructor(size = Math.max(1, Math.min(4, os.availableParallelism()))) {
    this.workers = new Array(size).fill(undefined);
  }

  /**
   * Starts a job that only hashes, both hashes on the worker (its caller writes the bytes itself:
   * FsBlobStore.writeTempHashed); files are written on a worker only by a HashSession's jobs, which append to a
   * resumable upload's part. BLAKE3 on the worker as well leaves the request thread, the upload's critical path, only
   * the parsing, the copy into the slots and the writes: 1 GiB uploads 9-11 % faster, with less CPU, than with BLAKE3
   * on the request thread (`BENCH_B3_ON_CALLER=1 npm run bench -- hashing`).
   */
  open(opts: { blake3OnCaller?: boolean } = {}): IngestJob {
    const w = this.pick();
    return this.openOn(w, {
      file: undefined,
      b3: opts.blake3OnCaller ? blake3().create() : undefined,
      blake3: !opts.blake3OnCaller,
    });
  }

  /**
   * A new, empty hash state kept on one worker across jobs (see HashSession). `blake3OnWorker`: both hashes on the
   * worker; otherwise BLAKE3 runs on the caller's thread, as for `open`.
   */
  session(opts: { blake3OnWorker?: boolean } = {}): HashSession {
    return this.sessionOn(this.pick(), opts.blake3OnWorker === true);
  }

  /** @internal A new session on the worker `w` (HashSession.renew). */
  sessionOn(w: WorkerEntry, blake3OnWorker: boolean): HashSession {
    return new HashSession(this, w, this.nextSession++, blake3OnWorker ? undefined : blake3().create());
  }

  /** @internal A job on the worker `w` (HashSession's jobs go to the worker that holds their state). */
  openOn(
    w: WorkerEntry,
    o: {
      file: string | undefined;
      b3: Blake3Incremental | undefined;
      blake3: boolean;
      session?: SessionRef;
    },
  ): IngestJob {
    const job = new IngestJob(this.nextId++, o.file, w, this.slots, o.b3, !!o.session?.append, () => {
      w.jobs.delete(job.id);
      if (w.jobs.size === 0) w.worker.unref();
    });
    w.jobs.set(job.id, job);
    // A thread with work keeps the process alive (a pending answer is awaited); an idle one does not.
    if (w.jobs.size === 1) w.worker.ref();
    send(w.worker, { t: 'open', id: job.id, file: o.file, blake3: o.blake3, session: o.session });
    return job;
  }

  /**
   * Copies the local file `src` to `file` (created exclusively, fsynced) and hashes it, all on a worker: one message
   * each way per file; without `file` it only reads and hashes (an in-place root's file). Rejects with the error's
   * `code` (UNREADABLE, NOT_A_FILE, CANCELLED once `cancel` is set, or an errno); `file` is then gone. `cancel`: an
   * Int32Array over a SharedArrayBuffer; storing a value other than 0 in its first element stops the copy between
   * reads.
   */
  copyHashed(
    src: string,
    file: string | undefined,
    headBytes: number,
    commitUnder?: string,
    cancel?: Int32Array,
  ): Promise<CopiedFile> {
    const w = this.pick();
    return new Promise<CopiedFile>((resolve, reject) => {
      const { id, done } = this.track(w, {
        onMessage: (m) => {
          done();
          if (m.t === 'copied')
            resolve({
              blake3: m.blake3,
              sha256: m.sha256,
              size: m.size,
              head: Buffer.from(m.head.buffer, m.head.byteOffset, m.head.length),
              committed: m.committed,
              before: m.before,
              after: m.after,
            });
          else if (m.t === 'error') reject(workerError(m));
          else reject(new Error(`unexpected answer ${m.t} from the ingest worker`));
        },
        workerStopped: (err) => {
          done();
          // The worker may have created the file: nobody else removes it.
          const stopped = () => reject(new Error(`the ingest worker stopped: ${err.message}`));
          if (file === undefined) stopped();
          else fs.rm(file, { force: true }, stopped);
        },
      });
      send(w.worker, {
        t: 'copy',
        id,
        src,
        file,
        headBytes,
        ...(commitUnder !== undefined ? { commitUnder } : {}),
        ...(cancel ? { cancel: cancel.buffer as SharedArrayBuffer } : {}),
      });
    });
  }

  /**
   * @internal Routes the worker's answers about a new id to `job` until `done`; meanwhile the thread keeps the process
   * alive (a pending answer is awaited), as a job does.
   */
  track(w: WorkerEntry, job: WorkerJob): { id: number; done: () => void } {
    const id = this.nextId++;
    w.jobs.set(id, job);
    if (w.jobs.size === 1) w.worker.ref();
    return {
      id,
      done: () => {
        if (w.jobs.delete(id) && w.jobs.size === 0) w.worker.unref();
      },
    };
  }

  /**
   * The worker for a new job: the least busy running one, or a new one while every running one has work. A sequence
   * of uploads keeps to one thread (each is an isolate of ~10 MB resident), and concurrent ones spread out.
   */
  private pick(): WorkerEntry {
    let best: WorkerEntry | undefined;
    let unstarted = -1;
    for (let i = 0; i < this.workers.length; i++) {
      const w = this.workers[i];
      if (!w) {
        if (unstarted < 0) unstarted = i;
      } else if (!best || w.jobs.size < best.jobs.size) best = w;
    }
    if (best && (best.jobs.size === 0 || unstarted < 0)) return best;
    return (this.workers[unstarted] = this.start(unstarted));
  }

  /**
   * Stops the threads: idle ones cost nothing while the process runs, but each one left over slows the process's
   * exit, and a process that builds and closes several services (an embedder, the test suites) would keep them all.
   * A job still running fails as on a worker's death; a later job starts a new thread.
   */
  async close(): Promise<void> {
    const started = this.workers.filter((w): w is WorkerEntry => w !== undefined);
    this.workers.fill(undefined);
    await Promise.all(started.map((w) => w.worker.terminate()));
  }

  /** @internal Whether `w` still runs (a session's state dies with its worker). */
  isLive(w: WorkerEntry): boolean {
    return !w.dead;
  }

  private start(slot: number): WorkerEntry {
    const data: IngestWorkerData = { blake3: blake3().impl };
    const worker = new Worker((this.file ??= workerFile()), {
      workerData: data,
      // The worker holds a few MiB of chunks at most; keep its heap small.
      resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
      stdout: false,
      stderr: false,
    });
    const entry: WorkerEntry = { worker, jobs: new Map<number, WorkerJob>(), dead: false, seen: new Set() };
    worker.on('message', (m: FromWorker) => {
      const job = entry.jobs.get(m.id);
      if (job) job.onMessage(m);
      // An ack that comes after its job ended still gives its slots back.
      else if (m.t === 'ack') this.slots.giveBack(m.slots);
    });
    const dead = (err: Error) => {
      entry.dead = true;
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

interface WorkerEntry {
  worker: Worker;
  jobs: Map<number, WorkerJob>;
  dead: boolean;
  /** The slots this worker has been given (and keeps a view of). */
  seen: Set<number>;
}

/** What a worker's answers go to: an IngestJob, or a whole-file copy's promise. */
interface WorkerJob {
  onMessage(m: FromWorker): void;
  workerStopped(err: Error): void;
}

/** A local file copied and hashed by a worker (`IngestWorkers.copyHashed`). */
export interface CopiedFile extends HashedFile {
  /** The first bytes (up to the `headBytes` asked for). */
  head: Buffer;
  /** Also given its content address under the `commitUnder` asked for. */
  committed: boolean;
  before: FileState;
  after: FileState;
}

/** How a job refers to its session: `fresh` for the first job of a session (the worker creates the state). */
interface SessionRef {
  id: number;
  fresh: boolean;
  /** Append to an existing file (a resumable upload's part) rather than create one; on failure it is kept. */
  append: boolean;
  /** The last job of the session: the worker answers the digests and forgets the state. */
  final?: boolean;
}

const send = (worker: Worker, m: ToWorker) => worker.postMessage(m);

/** An error the worker reported (its message and errno-style `code`), as an Error of this thread. */
const workerError = (e: { message: string; code?: string }): Error & { code?: string } =>
  Object.assign(new Error(e.message), e.code ? { code: e.code } : {});

/**
 * A BLAKE3 + SHA-256 state kept across jobs: a resumable upload's hashes between its PATCHes. The SHA-256 (and, with
 * `blake3OnWorker`, the BLAKE3) state lives on one worker thread, which all the session's jobs use, one at a time.
 * `size` is what the state has hashed. A job that fails (or a worker that dies) leaves the state unusable
 * (`usable` false): the owner then builds a new session from the stored bytes. `close` forgets it.
 */
export class HashSession {
  /** Bytes hashed so far (the stored bytes when every job succeeded). */
  size = 0;
  private broken = false;
  private busy = false;
  private started = false;

  constructor(
    private readonly pool: IngestWorkers,
    private readonly w: WorkerEntry,
    readonly id: number,
    private readonly b3: Blake3Incremental | undefined,
  ) {}

  get usable(): boolean {
    return !this.broken && !this.busy && this.pool.isLive(this.w);
  }

  /** Its worker thread died (the state is lost, and what the worker had not yet written is not in the file). */
  get workerStopped(): boolean {
    return !this.pool.isLive(this.w);
  }

  /**
   * A job that continues the state: it appends to `file` (made by the first job when missing; what it wrote stays
   * there even when it fails), or without a file only hashes. `finish` makes the bytes durable and adds them to `size`.
   */
  append(file: string | undefined): IngestJob {
    if (!this.usable) throw new Error('the hash session is not usable');
    return this.job(file, false);
  }

  /** The digests of everything hashed; the session is over. */
  async digest(): Promise<HashedFile> {
    if (!this.usable) throw new Error('the hash session is not usable');
    const job = this.job(undefined, true);
    const d = await job.finish();
    this.broken = true;
    return { ...d, size: this.size };
  }

  /**
   * Passes `source` through while a job of this session hashes it (the chunks are copied for the worker), for stores
   * that write the bytes themselves (S3's parts). The state counts the bytes once the consumer has taken all of
   * `source`; if it stops early, or `source` fails, the state is unusable.
   */
  async *hashing(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    const job = this.append(undefined);
    let done = false;
    try {
      for await (const chunk of source) {
        const wait = job.write(chunk);
        if (wait) await wait;
        yield chunk;
      }
      done = true;
    } finally {
      if (done) await job.finish();
      else await job.abort();
    }
  }

  /**
   * Makes a download's request on this session's worker thread, with a fetcher built there from `req.fetcher`: the
   * body's socket reads then become garbage of that thread's small heap (`node bench/profiles/profile-download.cjs`).
   * Resolves with the answer once its headers are in (after redirects); its body waits there for `drop` or `store`.
   * Rejects with a RemoteFetchError (the FetchError's kind and message) or the worker's death. `signal` cancels
   * the request, or the body being stored.
   */
  fetch(
    req: { url: URL; headers: Record<string, string>; auth?: FetchOptions['auth']; fetcher: HttpFetcherOptions },
    signal?: AbortSignal,
  ): Promise<FetchedBody> {
    const w = this.w;
    if (!this.pool.isLive(w)) return Promise.reject(new Error('the ingest worker stopped'));
    if (signal?.aborted) return Promise.reject(new RemoteFetchError('aborted', 'the request was aborted'));
    return new Promise<FetchedBody>((resolve, reject) => {
      let body: FetchedBody | undefined;
      const cancel = () => send(w.worker, { t: 'cancel', id });
      const over = () => {
        done();
        signal?.removeEventListener('abort', cancel);
      };
      const { id, done } = this.pool.track(w, {
        onMessage: (m) => {
          if (m.t === 'response') resolve((body = new FetchedBody(this, id, m, over)));
          else if (m.t === 'fetch-failed') {
            over();
            reject(new RemoteFetchError(m.kind, m.message));
          } else body?.onMessage(m);
        },
        workerStopped: (err) => {
          over();
          if (body) body.workerStopped(err);
          else reject(new Error(`the ingest worker stopped: ${err.message}`));
        },
      });
      signal?.addEventListener('abort', cancel, { once: true });
      send(w.worker, {
        t: 'fetch',
        id,
        url: req.url.href,
        headers: req.headers,
        ...(req.auth ? { auth: req.auth } : {}),
        fetcher: req.fetcher,
      });
    });
  }

  /** @internal FetchedBody.store: the body appended to `file` as one of this session's jobs. */
  storeFetched(id: number, file: string, o: { limit: number; headBytes: number }): (ok: boolean, size: number) => void {
    if (!this.usable) throw new Error('the hash session is not usable');
    const fresh = this.begin();
    send(this.w.worker, { t: 'body', id, store: { file, session: { id: this.id, fresh }, ...o } });
    return (ok, size) => this.settled(ok, size, false);
  }

  /** @internal FetchedBody.drop. */
  dropFetched(id: number): void {
    if (this.pool.isLive(this.w)) send(this.w.worker, { t: 'body', id });
  }

  /**
   * Closes this state and starts an empty one, on the same worker while it runs (so that a body it fetched can be
   * stored from its start: a server that ignored a resume's range).
   */
  renew(): HashSession {
    this.close();
    const onWorker = this.b3 === undefined;
    return this.pool.isLive(this.w)
      ? this.pool.sessionOn(this.w, onWorker)
      : this.pool.session({ blake3OnWorker: onWorker });
  }

  /** @internal Whether `other` keeps its state on this session's worker. */
  sameWorker(other: HashSession): boolean {
    return other.w === this.w;
  }

  /** Forgets the state (on the worker too). */
  close(): void {
    const held = !this.broken && this.started;
    this.broken = true;
    // A job still running tells the worker when it ends (onSettled); a failed or final job already made it forget.
    if (held && !this.busy && this.pool.isLive(this.w)) send(this.w.worker, { t: 'drop', session: this.id });
  }

  private job(file: string | undefined, final: boolean): IngestJob {
    const fresh = this.begin();
    const job = this.pool.openOn(this.w, {
      file,
      b3: this.b3,
      blake3: this.b3 === undefined,
      session: { id: this.id, fresh, append: file !== undefined, final },
    });
    job.onSettled = (ok, size) => this.settled(ok, size, final);
    return job;
  }

  /** A job of the session starts; true for its first (the worker then creates the state). */
  private begin(): boolean {
    const fresh = !this.started;
    this.started = true;
    this.busy = true;
    return fresh;
  }

  /** A job of the session ended: what it hashed is counted, or the state is unusable. */
  private settled(ok: boolean, size: number, final: boolean): void {
    this.busy = false;
    if (ok) this.size += size;
    else this.broken = true;
    // Closed while the job ran: the worker forgot the state with the failed job, or is told now.
    if (ok && this.broken && !final && this.pool.isLive(this.w)) send(this.w.worker, { t: 'drop', session: this.id });
  }
}

/** A download's request that failed on the worker: FetchError's kind and message (http-fetch.ts stays unloaded here). */
export class RemoteFetchError extends Error {
  constructor(
    readonly kind: FetchError['kind'],
    message: string,
  ) {
    super(message);
    this.name = 'RemoteFetchError';
  }
}

/** What storing a fetched body did: its bytes written and hashed, and why it stopped early if it did. */
export interface StoredBody {
  size: number;
  /** The body's first bytes (as many as asked for). */
  head: Buffer;
  /** The body went past the limit: it was cut there (the bytes before are stored). */
  tooLarge: boolean;
  /** The body broke, or was cancelled, after `size` bytes (those are stored all the same). */
  broken?: Error & { code?: string };
}

/**
 * The answer of HashSession.fetch: status and headers here, the body on the session's worker until `drop` or
 * `store` (exactly one of them, once).
 */
export class FetchedBody {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly url: URL;
  readonly redirects: Array<{ url: URL; status: number; headers: Record<string, string | string[] | undefined> }>;
  private used = false;
  private onProgress: ((bytes: number) => void) | undefined;
  private answer: ((m: FromWorker | Error) => void) | undefined;
  private error: Error | undefined;

  constructor(
    /** The session that made the request: its worker holds the body. */
    private readonly fetchedBy: HashSession,
    private readonly id: number,
    head: FetchedHead,
    private readonly over: () => void,
  ) {
    this.status = head.status;
    this.headers = head.headers;
    this.url = new URL(head.url);
    this.redirects = head.redirects.map((r) => ({ ...r, url: new URL(r.url) }));
  }

  /** The body is not wanted (a refusal, a redirect's): it is discarded on the worker. */
  drop(): void {
    if (this.used) return;
    this.used = true;
    this.over();
    this.fetchedBy.dropFetched(this.id);
  }

  /**
   * Appends the body to `file` on the worker, hashed as the session's next bytes (the session must have hashed exactly
   * the file's bytes so far). Resolves with what was stored, also when the body broke or went past `limit`; rejects
   * when the file could not be written (the session is then unusable) or the worker died.
   */
  async store(
    session: HashSession,
    file: string,
    o: { limit: number; headBytes: number; onProgress?: (bytes: number) => void },
  ): Promise<StoredBody> {
    if (this.used) throw new Error('the body was already used');
    if (!this.fetchedBy.sameWorker(session)) throw new Error("the hash session is not on the body's worker");
    this.used = true;
    this.onProgress = o.onProgress;
    const answered = new Promise<FromWorker | Error>((resolve) => (this.answer = resolve));
    let settled;
    try {
      settled = session.storeFetched(this.id, file, { limit: o.limit, headBytes: o.headBytes });
    } catch (err) {
      this.over();
      throw err;
    }
    const m = await answered;
    this.over();
    if (m instanceof Error || m.t !== 'stored') {
      settled(false, 0);
      throw m instanceof Error ? m : (this.error ?? new Error('the ingest worker did not store the body'));
    }
    settled(true, m.size);
    return {
      size: m.size,
      head: Buffer.from(m.head.buffer, m.head.byteOffset, m.head.length),
      tooLarge: m.tooLarge,
      ...(m.broken ? { broken: workerError(m.broken) } : {}),
    };
  }

  /** @internal The worker's answers about the body. */
  onMessage(m: FromWorker): void {
    if (m.t === 'progress') this.onProgress?.(m.bytes);
    else if (m.t === 'error') this.error ??= workerError(m);
    else if (m.t === 'stored' || m.t === 'closed') this.answer?.(m);
  }

  /** @internal */
  workerStopped(err: Error): void {
    if (!this.answer) return;
    this.answer(new Error(`the ingest worker stopped: ${err.message}`));
  }
}

/**
 * One file being written and hashed by a worker, or (without a file) only hashed. Use: `write` each chunk (await
 * it when it returns a promise), then `finish`; or `abort`.
 */
export class IngestJob {
  /** The batch being filled (a pooled slot), and how much of it is. */
  private batch: Slot | undefined;
  /** Slots posted and not yet given back (a dead worker's are lost). */
  private readonly posted = new Set<number>();
  private batchBytes = 0;
  private inFlight = 0;
  private error: Error | undefined;
  private drained: (() => void) | undefined;
  private settled: ((m: FromWorker) => void) | undefined;
  private ended = false;
  private stopped = false;
  /** @internal Told how the job ended (a HashSession's bookkeeping): ok, and the bytes written or hashed. */
  onSettled: ((ok: boolean, size: number) => void) | undefined;
  /** Bytes given to `write` so far. */
  size = 0;

  constructor(
    readonly id: number,
    private readonly file: string | undefined,
    private readonly w: WorkerEntry,
    private readonly slots: SlotPool,
    /** BLAKE3 on this thread (a HashSession of a resumable upload; `blake3OnCaller`), or (undefined) on the worker. */
    private readonly b3: Blake3Incremental | undefined,
    /** Appending to a part that must be kept whatever happens (a resumable upload's). */
    private readonly keepFile: boolean,
    private readonly forget: () => void,
  ) {}

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
    for (let at = 0; at < chunk.length;) {
      const batch = (this.batch ??= this.slots.take());
      const n = chunk.copy(batch.view, this.batchBytes, at);
      at += n;
      this.batchBytes += n;
      if (this.batchBytes === BATCH) this.post();
    }
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
    return {
      blake3: m.sha256 === undefined ? '' : this.b3 ? this.b3.hex() : m.blake3!,
      sha256: m.sha256 ?? '',
      size: m.size,
    };
  }

  /** Stops, closes and removes the file. */
  async abort(): Promise<void> {
    if (this.batch) this.slots.giveBack([this.batch.id]);
    this.batch = undefined;
    this.batchBytes = 0;
    if (!this.ended) await this.end('abort');
  }

  onMessage(m: FromWorker): void {
    if (m.t === 'ack') {
      for (const id of m.slots) this.posted.delete(id);
      this.slots.giveBack(m.slots);
      this.inFlight -= m.bytes;
      if (this.inFlight < IN_FLIGHT / 2) this.wake();
      return;
    }
    if (m.t === 'error') {
      this.error ??= workerError(m);
      this.wake();
      return;
    }
    this.settle(m);
  }

  /** The worker died (it sends nothing more): fail this job, and remove its file here. */
  workerStopped(err: Error): void {
    this.stopped = true;
    this.slots.lose(this.posted);
    this.posted.clear();
    if (this.batch) this.slots.giveBack([this.batch.id]);
    this.batch = undefined;
    this.error ??= new Error(`the ingest worker stopped: ${err.message}`);
    this.wake();
    this.settle({ t: 'closed', id: this.id });
  }

  private post(): void {
    const batch = this.batch;
    if (!batch || this.batchBytes === 0) return;
    const bytes = this.batchBytes;
    // The slot's memory goes with its first message to this worker, which keeps a view of it by id.
    const first = !this.w.seen.has(batch.id);
    if (first) this.w.seen.add(batch.id);
    send(this.w.worker, { t: 'data', id: this.id, slot: batch.id, bytes, ...(first ? { sab: batch.sab } : {}) });
    this.posted.add(batch.id);
    this.inFlight += bytes;
    this.batch = undefined;
    this.batchBytes = 0;
  }

  private async end(t: 'end' | 'abort'): Promise<FromWorker> {
    this.ended = true;
    const m = this.stopped
      ? ({ t: 'closed', id: this.id } as FromWorker)
      : await new Promise<FromWorker>((resolve) => {
          this.settled = resolve;
          send(this.w.worker, { t, id: this.id, file: this.file });
        });
    if (this.stopped && this.file && !this.keepFile) await fsp.rm(this.file, { force: true });
    const cb = this.onSettled;
    this.onSettled = undefined;
    cb?.(m.t === 'done' && t === 'end', m.t === 'done' ? m.size : 0);
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
