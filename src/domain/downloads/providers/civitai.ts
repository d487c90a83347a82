import { dropBody, FetchError } from '../../../infra/http-fetch';
import { DomainError } from '../../errors';
import {
  HEX64,
  parseEndpoint,
  pathBelow,
  safeFileName,
  statusError,
  type DownloadProvider,
  type ProviderDeps,
  type RemoteDescription,
  type SourceMetadata,
} from './provider';

/** The query parameters that select one file of a model version; anything else (a `token`, say) is dropped. */
const FILE_PARAMS = ['type', 'format', 'size', 'fp', 'fileId'] as const;

interface CivitaiFile {
  id?: number;
  name?: string;
  type?: string;
  primary?: boolean;
  hashes?: Record<string, string>;
  sizeKB?: number;
  metadata?: { format?: string; size?: string; fp?: string };
}

interface ModelDocument {
  modelVersions?: { id?: number }[];
}

interface VersionDocument {
  name?: string;
  files?: CivitaiFile[];
  model?: { name?: string; type?: string };
  images?: { url?: string; type?: string }[];
}

/**
 * Civitai (or CIVITAI_ENDPOINT). `GET /api/v1/model-versions/{id}` lists the version's files with their SHA-256 and
 * BLAKE3; the download endpoint redirects to a presigned URL that must not get the token.
 */
export class CivitaiProvider implements DownloadProvider {
  readonly name = 'civitai' as const;
  readonly origin: string;
  private readonly ep: { origin: string; prefix: string };

  constructor(private readonly deps: ProviderDeps) {
    this.ep = parseEndpoint(deps.endpoint);
    this.origin = this.ep.origin;
  }

  canonicalize(url: URL): URL | undefined {
    const rest = pathBelow(url, this.ep);
    if (rest === undefined) return undefined;
    const versionId =
      /^\/api\/download\/models\/(\d{1,12})\/?$/.exec(rest)?.[1] ?? modelPageVersion(rest, url.searchParams);
    if (!versionId) {
      throw new DomainError(
        'SOURCE_NOT_ALLOWED',
        'a Civitai URL must name a model version: .../api/download/models/<versionId> or .../models/<modelId>?modelVersionId=<versionId>',
        { field: 'source_url' },
      );
    }
    const out = new URL(`${this.ep.origin}${this.ep.prefix}/api/download/models/${versionId}`);
    for (const p of FILE_PARAMS) {
      const v = url.searchParams.get(p);
      if (v) out.searchParams.set(p, v);
    }
    return out;
  }

  auth() {
    return this.deps.token
      ? { origin: this.origin, headers: { authorization: `Bearer ${this.deps.token}` } }
      : undefined;
  }

  async probe(url: URL, signal?: AbortSignal): Promise<SourceMetadata> {
    const doc = await this.versionDocument(url, signal, false);
    const file = doc && pickFile(Array.isArray(doc.files) ? doc.files : [], url.searchParams);
    if (!file) return {};
    const hashes = Object.fromEntries(
      Object.entries(file.hashes ?? {}).map(([k, v]) => [k.toUpperCase(), String(v).toLowerCase()]),
    );
    return {
      fileName: safeFileName(file.name),
      sha256: hashes.SHA256 && HEX64.test(hashes.SHA256) ? hashes.SHA256 : undefined,
      blake3: hashes.BLAKE3 && HEX64.test(hashes.BLAKE3) ? hashes.BLAKE3 : undefined,
    };
  }

  /**
   * The model-version document (file name, size, model type, images), then a HEAD on the download URL, not
   * followed, which tells whether this key may download it (early access) without fetching a byte.
   */
  async describe(url: URL, signal?: AbortSignal): Promise<RemoteDescription> {
    const doc = (await this.versionDocument(url, signal, true))!;
    const file = pickFile(Array.isArray(doc.files) ? doc.files : [], url.searchParams);
    let res;
    try {
      res = await this.deps.fetcher.open(url, { method: 'HEAD', follow: false, auth: this.auth(), signal });
    } catch (err) {
      if (err instanceof FetchError)
        throw new DomainError('DOWNLOAD_FAILED', `Civitai could not be asked: ${err.message}`);
      throw err;
    }
    dropBody(res.body);
    if (res.status >= 400) throw statusError(res.status, res.headers, 'Civitai');
    const image = (doc.images ?? []).find(
      (i) => typeof i?.url === 'string' && (i.type === undefined || i.type === 'image'),
    );
    const sizeKB = file?.sizeKB;
    const modelName = [doc.model?.name, doc.name]
      .filter((x): x is string => typeof x === 'string' && x.trim() !== '')
      .join(' ');
    return {
      fileName: safeFileName(file?.name),
      size:
        typeof sizeKB === 'number' && Number.isFinite(sizeKB) && sizeKB >= 0 ? Math.round(sizeKB * 1024) : undefined,
      modelTypes: typeof doc.model?.type === 'string' ? [doc.model.type] : [],
      displayName: modelName || undefined,
      previewImageUrl: image?.url,
    };
  }

