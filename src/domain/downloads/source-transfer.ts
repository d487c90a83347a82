import type { BlobStore, PartialBlob, TempBlob } from '../../infra/blob-store/blob-store';
import { deriveFromHead, METADATA_HEAD_BYTES } from '../content/derived-metadata';
import {
  bodyChunks,
  dropBody,
  FetchError,
  headerText,
  type FetchOptions,
  type FetchResponse,
  type HttpFetcher,
} from '../../infra/http-fetch';
import {
  FetchedBody,
  RemoteFetchError,
  type HashSession,
  type IngestWorkers,
} from '../../infra/blob-store/ingest-pool';
import type { IngestedContent } from '../content/content.service';
import { detectMime } from '../content/mime';
import { NO_METER, type TransferMeter } from '../transfer-meter';
import { fileNameFromDisposition, SourceError, statusError } from './providers/provider';

/** The first bytes are kept for MIME sniffing and the derived `metadata` (a safetensors header comes first). */
const HEAD_BYTES = METADATA_HEAD_BYTES;

/** What the first good answer of an attempt tells; saved before any of its bytes are written. */
export interface ResponseInfo {
  validator: string | null;
  total: number | null;
  /** Where the bytes of this answer start (0 when starting over). */
  offset: number;
  fileName: string | undefined;
}

/** An answer of the source: its body on this thread (a FetchResponse) or on the hash session's worker. */
type Answer = FetchResponse | FetchedBody;

/** A body stored (whole or in part), and why it stopped early if it did: what came before is kept either way. */
interface Stored {
  temp: TempBlob;
  bodyError: unknown;
}

export interface SourceTransferDeps {
  fetcher: HttpFetcher;
  blobs: BlobStore;
  hashers: IngestWorkers;
  meter?: TransferMeter;
  /**
   * Make the request, and write and hash the body, on the hash session's worker thread (on stores with hashed writes,
   * for transfers with a partial file). Off when tracing is on: the worker has no tracer, so the outgoing request
   * would have no span and carry no `traceparent`.
   */
  bodiesOnWorker?: boolean;
}

export interface SourceTransferOptions {
  url: URL;
  auth?: FetchOptions['auth'];
  /** Name of the partial file that survives restarts; without one (or on a store without partials) no resume. */
  partialName?: string;
  /** Validator of the bytes already in the partial file (from an earlier attempt or process). */
  validator: string | null;
  maxBytes: number;
  signal?: AbortSignal;
  onResponse?: (info: ResponseInfo) => Promise<void>;
}

/**
 * One source URL streamed to a temporary blob while hashing (BLAKE3 + SHA-256), resumable: each attempt continues
 * from the bytes already in the partial file with `Range` + `If-Range`, and starts over when the server ignores
 * the range or the file changed. The hash state is kept between attempts in this process and rebuilt by re-reading
 * the partial file otherwise. A non-2xx answer is never written.
 */
export class SourceTransfer {
  /**
   * BLAKE3 + SHA-256 on an ingest worker thread, the state kept there across attempts (one job per attempt). Both
   * hashes go there: this thread already parses the HTTP response (`npm run bench -- download`). On the disk store the
   * worker also appends the bytes to the partial file; the body's chunks are copied into the pool's slots for it.
   */
  private hash: HashSession;
  private head: Buffer = Buffer.alloc(0);
  /** Bytes received so far (including those of earlier attempts). */
  bytes = 0;
  total: number | null = null;
  fileName: string | undefined;
  private validator: string | null;

  constructor(
    private readonly deps: SourceTransferDeps,
    private readonly o: SourceTransferOptions,
  ) {
    this.hash = this.newHash();
    this.validator = o.validator;
  }

