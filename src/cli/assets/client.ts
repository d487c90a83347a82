import { trimEnd } from '../../domain/input';
import { getBlocks, type BlockBody } from './block-get';

/** Statuses `getBlocks` follows (as fetch would), at most MAX_REDIRECTS times. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;

/** The public HTTP API of the service as the CLI uses it: the key header on every request, `{code, message}` errors. */

export interface Asset {
  id: string;
  name: string;
  size: number;
  asset_hash: string;
  mime_type?: string;
  tags: string[];
  created_at: string;
  loader_path?: string;
  created_new?: boolean;
  [k: string]: unknown;
}

export interface AssetPage {
  assets: Asset[];
  total: number;
  has_more: boolean;
  next_cursor?: string;
}

export interface Task {
  id: string;
  task_name: string;
  status: 'created' | 'running' | 'completed' | 'failed' | 'cancelled';
  progress?: { bytes_downloaded?: number; bytes_total?: number; progress?: number; [k: string]: unknown };
  result?: Record<string, unknown>;
  error_message?: string;
}

/** An error answer of the service (its `code` and `message`), or a network failure (code `NETWORK`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The answer's Retry-After header (429, 503), if any. */
    readonly retryAfter?: string,
  ) {
    super(message);
  }

  override toString(): string {
    return this.status ? `${this.status} ${this.code}: ${this.message}` : `${this.code}: ${this.message}`;
  }
}

export interface ClientOptions {
  url: string;
  apiKey?: string;
  /** Assets per listing request (≤ 500, the service's maximum). */
  pageSize?: number;
  /**
   * How long a request may go without a byte from the service (the answer's head, or the next part of its body)
   * before it is given up as NETWORK (default DEFAULT_TIMEOUT_MS).
   */
  timeoutMs?: number;
  /** Retries of a 429 / 502 / 503 / 504 answer or a request that got no answer (default 3). */
  retries?: number;
}

export const DEFAULT_TIMEOUT_MS = 60_000;
/**
 * Once a request's whole body is sent, how long the answer may take: the service's last step of an upload (its copy
 * into place on S3) can take minutes for the largest models, and stays silent meanwhile.
 */
export const ANSWER_WAIT_MS = 60 * 60_000;
/** A Retry-After longer than this is waited this long (a hostile or broken server must not park the client). */
const MAX_RETRY_WAIT_MS = 60_000;
const RETRY_STATUSES = new Set([429, 502, 503, 504]);
/** Requests that may be sent again after a failure: the service did the same whether it saw the first or not. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/**
 * How long to wait before retry number `attempt` (0-based) of a request answered `status`: its Retry-After (seconds
 * or an HTTP date) when it has one, at most MAX_RETRY_WAIT_MS, else 1 s, 2 s, 4 s ...
 */
