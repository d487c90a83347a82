import { DomainError } from '../../errors';
import type { DownloadProvider } from './provider';

/** The allowed sources: a URL belongs to exactly one provider or is refused. */
export class Providers {
  constructor(readonly list: DownloadProvider[]) {}

  /** Parses and canonicalises `raw`; SOURCE_NOT_ALLOWED when no provider takes it. */
  resolve(raw: string): { provider: DownloadProvider; url: URL } {
    let url: URL;
    if (raw.length > 4096) throw new DomainError('INVALID_BODY', 'the URL is longer than 4096 characters', { field: 'source_url' });
    try {
      url = new URL(raw.trim());
    } catch {
      throw new DomainError('SOURCE_NOT_ALLOWED', 'source_url must be an absolute http(s) URL', { field: 'source_url' });
    }
    if ((url.protocol === 'http:' || url.protocol === 'https:') && !url.username && !url.password) {
      for (const provider of this.list) {
        const canonical = provider.canonicalize(url);
        if (canonical) return { provider, url: canonical };
      }
    }
    throw new DomainError('SOURCE_NOT_ALLOWED', `downloads are allowed from ${this.list.map((p) => p.origin).join(' and ')} only`, {
      field: 'source_url',
    });
  }

  get origins(): string[] {
    return this.list.map((p) => p.origin);
  }
}
