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
  private readonly entries = new Map<string, { version: string; body: Buffer }>();
  private readonly seen = new Set<string>();
  private bytes = 0;
  private seenLength = 0;

  constructor(
    private readonly maxBytes = 32 * 1024 * 1024,
    private readonly maxEntryBytes = 2 * 1024 * 1024,
    private readonly seenBytes = 256 * 1024,
  ) {}

  get(key: string): { version: string; body: Buffer } | undefined {
    const e = this.entries.get(key);
    if (e) {
      // Re-inserted: a Map iterates in insertion order, so the first key is the least recently used.
      this.entries.delete(key);
      this.entries.set(key, e);
    }
    return e;
  }

  /**
   * Keeps `text` under `version` when the key was asked for before; returns what to send (the kept bytes or `text`).
   */
  set(key: string, version: string, text: string): Buffer | string {
    const known = this.entries.has(key) || this.seen.has(key);
    this.delete(key);
    if (!known) {
      this.seen.add(key);
      this.seenLength += key.length;
      while (this.seenLength > this.seenBytes) this.forget(this.seen.values().next().value!);
      return text;
    }
    this.forget(key);
    const body = Buffer.from(text);
    if (body.length > this.maxEntryBytes) return body;
    this.entries.set(key, { version, body });
    this.bytes += key.length + body.length;
    while (this.bytes > this.maxBytes) this.delete(this.entries.keys().next().value!);
    return body;
  }

  private delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.bytes -= key.length + e.body.length;
  }

  private forget(key: string): void {
    if (this.seen.delete(key)) this.seenLength -= key.length;
  }
}
