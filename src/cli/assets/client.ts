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
}

type Req = Omit<RequestInit, 'headers'> & { headers?: Record<string, string>; noKey?: boolean };

export class ApiClient {
  readonly base: string;

  constructor(private readonly opts: ClientOptions) {
    this.base = opts.url.replace(/\/+$/, '');
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return this.opts.apiKey ? { 'x-api-key': this.opts.apiKey, ...extra } : extra;
  }

  /** A request to `pathname` (or an absolute URL); the response whatever its status, or ApiError(NETWORK). */
  async raw(pathname: string, init: Req = {}): Promise<Response> {
    const url = /^https?:/.test(pathname) ? pathname : this.base + pathname;
    const headers = init.noKey ? (init.headers ?? {}) : this.headers(init.headers);
    try {
      const { noKey: _noKey, ...rest } = init;
      void _noKey;
      return await fetch(url, { ...rest, headers });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new ApiError(0, 'NETWORK', `${init.method ?? 'GET'} ${url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
  }

  /** A JSON request; a non-2xx answer throws ApiError with the service's code and message. */
  async json<T>(pathname: string, init: Req & { body?: string } = {}): Promise<{ status: number; body: T; res: Response }> {
    const res = await this.raw(pathname, init.body !== undefined ? { ...init, headers: { 'content-type': 'application/json', ...init.headers } } : init);
    if (!res.ok) throw await errorOf(res);
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, res };
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
        body = await getBlocks(url, url.origin === first.origin ? this.headers(headers) : headers);
      } catch (err) {
        throw new ApiError(0, 'NETWORK', `GET ${url}: ${(err as Error).message}`);
      }
      const location = body.headers.location;
      if (!REDIRECTS.has(body.status) || !location || hop === MAX_REDIRECTS) break;
      body.destroy();
      url = new URL(location, url);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ApiError(0, 'NETWORK', `GET ${first}: redirected to ${url.protocol}`);
    }
    if ((body.status >= 200 && body.status < 300) || accept.includes(body.status)) return body;
    const text = await body.text().catch(() => '');
    throw await errorOf(new Response(text || null, { status: body.status }));
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
      res = await this.raw('/api/uploads', { method: 'OPTIONS', headers: { 'tus-resumable': '1.0.0' }, signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      if (err instanceof ApiError && /TimeoutError|aborted/i.test(err.message)) return {};
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
  async fromHash(input: { hash: string; name: string; tags: string[] }): Promise<Asset> {
    if (input.tags.length > 0) return (await this.json<Asset>('/api/assets/from-hash', { method: 'POST', body: JSON.stringify(input) })).body;
    const form = new FormData();
    form.set('hash', input.hash);
    form.set('name', input.name);
    const res = await this.raw('/api/assets', { method: 'POST', body: form });
    if (!res.ok) throw await errorOf(res);
    return (await res.json()) as Asset;
  }

  /**
   * POST /api/assets/{id}/tags; the tags that were not there before. An instance without that route (404 other than
   * ASSET_NOT_FOUND) gets a PUT of the whole tag list instead.
   */
  async addTags(id: string, tags: string[]): Promise<string[]> {
    const path = `/api/assets/${encodeURIComponent(id)}`;
    try {
      return (await this.json<{ added: string[] }>(`${path}/tags`, { method: 'POST', body: JSON.stringify({ tags }) })).body.added;
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404 && err.code !== 'ASSET_NOT_FOUND')) throw err;
    }
    const current = (await this.getAsset(id)).tags;
    const added = tags.filter((t) => !current.includes(t));
    if (added.length) await this.json(path, { method: 'PUT', body: JSON.stringify({ tags: [...current, ...added] }) });
    return added;
  }

  async getAsset(id: string): Promise<Asset> {
    return (await this.json<Asset>(`/api/assets/${encodeURIComponent(id)}`)).body;
  }

  async deleteAsset(id: string): Promise<void> {
    await this.json(`/api/assets/${encodeURIComponent(id)}`, { method: 'DELETE' });
  }

  async getTask(id: string): Promise<Task> {
    return (await this.json<Task>(`/api/tasks/${encodeURIComponent(id)}`)).body;
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
      const page = (await this.json<AssetPage>(`/api/assets?${q}`)).body;
      for (const a of page.assets) {
        yield a;
        if (--left <= 0) return;
      }
      offset += page.assets.length;
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
  return new ApiError(res.status, code, message);
}
