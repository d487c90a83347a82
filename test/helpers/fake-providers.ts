import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Local stand-ins for Hugging Face, Civitai and the CDN they redirect to, each on its own 127.0.0.1 port. They
 * record every request (headers, range, bytes sent, whether the client went away) so tests can assert on them.
 */

export interface CdnFileOptions {
  /** Bytes per second (the file is sent in 16 KiB slices). */
  throttle?: number;
  /** On the first GET only: send this many bytes, then destroy the socket. */
  dropAfter?: number;
  /** Answer every Range request with the whole file (200). */
  ignoreRange?: boolean;
  /** Like a presigned S3 URL: any Authorization header is refused (400). */
  rejectAuthorization?: boolean;
  /** Answer the first GETs with this status (e.g. 503) and an optional Retry-After. */
  failFirst?: { status: number; times: number; retryAfter?: string };
  /** A strong ETag (default: derived from the bytes). */
  etag?: string;
  contentDisposition?: string;
}

export interface CdnRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  status: number;
  start: number;
  bytesSent: number;
  aborted: boolean;
  done: boolean;
}

interface CdnFile extends CdnFileOptions {
  data: Buffer;
  gets: number;
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

export class FakeCdn {
  url = '';
  readonly requests: CdnRequest[] = [];
  private readonly files = new Map<string, CdnFile>();
  private readonly server = http.createServer((req, res) => this.handle(req, res));

  async start(): Promise<this> {
    this.url = await listen(this.server);
    return this;
  }

  /** Serves `data` at /files/<key>; returns its URL. Replaces an earlier file of that key. */
  put(key: string, data: Buffer, opts: CdnFileOptions = {}): string {
    this.files.set(key, { ...opts, data, gets: 0 });
    return `${this.url}/files/${key}`;
  }

  update(key: string, opts: Partial<CdnFileOptions> & { data?: Buffer }): void {
    Object.assign(this.files.get(key)!, opts);
  }

  requestsFor(key: string): CdnRequest[] {
    return this.requests.filter((r) => r.path === `/files/${key}`);
  }