  async attempt(): Promise<IngestedContent> {
    const partial = this.o.partialName ? await this.deps.blobs.openPartial(this.o.partialName) : undefined;
    // A job that failed (or a hash worker that died) has lost the state: rebuild it from the partial file.
    if (!this.hash.usable) this.reset();
    let offset = partial && this.validator ? partial.size : 0;
    if (offset > 0 && this.hash.size !== offset) offset = await this.rebuild(partial!);
    if (offset === 0) this.reset();
    this.bytes = offset;

    const headers: Record<string, string> = { 'accept-encoding': 'identity' };
    if (offset > 0) Object.assign(headers, { range: `bytes=${offset}-`, 'if-range': this.validator! });
    const onWorker = !!(partial && this.deps.bodiesOnWorker && this.deps.blobs.capabilities.hashedWrites);
    const res = await this.open(headers, onWorker);
    try {
      return await this.answered(res, partial, offset);
    } finally {
      // Every way out that did not store the body leaves it unread on the worker: discard it there.
      if (res instanceof FetchedBody) res.drop();
    }
  }

  private async answered(res: Answer, partial: PartialBlob | undefined, offset: number): Promise<IngestedContent> {
    if (res.status === 416 && offset > 0) {
      discardBody(res);
      const whole = Number(/^bytes \*\/(\d+)$/.exec(headerText(res.headers['content-range']) ?? '')?.[1]);
      // Everything was already here (a crash between the last byte and the commit).
      if (whole === offset) return this.finish(await partial!.append(empty(), {}));
      await partial!.discard();
      this.reset();
      throw new SourceError('DOWNLOAD_FAILED', 'the server refused the resume range; starting over', true, 0);
    }
    if (res.status < 200 || res.status >= 300) {
      discardBody(res);
      throw statusError(res.status, res.headers, res.url.host);
    }
    let truncate = offset === 0;
    let total = numberHeader(res.headers['content-length']);
    if (res.status === 206) {
      const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(headerText(res.headers['content-range']) ?? '');
      if (!m || Number(m[1]) !== offset) {
        discardBody(res);
        this.validator = null;
        throw new SourceError(
          'DOWNLOAD_FAILED',
          'the server answered another range than asked; starting over',
          true,
          0,
        );
      }
      total = m[3] === '*' ? null : Number(m[3]);
    } else if (offset > 0) {
      // 200 to a Range request: the server ignores ranges, or If-Range saw a changed file. Start over.
      offset = 0;
      truncate = true;
      this.reset();
    }
    // Starting over: the old bytes go before the new validator is saved. Saved next to them, a crash in between would
    // make the next attempt resume the new version of the file after the old one's bytes.
    if (truncate && partial && partial.size > 0) await partial.discard();
    this.validator = validatorOf(res);
    this.total = total;
    this.fileName = fileNameOf(res) ?? this.fileName;
    await this.o.onResponse?.({ validator: this.validator, total, offset, fileName: this.fileName });

    const stored =
      res instanceof FetchedBody
        ? this.storeOnWorker(res, partial!, offset)
        : this.storeHere(res, partial, offset, truncate);
    const { temp, bodyError } = await stored.catch((err: unknown) => {
      // The hash worker died: the next attempt rebuilds the state from what the partial file holds and resumes there.
      if (this.hash.workerStopped)
        throw new SourceError('DOWNLOAD_FAILED', `the hash worker stopped after ${this.bytes} bytes`, true);
      throw err;
    });
    if (bodyError !== undefined) {
      if (!partial) await this.deps.blobs.discard(temp);
      if (this.o.signal?.aborted) throw new FetchError('aborted', 'the download was cancelled');
      if (bodyError instanceof SourceError) throw bodyError;
      throw new SourceError(
        'DOWNLOAD_FAILED',
        `the connection broke after ${this.bytes} bytes: ${(bodyError as Error).message}`,
        true,
      );
    }
    if (total !== null && this.hash.size !== total) {
      if (!partial) await this.deps.blobs.discard(temp);
      throw new SourceError('DOWNLOAD_FAILED', `the server sent ${this.hash.size} of ${total} bytes`, true);
    }
    return this.finish(temp);
  }

  /** The validator to save with the partial file's bytes. */
  get currentValidator(): string | null {
    return this.validator;
  }

  /** The body read on this thread (pipe) and stored; a broken body's error comes back beside what was stored. */
  private async storeHere(
    res: FetchResponse,
    partial: PartialBlob | undefined,
    offset: number,
    truncate: boolean,
  ): Promise<Stored> {
    let bodyError: unknown;
    const temp = await this.store(
      partial,
      this.pipe(res, offset, (e) => (bodyError = e)),
      truncate,
    );
    return { temp, bodyError };
  }