export function retryDelayMs(retryAfter: string | null | undefined, attempt: number): number {
  const fallback = 1000 * 2 ** attempt;
  if (!retryAfter) return Math.min(fallback, MAX_RETRY_WAIT_MS);
  const secs = /^\s*\d+\s*$/.test(retryAfter)
    ? Number(retryAfter) * 1000
    : /GMT\s*$/.test(retryAfter)
      ? Date.parse(retryAfter) - Date.now()
      : NaN;
  return Number.isFinite(secs) ? Math.max(0, Math.min(secs, MAX_RETRY_WAIT_MS)) : Math.min(fallback, MAX_RETRY_WAIT_MS);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A timer that calls `fire` once `ms` pass without a restart; unref'd, so it never keeps the process alive. */
function idleTimer(ms: number, fire: () => void): { restart(): void; clear(): void } {
  let t: NodeJS.Timeout | undefined;
  const restart = (): void => {
    clearTimeout(t);
    t = setTimeout(fire, ms);
    t.unref();
  };
  restart();
  return { restart, clear: () => clearTimeout(t) };
}

/**
 * The JSON body of an answer to `what`: a non-2xx answer throws ApiError with the service's code and message, an
 * answer that is not JSON (a proxy's HTML page) INVALID_RESPONSE, a body cut off or stalled NETWORK.
 */
async function jsonAnswer<T>(res: Response, what: string): Promise<T> {
  if (!res.ok) throw await errorOf(res);
  const text = await res.text().catch((err: unknown) => {
    throw networkError(`${what}: the answer broke off`, err);
  });
  return parseJson<T>(text, res.status, what);
}

/** An ApiError for a failure that is not an answer (refused, reset, timed out), with the cause's code. */
export function networkError(what: string, err: unknown): ApiError {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  const why =
    e.name === 'TimeoutError' || e.name === 'AbortError'
      ? `no answer in time (${e.message ?? 'timeout'})`
      : (e.cause?.code ?? e.code ?? e.cause?.message ?? e.message ?? String(err));
  return new ApiError(0, 'NETWORK', `${what}: ${why}`);
}

type Req = Omit<RequestInit, 'headers'> & { headers?: Record<string, string>; noKey?: boolean };

export class ApiClient {
  readonly base: string;

  constructor(private readonly opts: ClientOptions) {
    this.base = trimEnd(opts.url, '/');
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return this.opts.apiKey ? { 'x-api-key': this.opts.apiKey, ...extra } : extra;
  }

  get timeoutMs(): number {
    return this.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * A request to `pathname` (or an absolute URL); the response whatever its status, or ApiError(NETWORK). The answer's
   * head must come within the timeout. Idempotent requests are sent again on 429 / 502 / 503 / 504 (after their
   * Retry-After) and when no answer came; other requests on 429 only (the service did nothing with them).
   */
  async raw(pathname: string, init: Req = {}): Promise<Response> {
    const url = /^https?:/.test(pathname) ? pathname : this.base + pathname;
    const headers = init.noKey ? (init.headers ?? {}) : this.headers(init.headers);
    const method = init.method ?? 'GET';
    const { noKey: _noKey, ...rest } = init;
    void _noKey;
    const retries = this.opts.retries ?? 3;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      const stop = new AbortController();
      const idle = idleTimer(this.timeoutMs, () =>
        stop.abort(new DOMException(`no byte for ${this.timeoutMs / 1000} s`, 'TimeoutError')),
      );
      try {
        res = await fetch(url, {
          ...rest,
          headers,
          signal: init.signal ? AbortSignal.any([init.signal, stop.signal]) : stop.signal,
        });
      } catch (err) {
        idle.clear();
        // Only a failure of the network is worth another try: a TypeError of its own (a header value fetch refuses)
        // fails the same way every time.
        const network = (err as { cause?: unknown }).cause !== undefined || (err as Error).name === 'TimeoutError';
        if (init.signal?.aborted || !network || !IDEMPOTENT.has(method) || attempt >= retries)
          throw networkError(`${method} ${url}`, err);
        await sleep(retryDelayMs(undefined, attempt));
        continue;
      }
      const again = res.status === 429 || (IDEMPOTENT.has(method) && RETRY_STATUSES.has(res.status));
      if (again && attempt < retries) {
        idle.clear();
        await res.body?.cancel().catch(() => undefined);
        await sleep(retryDelayMs(res.headers.get('retry-after'), attempt));
        continue;
      }
      if (!res.body) {
        idle.clear();
        return res;
      }
      // The body must keep coming: each chunk restarts the timer, a stall aborts the request (its reader rejects).
      idle.restart();
      const watched = res.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform: (chunk, ctl) => {
            idle.restart();
            ctl.enqueue(chunk);
          },
          flush: () => idle.clear(),
        }),
      );
      return new Response(watched, { status: res.status, statusText: res.statusText, headers: res.headers });
    }
  }

  /**
   * A JSON request; a non-2xx answer throws ApiError with the service's code and message, an answer that is not JSON
   * (a proxy's HTML page) INVALID_RESPONSE, a body cut off or stalled (no byte within the timeout) NETWORK.
   */
  async json<T>(
    pathname: string,
    init: Req & { body?: string } = {},
  ): Promise<{ status: number; body: T; res: Response }> {
    const res = await this.raw(
      pathname,
      init.body !== undefined ? { ...init, headers: { 'content-type': 'application/json', ...init.headers } } : init,
    );
    return { status: res.status, body: await jsonAnswer<T>(res, `${init.method ?? 'GET'} ${pathname}`), res };
  }

  /**
   * A GET whose body is handed on in large blocks (block-get.ts: the socket read into reused buffers, the pull's hot
   * path); a non-2xx answer (other than those in `accept`) throws.
   */
  async getBlocks(pathname: string, headers: Record<string, string>, accept: number[] = []): Promise<BlockBody> {
    const first = new URL(this.base + pathname);
    let url = first;
    let body: BlockBody;
    for (let hop = 0; ; hop++) {
      try {
        // The key goes to the service only: a redirect elsewhere (a presigned S3 URL) is followed without it.
        body = await getBlocks(url, url.origin === first.origin ? this.headers(headers) : headers, this.timeoutMs);
      } catch (err) {
        throw new ApiError(0, 'NETWORK', `GET ${url}: ${(err as Error).message}`);
      }
      const location = body.headers.location;
      if (!REDIRECTS.has(body.status) || !location || hop === MAX_REDIRECTS) break;
      body.destroy();
      url = new URL(location, url);
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new ApiError(0, 'NETWORK', `GET ${first}: redirected to ${url.protocol}`);
    }
    if ((body.status >= 200 && body.status < 300) || accept.includes(body.status)) return body;
    const text = await body.text().catch(() => '');
    const retryAfter = body.headers['retry-after'];
    throw await errorOf(
      new Response(text || null, { status: body.status, headers: retryAfter ? { 'retry-after': retryAfter } : {} }),
    );
  }

  /**
   * OPTIONS /api/uploads, asked before a push needs it: up to what size the service takes resumable uploads
   * (`Tus-Max-Size`). Only the service's own refusal of the key (401 or 403 with its JSON `{code, message}`) or an
   * unreachable service throws; anything else (a proxy that refuses or does not route OPTIONS, no answer within
   * `timeoutMs`) leaves the size unknown, and the uploads find out as before.
   */
  async uploadOptions(timeoutMs = 30_000): Promise<{ maxSize?: number }> {
    let res: Response;
    try {
      res = await this.raw('/api/uploads', {
        method: 'OPTIONS',
        headers: { 'tus-resumable': '1.0.0' },
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      if (err instanceof ApiError && err.message.includes('no answer in time')) return {};
      throw err;
    }
    if (res.status === 401 || res.status === 403) {
      // Not JSON: a proxy's page.
      const body = jsonBody(await res.text().catch(() => ''));
      if ((body?.code === 'UNAUTHORIZED' || body?.code === 'FORBIDDEN') && typeof body.message === 'string') {
        throw new ApiError(res.status, body.code, body.message);
      }
      return {};
    }
    await res.body?.cancel();
    const max = Number(res.headers.get('tus-max-size'));
    return res.ok && Number.isSafeInteger(max) && max > 0 ? { maxSize: max } : {};
  }

  async hashStored(hash: string): Promise<boolean> {
    // Sent as is (`blake3:<hex>` needs no escaping), the form the pipeline's hot-route table answers.
    const res = await this.raw(`/api/assets/hash/${hash}`, { method: 'HEAD' });
    if (res.status === 200) return true;
    if (res.status === 404) return false;
    throw await errorOf(res);
  }

  /**
   * An asset of stored content, by its hash. `POST /api/assets/from-hash` requires at least one tag; an untagged file
   * is created by an upload that names the stored hash and carries no file part (no byte of the file is sent).
   */
  /** `paths`: tree paths for the asset's `metadata.paths` (an instance that does not know the field ignores it). */
  async fromHash(input: { hash: string; name: string; tags: string[]; paths?: string[] }): Promise<Asset> {
    if (input.tags.length > 0)
      return checkAsset(
        (await this.json<Asset>('/api/assets/from-hash', { method: 'POST', body: JSON.stringify(input) })).body,
      );
    const form = new FormData();
    form.set('hash', input.hash);
    form.set('name', input.name);
    for (const p of input.paths ?? []) form.append('path', p);
    return checkAsset(
      await jsonAnswer<Asset>(await this.raw('/api/assets', { method: 'POST', body: form }), 'POST /api/assets'),
    );
  }

  /**
   * POST /api/assets/{id}/tags; the tags that were not there before. An instance without that route (404 other than
   * ASSET_NOT_FOUND) gets a PUT of the whole tag list instead.
   */
  /**
   * Records tree paths of an asset's content (`metadata.paths`); undefined when the instance has no such route (an
   * older one), so the caller stops asking.
   */
  async addPaths(id: string, paths: string[]): Promise<string[] | undefined> {
    try {
      return (
        await this.json<{ paths: string[] }>(`/api/assets/${encodeURIComponent(id)}/paths`, {
          method: 'POST',
          body: JSON.stringify({ paths }),
        })
      ).body.paths;
    } catch (err) {
      if (err instanceof ApiError && (err.status === 404 || err.status === 405) && err.code !== 'ASSET_NOT_FOUND')
        return undefined;
      throw err;
    }
  }

  async addTags(id: string, tags: string[]): Promise<string[]> {
    const path = `/api/assets/${encodeURIComponent(id)}`;
    try {
      return (await this.json<{ added: string[] }>(`${path}/tags`, { method: 'POST', body: JSON.stringify({ tags }) }))
        .body.added;
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404 && err.code !== 'ASSET_NOT_FOUND')) throw err;
    }
    const current = (await this.getAsset(id)).tags;
    const added = tags.filter((t) => !current.includes(t));
    if (added.length) await this.json(path, { method: 'PUT', body: JSON.stringify({ tags: [...current, ...added] }) });
    return added;
  }

  async getAsset(id: string): Promise<Asset> {
    return checkAsset((await this.json<Asset>(`/api/assets/${encodeURIComponent(id)}`)).body);
  }

  async deleteAsset(id: string): Promise<void> {
    await this.json(`/api/assets/${encodeURIComponent(id)}`, { method: 'DELETE' });
  }

  async getTask(id: string): Promise<Task> {
    const task = (await this.json<Task>(`/api/tasks/${encodeURIComponent(id)}`)).body;
    // A status outside the contract's would be followed for ever (never terminal): refused here.
    if (!isObject(task) || typeof task.id !== 'string' || !TASK_STATUSES.has(task.status as string))
      throw invalidResponse(`GET /api/tasks/${id}`, 'not a task');
    return task;
  }

  /**
   * Every asset matching the filter, page by page: by `after=<next_cursor>` where the service sends cursors, else by
   * `offset` while `has_more` (an older instance).
   */
  async *listAll(filter: { tags: string[]; nameContains?: string; limit?: number }): AsyncGenerator<Asset> {
    const pageSize = Math.min(filter.limit ?? Infinity, this.opts.pageSize ?? 500, 500);
    let left = filter.limit ?? Infinity;
    let cursor: string | undefined;
    let offset = 0;
    for (;;) {
      const q = new URLSearchParams({ limit: String(Math.min(pageSize, left)), sort: 'created_at', order: 'asc' });
      if (filter.tags.length) q.set('include_tags', filter.tags.join(','));
      if (filter.nameContains) q.set('name_contains', filter.nameContains);
      if (cursor !== undefined) q.set('after', cursor);
      else q.set('offset', String(offset));
      const page = checkPage((await this.json<AssetPage>(`/api/assets?${q}`)).body);
      for (const a of page.assets) {
        yield a;
        if (--left <= 0) return;
      }
      offset += page.assets.length;
      // An empty page ends the listing whatever it says, and a cursor that does not move would list for ever.
      if (page.assets.length === 0) return;
      if (page.next_cursor !== undefined && page.next_cursor === cursor)
        throw invalidResponse('GET /api/assets', 'a page whose next_cursor is the one asked for');
      if (page.next_cursor !== undefined) cursor = page.next_cursor;
      else if (!page.has_more || page.assets.length === 0) return;
      else cursor = undefined;
    }
  }
}

