import type { FetchOptions, HttpFetcher } from '../../../infra/http-fetch';
import { headerText } from '../../../infra/http-fetch';
import { DomainError } from '../../errors';
import { trimEnd } from '../../input';

/** What a provider states about a file before any byte of it is fetched; every field is optional. */
export interface SourceMetadata {
  fileName?: string;
  size?: number;
  /** Lower-case hex. */
  sha256?: string;
  blake3?: string;
}

/**
 * What the import wizard shows about a file (GET /api/assets/remote-metadata), learnt without fetching a byte of it.
 */
export interface RemoteDescription {
  fileName?: string;
  /** Exact (Hugging Face) or as the provider lists it (Civitai, in KB); undefined when unknown. */
  size?: number;
  contentType?: string;
  /** The provider's model type (Civitai `model.type`, e.g. `LORA`) or, on Hugging Face, the file's folder names. */
  modelTypes?: string[];
  /** A human name of the model (Civitai `model.name` + version name). */
  displayName?: string;
  /** The provider's first preview image of the model. */
  previewImageUrl?: string;
}

/**
 * A model-hosting site downloads may come from. One implementation per site; the download code knows nothing else
 * about them.
 */
export interface DownloadProvider {
  readonly name: 'huggingface' | 'civitai';
  /** The origin the token is sent to (and the one trusted even when it is a private address). */
  readonly origin: string;
  /**
   * The canonical download URL (what is fetched, deduplicated and remembered), or undefined when `url` is not on
   * this provider's endpoint. Throws SOURCE_NOT_ALLOWED for the provider's URLs that name no file.
   */
  canonicalize(url: URL): URL | undefined;
  /**
   * For a page URL whose file only the provider's API can tell (a Civitai model page without a version: its newest
   * version), that file's download URL, for `canonicalize`; undefined, with no request made, for every other URL.
   */
  locate?(url: URL, signal?: AbortSignal): Promise<URL> | undefined;
  /**
   * Hash, size and name before downloading. Throws SOURCE_AUTH_REQUIRED / SOURCE_NOT_FOUND when the provider says
   * so; a provider that cannot be reached gives `{}` (the download itself will retry).
   */
  probe(url: URL, signal?: AbortSignal): Promise<SourceMetadata>;
  /**
   * The import wizard's look-up: the provider's metadata requests only (never the file's bytes). Throws
   * SOURCE_AUTH_REQUIRED / SOURCE_NOT_FOUND when the provider says so, DOWNLOAD_FAILED when it cannot be asked.
   */
  describe(url: URL, signal?: AbortSignal): Promise<RemoteDescription>;
  /** Authentication for requests to `origin`, if a token is configured. */
  auth(): FetchOptions['auth'];
}

export interface ProviderDeps {
  fetcher: HttpFetcher;
  endpoint: string;
  token: string | undefined;
}

/** `https://host/prefix` → the origin and the path prefix ('' at the root). */
export function parseEndpoint(endpoint: string): { origin: string; prefix: string } {
  const u = new URL(endpoint);
  return { origin: u.origin, prefix: trimEnd(u.pathname, '/') };
}

/** Path of `url` below the endpoint's prefix, or undefined when `url` is elsewhere. */
export function pathBelow(url: URL, ep: { origin: string; prefix: string }): string | undefined {
  if (url.origin !== ep.origin) return undefined;
  if (ep.prefix === '') return url.pathname;
  return url.pathname.startsWith(ep.prefix + '/') ? url.pathname.slice(ep.prefix.length) : undefined;
}

export const HEX64 = /^[a-f0-9]{64}$/;

/** The file name a `Content-Disposition` value carries (RFC 6266 `filename*` first), made safe to store. */
export function fileNameFromDisposition(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const star = /filename\*\s*=\s*(?:[\w-]+)?'[^']*'([^;]+)/i.exec(value);
  let name: string | undefined;
  if (star) {
    try {
      name = decodeURIComponent(star[1]!.trim().replace(/^"|"$/g, ''));
    } catch {
      name = undefined;
    }
  }
  if (!name) {
    const plain = /filename\s*=\s*("((?:[^"\\]|\\.)*)"|[^;]+)/i.exec(value);
    if (plain) name = plain[2] !== undefined ? plain[2].replace(/\\(.)/g, '$1') : plain[1]!.trim();
  }
  return safeFileName(name);
}

/** The last path segment, no directories, no control characters, at most 255 characters. */
export function safeFileName(name: string | undefined): string | undefined {
  if (!name) return undefined;
  const base = name
    .split(/[/\\]/)
    .pop()!
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .trim();
  if (base === '' || base === '.' || base === '..') return undefined;
  return base.slice(0, 255);
}

export function lastSegment(url: URL): string | undefined {
  const seg = url.pathname.split('/').filter(Boolean).pop();
  if (!seg) return undefined;
  try {
    return safeFileName(decodeURIComponent(seg));
  } catch {
    return safeFileName(seg);
  }
}

/** A download failure, with whether trying again can help. */
export class SourceError extends DomainError {
  constructor(
    code: 'SOURCE_AUTH_REQUIRED' | 'SOURCE_NOT_FOUND' | 'DOWNLOAD_FAILED' | 'HASH_MISMATCH' | 'PAYLOAD_TOO_LARGE',
    message: string,
    readonly retryable = false,
    readonly retryAfterMs?: number,
  ) {
    super(code, message);
  }
}

/** A non-2xx answer of a provider or its CDN: 401/403 need a token, 404/410 are gone, 429/5xx are worth a retry. */
export function statusError(
  status: number,
  headers: Record<string, string | string[] | undefined>,
  where: string,
): SourceError {
  const errorCode = headerText(headers['x-error-code']);
  const detail = headerText(headers['x-error-message']);
  const suffix = detail ? `: ${detail}` : '';
  if (errorCode === 'RepoNotFound' || errorCode === 'EntryNotFound' || errorCode === 'RevisionNotFound') {
    return new SourceError('SOURCE_NOT_FOUND', `${where} answered ${status} (${errorCode})${suffix}`);
  }
  if (status === 401 || status === 403) {
    const why =
      errorCode === 'GatedRepo'
        ? 'the repository is gated: accept its terms and set a token'
        : 'a token with access is needed';
    return new SourceError('SOURCE_AUTH_REQUIRED', `${where} answered ${status}: ${why}${suffix}`);
  }
  if (status === 404 || status === 410)
    return new SourceError('SOURCE_NOT_FOUND', `${where} answered ${status}: no such file${suffix}`);
  if (status === 429 || status === 408 || status >= 500) {
    return new SourceError(
      'DOWNLOAD_FAILED',
      `${where} answered ${status}${suffix}`,
      true,
      retryAfterMs(headers['retry-after']),
    );
  }
  return new SourceError('DOWNLOAD_FAILED', `${where} answered ${status}${suffix}`);
}

/** `Retry-After` as seconds or an HTTP date, capped at ten minutes. */
export function retryAfterMs(h: string | string[] | undefined): number | undefined {
  const v = headerText(h)?.trim();
  if (!v) return undefined;
  const ms = /^\d+$/.test(v) ? Number(v) * 1000 : Date.parse(v) - Date.now();
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), 600_000) : undefined;
}
