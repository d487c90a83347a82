import { LRUCache } from 'lru-cache';

/**
 * GET /api/assets answers as sent, per instance, each under the owner's rows version its page was read at
 * (`AssetPage.version`). The version moves in the transaction of every change of the owner's asset rows, on any
 * instance (migration 20261122210000), so an entry is sent again only after the database confirmed, in the one
 * statement the request costs then, that the version is unchanged (`AssetService.pageIfChanged`): the rows, their
 * fields and the total are still those the body was made from. A repeated page (a model list a client loads again,
 * the first page of a browser) then costs a primary-key read instead of reading, decoding and serializing its rows.
 * Bounded by bytes; least recently used entries go first.
 *
 * A page is kept only when its key was asked for before (among the last keys asked for, `seenBytes` of them): a client
 * paging through the list asks each cursor page once, and such pages would push the repeated ones out (and cost a copy
 * each). Measured by `npm run bench -- listing` (its distinct cursor pages). Keys come from the request's URL, so
 * both bounds count their length too: a flood of long query strings costs at most these bytes.
 */
export class PageCache {
  private readonly entries: LRUCache<string, { version: string; body: Buffer }>;
  private readonly seen: LRUCache<string, true>;

  constructor(maxBytes = 32 * 1024 * 1024, maxEntryBytes = 2 * 1024 * 1024, seenBytes = 256 * 1024) {
    this.entries = new LRUCache({
      maxSize: maxBytes,
      maxEntrySize: maxEntryBytes,
      sizeCalculation: (e, key) => key.length + e.body.length,
    });
    this.seen = new LRUCache({ maxSize: seenBytes, sizeCalculation: (_v, key) => Math.max(1, key.length) });
  }

  get(key: string): { version: string; body: Buffer } | undefined {
    return this.entries.get(key);
  }

  /**
   * Keeps `text` under `version` when the key was asked for before; returns what to send (the kept bytes or `text`).
   */
  set(key: string, version: string, text: string): Buffer | string {
    const known = this.entries.delete(key) || this.seen.delete(key);
    if (!known) {
      this.seen.set(key, true);
      return text;
    }
    const body = Buffer.from(text);
    // An entry over maxEntrySize is not kept (lru-cache refuses it).
    this.entries.set(key, { version, body });
    return body;
  }
}