  /** A model page without `modelVersionId`: the model's newest version (`GET /api/v1/models/{id}`, newest first). */
  locate(url: URL, signal?: AbortSignal): Promise<URL> | undefined {
    const rest = pathBelow(url, this.ep);
    const modelId = rest === undefined ? undefined : MODEL_PAGE.exec(rest)?.[1];
    if (!modelId || url.searchParams.has('modelVersionId')) return undefined;
    return this.apiDocument<ModelDocument>(`/api/v1/models/${modelId}`, signal, true).then((doc) => {
      const versions = Array.isArray(doc?.modelVersions) ? doc.modelVersions : [];
      const id = versions.map((v) => v?.id).find((v) => Number.isSafeInteger(v) && v! > 0);
      if (id === undefined)
        throw new DomainError('SOURCE_NOT_FOUND', `Civitai model ${modelId} has no version to download`);
      // With the page's query: canonicalize keeps its file selectors (?type=VAE, ?format=...), as on a download URL.
      const download = new URL(`${this.ep.origin}${this.ep.prefix}/api/download/models/${id}`);
      download.search = url.search;
      return download;
    });
  }

  /** GET /api/v1/model-versions/{id}; `strict`: failures are errors instead of "states nothing". */
  private async versionDocument(
    url: URL,
    signal: AbortSignal | undefined,
    strict: boolean,
  ): Promise<VersionDocument | undefined> {
    const versionId = /\/api\/download\/models\/(\d+)/.exec(url.pathname)?.[1];
    if (!versionId) return strict ? {} : undefined;
    return this.apiDocument<VersionDocument>(`/api/v1/model-versions/${versionId}`, signal, strict);
  }

  private async apiDocument<T extends object>(
    path: string,
    signal: AbortSignal | undefined,
    strict: boolean,
  ): Promise<T | undefined> {
    const api = new URL(`${this.ep.origin}${this.ep.prefix}${path}`);
    let res;
    try {
      res = await this.deps.fetcher.open(api, { auth: this.auth(), headers: { accept: 'application/json' }, signal });
    } catch (err) {
      // Unreachable or too slow: the download itself finds out, and retries.
      if (err instanceof FetchError && !strict) return undefined;
      if (err instanceof FetchError)
        throw new DomainError('DOWNLOAD_FAILED', `Civitai could not be asked: ${err.message}`);
      throw err;
    }
    if (res.status < 200 || res.status >= 300) {
      dropBody(res.body);
      const err = statusError(res.status, res.headers, 'Civitai');
      if (strict || err.code === 'SOURCE_NOT_FOUND' || err.code === 'SOURCE_AUTH_REQUIRED') throw err;
      return undefined;
    }
    try {
      const chunks: Buffer[] = [];
      let n = 0;
      for await (const c of res.body) {
        n += c.length;
        if (n > 8 << 20) throw new Error('Civitai document too large');
        chunks.push(c);
      }
      const doc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as T;
      return doc && typeof doc === 'object' ? doc : strict ? ({} as T) : undefined;
    } catch {
      if (strict) throw new DomainError('DOWNLOAD_FAILED', `Civitai answered ${path} with an unreadable document`);
      return undefined;
    }
  }
}

/** A model page as users copy it from the browser (what the ComfyUI import wizard passes on unchanged). */
const MODEL_PAGE = /^\/models\/(\d{1,12})(?:\/[^/]*)?\/?$/;

/** `/models/<modelId>[/<slug>]?modelVersionId=<versionId>` names the version's primary file, like its download URL. */
function modelPageVersion(path: string, q: URLSearchParams): string | undefined {
  if (!MODEL_PAGE.test(path)) return undefined;
  return /^\d{1,12}$/.exec(q.get('modelVersionId') ?? '')?.[0];
}

/**
 * The file the download URL selects: by `fileId`, else the files matching every given `type/format/size/fp`, the
 * primary one first. When the selection is ambiguous or empty nothing is claimed (better no check than a wrong one).
 */
function pickFile(files: CivitaiFile[], q: URLSearchParams): CivitaiFile | undefined {
  const fileId = q.get('fileId');
  if (fileId) return files.find((f) => String(f.id) === fileId);
  const wanted: [string, (f: CivitaiFile) => string | undefined][] = [
    ['type', (f) => f.type],
    ['format', (f) => f.metadata?.format],
    ['size', (f) => f.metadata?.size],
    ['fp', (f) => f.metadata?.fp],
  ];
  const given = wanted.filter(([k]) => q.get(k));
  const candidates = files.filter((f) => given.every(([k, get]) => get(f)?.toLowerCase() === q.get(k)!.toLowerCase()));
  if (given.length === 0) return files.find((f) => f.primary) ?? (files.length === 1 ? files[0] : undefined);
  return candidates.find((f) => f.primary) ?? (candidates.length === 1 ? candidates[0] : undefined);
}