/** The error codes of the statuses answered without a body (HEAD). */
const CODE_OF_STATUS: Record<number, string> = {
  400: 'INVALID_HASH',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  429: 'RATE_LIMITED',
  503: 'SERVICE_UNAVAILABLE',
};

/** An error body's JSON (the service's `{code, message}`), or undefined when the text is not JSON (or is `null`). */
export function jsonBody(text: string): { code?: unknown; message?: unknown } | undefined {
  try {
    const body = JSON.parse(text) as unknown;
    return body === null ? undefined : typeof body === 'object' ? (body as { code?: unknown; message?: unknown }) : {};
  } catch {
    return undefined;
  }
}

/** The ApiError of a non-2xx response: the body's `{code, message}` where it has them. */
export async function errorOf(res: Response): Promise<ApiError> {
  let code = CODE_OF_STATUS[res.status] ?? `HTTP_${res.status}`;
  let message = res.statusText || 'request failed';
  const text = await res.text().catch(() => '');
  const body = jsonBody(text);
  if (!body) {
    if (text) message = text.slice(0, 200);
  } else {
    if (typeof body.code === 'string') code = body.code;
    if (typeof body.message === 'string') message = body.message;
  }
  return new ApiError(res.status, code, message, res.headers.get('retry-after') ?? undefined);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const invalidResponse = (what: string, why: string): ApiError =>
  new ApiError(0, 'INVALID_RESPONSE', `${what}: the service's answer is ${why}`);

/** The JSON of a 2xx answer; INVALID_RESPONSE (with the start of the text) when it is not JSON. */
function parseJson<T>(text: string, status: number, what: string): T {
  if (text === '') return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    const start = text.slice(0, 80).replace(/\s+/g, ' ');
    throw new ApiError(
      status,
      'INVALID_RESPONSE',
      `${what}: the answer is not JSON (it starts ${JSON.stringify(start)}; a proxy or another server?)`,
    );
  }
}

