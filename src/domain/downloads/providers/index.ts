import { DomainError } from '../../errors';
import { longerThan } from '../../text-length';
import type { DownloadProvider } from './provider';

/** The allowed sources: a URL belongs to exactly one provider or is refused. */
export class Providers {
  constructor(readonly list: DownloadProvider[]) {}

  /** Parses and canonicalises `raw`; SOURCE_NOT_ALLOWED when no provider takes it. */
  resolve(raw: string): { provider: DownloadProvider; url: URL } {
    return this.canonical(parseSource(raw));
  }

  private canonical(url: URL): { provider: DownloadProvider; url: URL } {
    for (const provider of this.list) {
      const canonical = provider.canonicalize(url);
      if (canonical) return { provider, url: canonical };
    }
    throw new DomainError(
      'SOURCE_NOT_ALLOWED',
      `downloads are allowed from ${this.list.map((p) => p.origin).join(' and ')} only`,
      {
        field: 'source_url',
      },
    );
  }

  /**
   * `resolve`, after asking the provider where a page URL leads when only its API can tell (a request for such URLs,
   * none for any other). What requests take; a stored canonical URL needs only `resolve`.
   */
  async locate(raw: string, signal?: AbortSignal): Promise<{ provider: DownloadProvider; url: URL }> {
    const url = parseSource(raw);
    for (const provider of this.list) {
      const target = provider.locate?.(url, signal);
      if (target) return this.canonical(await target);
    }
    return this.canonical(url);
  }

  get origins(): string[] {
    return this.list.map((p) => p.origin);
  }
}

/** An absolute http(s) URL without credentials; SOURCE_NOT_ALLOWED otherwise. */
function parseSource(raw: string): URL {
  if (longerThan(raw, 4096))
    throw new DomainError('INVALID_BODY', 'the URL is longer than 4096 characters', { field: 'source_url' });
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new DomainError('SOURCE_NOT_ALLOWED', 'source_url must be an absolute http(s) URL', { field: 'source_url' });
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) {
    throw new DomainError('SOURCE_NOT_ALLOWED', 'source_url must be an http(s) URL without credentials', {
      field: 'source_url',
    });
  }
  return url;
}