  /**
   * Writes the body where it goes while the hash worker hashes it: on the disk store the worker appends it to the
   * partial file itself (from copies in the pool's slots); elsewhere this thread writes and copies go to the worker.
   * Either way the state has counted every byte stored when this returns.
   */
  private store(partial: PartialBlob | undefined, source: AsyncIterable<Buffer>, truncate: boolean): Promise<TempBlob> {
    const hashed = this.deps.blobs.capabilities.hashedWrites;
    if (partial && hashed) return hashed.appendHashed(partial, source, this.hash);
    if (partial) return partial.append(this.hash.hashing(source), { truncate });
    return this.deps.blobs.writeTemp(this.hash.hashing(source));
  }

  /**
   * The body appended to the partial file by the worker that holds the hashes, with this thread told the progress
   * (the bytes so far, the metrics); like pipe, a body that breaks or is too large keeps what came before it.
   */
  private async storeOnWorker(res: FetchedBody, partial: PartialBlob, offset: number): Promise<Stored> {
    const meter = this.deps.meter ?? NO_METER;
    const end = meter.begin('download');
    let counted = 0;
    const count = (bytes: number) => {
      meter.add('downloaded', bytes - counted);
      counted = bytes;
      this.bytes = offset + bytes;
    };
    try {
      const { temp, stored } = await this.deps.blobs.capabilities.hashedWrites!.appendFetched(partial, res, this.hash, {
        limit: this.o.maxBytes - offset,
        headBytes: offset === 0 ? HEAD_BYTES : 0,
        onProgress: count,
      });
      count(stored.size);
      if (offset === 0) this.head = stored.head;
      const bodyError = stored.tooLarge
        ? new SourceError('PAYLOAD_TOO_LARGE', `the file is larger than the limit of ${this.o.maxBytes} bytes`)
        : stored.broken;
      return { temp, bodyError };
    } finally {
      end();
    }
  }

  private async open(headers: Record<string, string>, onWorker: boolean): Promise<Answer> {
    try {
      if (!onWorker)
        return await this.deps.fetcher.open(this.o.url, { auth: this.o.auth, headers, signal: this.o.signal });
      return await this.hash
        .fetch({ url: this.o.url, headers, auth: this.o.auth, fetcher: this.deps.fetcher.opts }, this.o.signal)
        .catch((err: unknown) => {
          if (err instanceof RemoteFetchError) throw new FetchError(err.kind, err.message);
          // The worker died: the next attempt starts another.
          throw new SourceError('DOWNLOAD_FAILED', (err as Error).message, true);
        });
    } catch (err) {
      if (err instanceof FetchError && err.kind === 'network')
        throw new SourceError('DOWNLOAD_FAILED', err.message, true);
      if (err instanceof FetchError && err.kind !== 'aborted') throw new SourceError('DOWNLOAD_FAILED', err.message);
      throw err;
    }
  }

  /**
   * The body, counted on the way to the store. A broken connection ends the stream instead of failing it, so every
   * byte received is written (and hashed) before the next attempt resumes after it.
   */
  private async *pipe(res: FetchResponse, offset: number, onError: (e: unknown) => void): AsyncGenerator<Buffer> {
    const meter = this.deps.meter ?? NO_METER;
    const end = meter.begin('download');
    try {
      for await (const chunk of bodyChunks(res.body)) {
        const n = chunk.length;
        if (this.bytes + n > this.o.maxBytes) {
          onError(
            new SourceError('PAYLOAD_TOO_LARGE', `the file is larger than the limit of ${this.o.maxBytes} bytes`),
          );
          dropBody(res.body);
          return;
        }
        if (offset === 0 && this.head.length < HEAD_BYTES)
          this.head = Buffer.concat([this.head, chunk.subarray(0, HEAD_BYTES - this.head.length)]);
        this.bytes += n;
        meter.add('downloaded', n);
        yield chunk;
      }
    } catch (err) {
      onError(err);
      dropBody(res.body);
    } finally {
      end();
    }
  }

