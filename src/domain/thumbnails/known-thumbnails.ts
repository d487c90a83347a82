import { lruByCount } from '../../infra/lru';

/** How many assets' lookups an instance keeps (an entry is about 200 bytes). */
const MAX_ENTRIES = 100_000;

/**
 * The thumbnail route's asset → content lookups this instance has made, so that a grid's thumbnails, asked for again
 * and again, are answered without a PostgreSQL round trip each (`npm run bench -- grid-thumbs`: the round trip, a
 * wake-up of PostgreSQL's process and of this one, was most of the route's time on a busy machine).
 *
 * Only what cannot change is kept: an asset's content never changes and its thumbnail, once made, stays; the one
 * change that matters is the asset's deletion. A delete on this instance forgets its asset before it answers; a
 * delete on any instance is announced by PostgreSQL when it commits (channel `asset_gone`, migration
 * 20261128100000) and forgotten here as it arrives, milliseconds later, the same window a read that began just before
 * the delete has anyway. While the listening connection is down nothing is kept or answered from here (a delete
 * announced then would be missed), and what was kept is dropped.
 *
 * `epoch` settles the race of a lookup with a delete: a lookup read before a delete's announcement arrived is not
 * kept once the announcement has been processed (`keep` after `begin` is ignored when anything was forgotten in
 * between).
 */
export class KnownThumbnails {
  private readonly known = lruByCount<string, { ownerId: string; contentHash: string }>(MAX_ENTRIES);
  private epoch = 0;
  private listening = false;

  /** The content of this owner's asset, when known (its thumbnail is made). */
  get(ownerId: string, assetId: string): string | undefined {
    if (!this.listening) return undefined;
    const k = this.known.get(assetId);
    return k && k.ownerId === ownerId ? k.contentHash : undefined;
  }

  /** Before a lookup: the mark `keep` checks. */
  begin(): number {
    return this.epoch;
  }

  /** After a lookup begun at `mark` found this owner's asset with its thumbnail made. */
  keep(mark: number, ownerId: string, assetId: string, contentHash: string): void {
    if (this.listening && mark === this.epoch) this.known.set(assetId, { ownerId, contentHash });
  }

  /** These assets are gone (deleted here, or announced). */
  forget(assetIds: Iterable<string>): void {
    this.epoch++;
    for (const id of assetIds) this.known.delete(id);
  }

  /** Whether deletes are being heard: when not, nothing is kept; either way what was kept goes. */
  setListening(listening: boolean): void {
    this.epoch++;
    this.known.clear();
    this.listening = listening;
  }
}