  /** Total bytes of `key` sent over every request. */
  bytesSent(key: string): number {
    return this.requestsFor(key).reduce((n, r) => n + r.bytesSent, 0);
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = new URL(req.url!, 'http://x').pathname;
    const rec: CdnRequest = {
      method: req.method!,
      path,
      headers: req.headers,
      status: 0,
      start: 0,
      bytesSent: 0,
      aborted: false,
      done: false,
    };
    this.requests.push(rec);
    const file = this.files.get(decodeURIComponent(path.replace(/^\/files\//, '')));
    const answer = (status: number, headers: Record<string, string> = {}, body = '') => {
      rec.status = status;
      res.writeHead(status, headers).end(body);
      rec.done = true;
    };
    const loop = /^\/loop\/(\d+)$/.exec(path);
    if (loop) return answer(302, { location: `/loop/${Number(loop[1]) + 1}` });
    if (!file || !path.startsWith('/files/')) return answer(404, {}, 'no such file');
    if (file.rejectAuthorization && req.headers.authorization) {
      return answer(
        400,
        { 'content-type': 'application/xml' },
        '<Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed</Message></Error>',
      );
    }
    if (req.method === 'GET') file.gets++;
    if (file.failFirst && req.method === 'GET' && file.gets <= file.failFirst.times) {
      return answer(
        file.failFirst.status,
        file.failFirst.retryAfter ? { 'retry-after': file.failFirst.retryAfter } : {},
        'try later',
      );
    }
    const etag = file.etag ?? `"${crypto.createHash('md5').update(file.data).digest('hex')}"`;
    const size = file.data.length;
    let start = 0;
    let status = 200;
    const headers: Record<string, string> = {
      etag,
      'accept-ranges': 'bytes',
      'content-type': 'application/octet-stream',
    };
    if (file.contentDisposition) headers['content-disposition'] = file.contentDisposition;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const ifRange = req.headers['if-range'];
    if (range && !file.ignoreRange && (!ifRange || ifRange === etag)) {
      start = Number(range[1]);
      if (start >= size) return answer(416, { 'content-range': `bytes */${size}` });
      status = 206;
      headers['content-range'] = `bytes ${start}-${size - 1}/${size}`;
    }
    headers['content-length'] = String(size - start);
    rec.status = status;
    rec.start = start;
    res.writeHead(status, headers);
    if (req.method === 'HEAD') {
      res.end();
      rec.done = true;
      return;
    }
    res.on('close', () => {
      if (!res.writableFinished) rec.aborted = true;
    });
    const dropAt = file.dropAfter !== undefined && file.gets === 1 ? file.dropAfter : undefined;
    this.send(
      res,
      rec,
      file.data.subarray(start),
      file.throttle,
      dropAt === undefined ? undefined : Math.max(0, dropAt - start),
    );
  }

  private send(
    res: http.ServerResponse,
    rec: CdnRequest,
    data: Buffer,
    throttle: number | undefined,
    dropAfter: number | undefined,
  ): void {
    const slice = throttle ? 16 * 1024 : 256 * 1024;
    const delay = throttle ? (slice / throttle) * 1000 : 0;
    let off = 0;
    const next = () => {
      if (res.destroyed) return;
      if (dropAfter !== undefined && off >= dropAfter) {
        res.socket?.destroy();
        return;
      }
      if (off >= data.length) {
        res.end();
        rec.done = true;
        return;
      }
      let end = Math.min(data.length, off + slice);
      if (dropAfter !== undefined) end = Math.min(end, dropAfter);
      const chunk = data.subarray(off, end);
      off = end;
      rec.bytesSent += chunk.length;
      if (dropAfter !== undefined && off >= dropAfter) {
        // Let the bytes reach the client, then cut the connection.
        res.write(chunk, () => setTimeout(() => res.socket?.destroy(), 50));
        return;
      }
      const ok = res.write(chunk);
      if (delay > 0) setTimeout(next, delay);
      else if (ok) setImmediate(next);
      else res.once('drain', next);
    };
    next();
  }
}

export interface HfFile {
  /** Key of the file on the CDN (LFS); a file without one is a small git file served directly. */
  cdnKey?: string;
  data?: Buffer;
  /** Overrides the X-Linked-Etag (to simulate a wrong provider hash). */
  sha256?: string;
  /** Redirect without X-Linked-* headers (the provider states no hash). */
  hideHash?: boolean;
  /** Redirect here instead of to the file on the CDN. */
  location?: string;
}

/** Hugging Face: HEAD/GET /<repo>/resolve/<rev>/<path>, 302 to the CDN with X-Linked-Etag / X-Linked-Size. */
export class FakeHuggingFace {
  url = '';
  readonly requests: { method: string; path: string; authorization?: string }[] = [];
  readonly files = new Map<string, HfFile>();
  /** Gated repositories ("owner/name") and the token that opens them. */
  readonly gated = new Map<string, string>();
  private readonly server = http.createServer((req, res) => this.handle(req, res));

  constructor(private readonly cdn: FakeCdn) {}

  async start(): Promise<this> {
    this.url = await listen(this.server);
    return this;
  }

  /** Adds an LFS file served through the CDN; returns its /resolve/ URL. */
  lfs(repoPath: string, data: Buffer, cdnOpts: CdnFileOptions = {}, hf: { sha256?: string } = {}): string {
    const key = `hf-${crypto.randomBytes(6).toString('hex')}`;
    this.cdn.put(key, data, cdnOpts);
    this.files.set(repoPath, { cdnKey: key, data, sha256: hf.sha256 });
    return `${this.url}/${repoPath.replace(/^([^/]+\/[^/]+)\//, '$1/resolve/main/')}`;
  }

  cdnKeyOf(repoPath: string): string {
    return this.files.get(repoPath)!.cdnKey!;
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = decodeURIComponent(new URL(req.url!, 'http://x').pathname);
    this.requests.push({ method: req.method!, path, authorization: req.headers.authorization });
    const m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(path);
    if (!m) return void res.writeHead(404, { 'x-error-code': 'RepoNotFound' }).end();
    const [, repo, , file] = m;
    const token = this.gated.get(repo!);
    if (token !== undefined && req.headers.authorization !== `Bearer ${token}`) {
      return void res
        .writeHead(401, { 'x-error-code': 'GatedRepo', 'x-error-message': `Access to model ${repo} is restricted.` })
        .end('gated');
    }
    const f = this.files.get(`${repo}/${file}`);
    if (!f)
      return void res.writeHead(404, { 'x-error-code': 'EntryNotFound', 'x-error-message': 'Entry not found' }).end();
    if (!f.cdnKey && !f.location) {
      return void res
        .writeHead(200, { 'content-length': String(f.data!.length), etag: '"gitsha1"' })
        .end(req.method === 'HEAD' ? undefined : f.data);
    }
    const sha = f.sha256 ?? crypto.createHash('sha256').update(f.data!).digest('hex');
    const linked = f.hideHash
      ? {}
      : { 'x-linked-etag': `"${sha}"`, 'x-linked-size': String(f.data!.length), etag: `"${sha}"` };
    res
      .writeHead(302, { location: f.location ?? `${this.cdn.url}/files/${f.cdnKey}?X-Amz-Signature=fake`, ...linked })
      .end();
  }
}

export interface CivitaiVersion {
  data: Buffer;
  name: string;
  earlyAccess?: boolean;
  /** Overrides the listed SHA-256. */
  sha256?: string;
  cdn?: CdnFileOptions;
  /** The model's type as Civitai lists it (`Checkpoint`, `LORA`, `TextualInversion`, ...). */
  modelType?: string;
  modelName?: string;
  /** The version's first preview image, served at /images/<id>.png. */
  image?: Buffer;
  /** The model this version belongs to: /api/v1/models/<modelId> lists its versions, the latest added first. */
  modelId?: number;
}

/** Civitai: /api/v1/model-versions/{id} with file hashes; /api/download/models/{id} → 307 to a presigned CDN URL. */
export class FakeCivitai {
  url = '';
  readonly requests: { method: string; path: string; authorization?: string }[] = [];
  readonly versions = new Map<string, CivitaiVersion & { cdnKey: string }>();
  token = 'civitai-token-1';
  private readonly server = http.createServer((req, res) => this.handle(req, res));

  constructor(private readonly cdn: FakeCdn) {}

  async start(): Promise<this> {
    this.url = await listen(this.server);
    return this;
  }

  add(id: number, v: CivitaiVersion): string {
    const cdnKey = `civitai-${id}-${crypto.randomBytes(4).toString('hex')}`;
    this.cdn.put(cdnKey, v.data, { rejectAuthorization: true, ...v.cdn });
    this.versions.set(String(id), { ...v, cdnKey });
    return `${this.url}/api/download/models/${id}?type=Model&format=SafeTensor`;
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url!, 'http://x');
    this.requests.push({ method: req.method!, path: url.pathname, authorization: req.headers.authorization });
    const img = /^\/images\/(\d+)\.png$/.exec(url.pathname);
    if (img) {
      const image = this.versions.get(img[1]!)?.image;
      if (!image) return void res.writeHead(404).end();
      return void res
        .writeHead(200, { 'content-type': 'image/png', 'content-length': String(image.length) })
        .end(image);
    }
    const model = /^\/api\/v1\/models\/(\d+)$/.exec(url.pathname);
    if (model) {
      const ids = [...this.versions]
        .filter(([, v]) => v.modelId === Number(model[1]))
        .map(([id]) => ({ id: Number(id), name: `v${id}` }));
      if (ids.length === 0)
        return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"No model with id"}');
      return void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ id: Number(model[1]), name: 'A model', modelVersions: ids.reverse() }));
    }
    const api = /^\/api\/v1\/model-versions\/(\d+)$/.exec(url.pathname);
    const dl = /^\/api\/download\/models\/(\d+)$/.exec(url.pathname);
    const v = this.versions.get((api ?? dl)?.[1] ?? '');
    if (!v) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"No model with id"}');
    if (api) {
      const body = {
        id: Number(api[1]),
        name: 'v1.0',
        model: { name: v.modelName ?? 'A model', type: v.modelType ?? 'Checkpoint' },
        images: v.image ? [{ url: `${this.url}/images/${api[1]}.png`, type: 'image' }] : [],
        files: [
          {
            id: 1,
            name: 'other.pt',
            type: 'Training Data',
            primary: false,
            hashes: { SHA256: 'AB'.repeat(32) },
            metadata: {},
          },
          {
            id: 2,
            name: v.name,
            type: 'Model',
            primary: true,
            sizeKB: v.data.length / 1024,
            hashes: {
              SHA256: (v.sha256 ?? crypto.createHash('sha256').update(v.data).digest('hex')).toUpperCase(),
              AutoV2: 'ABCDEF0123',
            },
            metadata: { format: 'SafeTensor', size: 'pruned', fp: 'fp16' },
          },
        ],
      };
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    }
    if (v.earlyAccess && req.headers.authorization !== `Bearer ${this.token}`) {
      return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"Unauthorized"}');
    }
    const disposition = encodeURIComponent(`attachment; filename="${v.name}"`);
    res
      .writeHead(307, {
        location: `${this.cdn.url}/files/${v.cdnKey}?response-content-disposition=${disposition}&X-Amz-Signature=sig`,
      })
      .end();
  }
}

export interface FakeProviders {
  cdn: FakeCdn;
  hf: FakeHuggingFace;
  civitai: FakeCivitai;
  /** Service settings that point at these fakes. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startFakeProviders(): Promise<FakeProviders> {
  const cdn = await new FakeCdn().start();
  const hf = await new FakeHuggingFace(cdn).start();
  const civitai = await new FakeCivitai(cdn).start();
  return {
    cdn,
    hf,
    civitai,
    env: {
      HF_ENDPOINT: hf.url,
      CIVITAI_ENDPOINT: civitai.url,
      HF_TOKEN: 'hf-token-1',
      CIVITAI_API_TOKEN: civitai.token,
    },
    close: async () => {
      await Promise.all([cdn.close(), hf.close(), civitai.close()]);
    },
  };
}

/** Deterministic pseudo-random bytes (incompressible, different per seed). */
export function bytes(size: number, seed = 1): Buffer {
  const out = Buffer.alloc(size);
  let block = crypto.createHash('sha256').update(String(seed)).digest();
  for (let off = 0; off < size; off += block.length) {
    block.copy(out, off);
    block = crypto.createHash('sha256').update(block).digest();
  }
  return out;
}