  /** Re-reads the partial file into a fresh hash state; returns the bytes kept (0 if the file could not be read). */
  private async rebuild(partial: PartialBlob): Promise<number> {
    this.reset();
    const job = this.hash.append(undefined);
    try {
      for await (const chunk of partial.readExisting()) {
        if (this.head.length < HEAD_BYTES)
          this.head = Buffer.concat([this.head, chunk.subarray(0, HEAD_BYTES - this.head.length)]);
        const wait = job.write(chunk);
        if (wait) await wait;
        if (this.o.signal?.aborted) throw new FetchError('aborted', 'the download was cancelled');
      }
      await job.finish();
    } catch (err) {
      await job.abort();
      if (err instanceof FetchError) throw err;
      this.reset();
      return 0;
    }
    if (this.hash.size !== partial.size) {
      this.reset();
      return 0;
    }
    return partial.size;
  }

  /** Releases the hash state (call once the transfer is over, whichever way it ended). */
  close(): void {
    this.hash.close();
  }

  private newHash(): HashSession {
    return this.deps.hashers.session({ blake3OnWorker: true });
  }

  private reset(): void {
    // On the same worker: a body it fetched (a 200 to a resume) is then stored from its start with the new state.
    this.hash = this.hash.renew();
    this.head = Buffer.alloc(0);
    this.bytes = 0;
  }

  private async finish(temp: TempBlob): Promise<IngestedContent> {
    const digest = await this.hash.digest();
    const sniffedMime = this.head.length > 0 ? detectMime(this.head, undefined) : undefined;
    const derived = deriveFromHead(this.head, sniffedMime, undefined);
    this.head = Buffer.alloc(0);
    return { temp, digest, sniffedMime, derived };
  }
}

/**
 * Runs attempts until one succeeds, retrying what can be retried with exponential backoff (1 s doubling to 60 s,
 * `Retry-After` when the server gives one). An attempt that made progress resets the count; six in a row without
 * progress give up.
 */
export async function withRetries<T>(
  transfer: { bytes: number },
  attempt: () => Promise<T>,
  o: {
    signal?: AbortSignal;
    maxFailures?: number;
    baseDelayMs?: number;
    onRetry?: (err: SourceError, delayMs: number) => void;
  },
): Promise<T> {
  let failures = 0;
  for (;;) {
    const before = transfer.bytes;
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof SourceError) || !err.retryable || o.signal?.aborted) throw err;
      failures = transfer.bytes > before ? 1 : failures + 1;
      if (failures >= (o.maxFailures ?? 6))
        throw new SourceError(err.code as 'DOWNLOAD_FAILED', `${err.message} (gave up after ${failures} attempts)`);
      const backoff = Math.min(60_000, (o.baseDelayMs ?? 1000) * 2 ** (failures - 1)) * (0.8 + Math.random() * 0.4);
      const delay = err.retryAfterMs ?? backoff;
      o.onRetry?.(err, delay);
      await sleep(delay, o.signal);
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

async function* empty(): AsyncGenerator<Buffer> {}

function discardBody(res: Answer): void {
  if (res instanceof FetchedBody) res.drop();
  else dropBody(res.body);
}

function numberHeader(h: string | string[] | undefined): number | null {
  const v = headerText(h);
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : null;
}

/** A strong ETag, else Last-Modified: what If-Range accepts. */
function validatorOf(res: Pick<Answer, 'headers'>): string | null {
  const etag = headerText(res.headers.etag);
  if (etag && !etag.startsWith('W/')) return etag;
  return headerText(res.headers['last-modified']) ?? null;
}

/** The answer's Content-Disposition, else the `response-content-disposition` a presigned redirect target carries. */
function fileNameOf(res: Pick<Answer, 'headers' | 'url' | 'redirects'>): string | undefined {
  const direct = fileNameFromDisposition(headerText(res.headers['content-disposition']));
  if (direct) return direct;
  for (const u of [res.url, ...res.redirects.map((r) => r.url)]) {
    const fromQuery = fileNameFromDisposition(u.searchParams.get('response-content-disposition') ?? undefined);
    if (fromQuery) return fromQuery;
  }
  return undefined;
}
