import type { LRUCache } from 'lru-cache';
import { lruByCount } from '../../infra/lru';

/**
 * Counts computed from the rows (a filtered listing's total, filtered refine facets), kept per instance under the
 * owner's change counter (`asset_owner_stats.version`) that was read in the same statement as the count. Every
 * change of an owner's assets that can change a filter's matches bumps that counter in its own transaction, so an
 * entry is served only while the database still holds exactly the rows it was counted from, whichever instance
 * changed them. Least recently used entries go first beyond `capacity`.
 */
export class CountCache<T> {
  private readonly entries: LRUCache<string, { version: string; value: T }>;

  constructor(capacity = 1000) {
    this.entries = lruByCount(capacity);
  }

  get(key: string, version: string): T | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.version !== version) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, version: string, value: T): void {
    this.entries.set(key, { version, value });
  }
}
