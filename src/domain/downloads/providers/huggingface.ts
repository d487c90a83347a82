import { dropBody, FetchError, headerText } from '../../../infra/http-fetch';
import { DomainError } from '../../errors';
import {
  HEX64,
  lastSegment,
  parseEndpoint,
  pathBelow,
  statusError,
  type DownloadProvider,
  type ProviderDeps,
  type RemoteDescription,
  type SourceMetadata,
} from './provider';

/** `/<repo>/(resolve|blob)/<revision>/<path>`; repo is `name`, `owner/name`, or `datasets|spaces/owner/name`. */
const FILE_PATH = /^\/(.+?)\/(resolve|blob)\/([^/]+)\/(.+)$/;

/**
 * Hugging Face (or a mirror at HF_ENDPOINT). A `HEAD` on the resolve URL, not following its redirect, tells the
 * SHA-256 of LFS files (`X-Linked-Etag`) and their size (`X-Linked-Size`) before anything is downloaded.
 */
export class HuggingFaceProvider implements DownloadProvider {
  readonly name = 'huggingface' as const;
  readonly origin: string;
  private readonly ep: { origin: string; prefix: string };

  constructor(private readonly deps: ProviderDeps) {
    this.ep = parseEndpoint(deps.endpoint);
    this.origin = this.ep.origin;
  }

  canonicalize(url: URL): URL | undefined {
    const rest = pathBelow(url, this.ep);
    if (rest === undefined) return undefined;
    const m = FILE_PATH.exec(rest);
    if (!m) {
      throw new DomainError(
        'SOURCE_NOT_ALLOWED',
        'a Hugging Face URL must name a file: .../<repo>/resolve/<revision>/<path>',
        {
          field: 'source_url',
        },
      );
    }
    // /blob/ is the web page of the file; /resolve/ its bytes. Query and fragment play no part in which file it is.
    return new URL(`${this.ep.origin}${this.ep.prefix}/${m[1]}/resolve/${m[3]}/${m[4]}`);
  }

  auth() {
    return this.deps.token
      ? { origin: this.origin, headers: { authorization: `Bearer ${this.deps.token}` } }
      : undefined;
  }

  async describe(url: URL, signal?: AbortSignal): Promise<RemoteDescription> {
    const meta = await this.head(url, signal, true);
    const filePath = FILE_PATH.exec(pathBelow(url, this.ep) ?? '')?.[4] ?? '';
    const folders = filePath.split('/').slice(0, -1);
    return { fileName: meta.fileName, size: meta.size, contentType: meta.contentType, modelTypes: folders };
  }

  probe(url: URL, signal?: AbortSignal): Promise<SourceMetadata> {
    return this.head(url, signal, false).then(({ contentType: _, ...meta }) => meta);
  }

  /** `strict`: an unreachable or failing provider is DOWNLOAD_FAILED instead of "states nothing". */
  private async head(
    url: URL,
    signal: AbortSignal | undefined,
    strict: boolean,
  ): Promise<SourceMetadata & { contentType?: string }> {
    const meta: SourceMetadata & { contentType?: string } = { fileName: lastSegment(url) };
    let current = url;
    // Renamed repositories answer with a relative redirect on the same host; follow those, never the CDN one.
    for (let i = 0; i < 5; i++) {
      let res;
      try {
        res = await this.deps.fetcher.open(current, {
          method: 'HEAD',
          follow: false,
          auth: this.auth(),
          headers: { 'accept-encoding': 'identity' },
          signal,
        });
      } catch (err) {
        // Unreachable or too slow: the download itself finds out, and retries.
        if (err instanceof FetchError && !strict) return meta;
        if (err instanceof FetchError)
          throw new DomainError('DOWNLOAD_FAILED', `Hugging Face could not be asked: ${err.message}`);
        throw err;
      }
      dropBody(res.body);
      const h = res.headers;
      const linkedEtag = headerText(h['x-linked-etag'])?.replace(/^W\//, '').replace(/"/g, '').toLowerCase();
      const linkedSize = Number(headerText(h['x-linked-size']));
      if (linkedEtag && HEX64.test(linkedEtag)) meta.sha256 = linkedEtag;
      if (Number.isSafeInteger(linkedSize) && linkedSize >= 0 && headerText(h['x-linked-size']) !== undefined)
        meta.size = linkedSize;
      if (res.status >= 200 && res.status < 300) {
        const len = Number(headerText(h['content-length']));
        if (meta.size === undefined && Number.isSafeInteger(len) && headerText(h['content-length']) !== undefined)
          meta.size = len;
        const type = headerText(h['content-type']);
        if (type) meta.contentType = type;
        return meta;
      }
      if (res.status >= 300 && res.status < 400) {
        const location = headerText(h.location);
        if (meta.sha256 || !location) return meta;
        const next = new URL(location, current);
        if (next.origin !== this.origin) return meta;
        current = next;
        continue;
      }
      const err = statusError(res.status, h, 'Hugging Face');
      if ((err.retryable || err.code === 'DOWNLOAD_FAILED') && !strict) return meta;
      throw err;
    }
    return meta;
  }
}