const HASH = /^(blake3|sha256):[0-9a-f]{64}$/;
const TASK_STATUSES = new Set(['created', 'running', 'completed', 'failed', 'cancelled']);

/**
 * An asset as the CLI relies on it (its id goes into URLs, its size and hash decide what a pull keeps); anything else
 * is INVALID_RESPONSE rather than a TypeError later.
 */
export function checkAsset(a: unknown): Asset {
  const ok =
    isObject(a) &&
    typeof a.id === 'string' &&
    /^[A-Za-z0-9_-]{1,128}$/.test(a.id) &&
    typeof a.name === 'string' &&
    Number.isSafeInteger(a.size) &&
    (a.size as number) >= 0 &&
    typeof a.asset_hash === 'string' &&
    HASH.test(a.asset_hash) &&
    Array.isArray(a.tags) &&
    a.tags.every((t) => typeof t === 'string') &&
    (a.loader_path === undefined || typeof a.loader_path === 'string');
  if (!ok) throw invalidResponse('an asset', `not an asset (${JSON.stringify(a)?.slice(0, 120)})`);
  return a as Asset;
}

function checkPage(page: unknown): AssetPage {
  if (!isObject(page) || !Array.isArray(page.assets)) throw invalidResponse('GET /api/assets', 'not a page of assets');
  page.assets.forEach(checkAsset);
  if (page.next_cursor !== undefined && typeof page.next_cursor !== 'string')
    throw invalidResponse('GET /api/assets', 'a page with a next_cursor that is not text');
  return page as unknown as AssetPage;
}
