import type { Pool } from 'pg';
import { PreparedStatement } from '../../infra/pg-statement';
import { contentLockKey, prismaOf, type Db, type Transactions } from '../../infra/prisma';

export interface ThumbnailRecord {
  contentHash: string;
  status: 'ready' | 'failed';
  width: number;
  height: number;
  size: number;
}

/**
 * What the thumbnail route needs of an asset, its two columns as one prepared statement: the full asset row
 * (`AssetRepository.findById`) cost the route a third of its CPU in decoding columns it does not use
 * (bench/figures/grid-thumbs.cjs).
 */
const THUMBNAIL_OF_ASSET = new PreparedStatement<{ content_hash: string; has_thumbnail: boolean }>(
  'thumbnail_of_asset',
  'SELECT content_hash, has_thumbnail FROM asset WHERE id = $1::uuid AND owner_id = $2',
);

/** Thumbnail rows (one per content) and the `asset.has_thumbnail` copies of them. */
export class ThumbnailRepository {
  /** `pool`: the pg pool behind `db`, for the thumbnail route's lookup (`ofAsset`, a prepared statement). */
  constructor(
    private readonly db: Db,
    private readonly pool: Pool,
    private readonly transactions: Transactions,
  ) {}

  /** The content of this owner's asset and whether it has a thumbnail; undefined when there is no such asset. */
  async ofAsset(ownerId: string, assetId: string): Promise<{ contentHash: string; ready: boolean } | undefined> {
    const { rows } = await THUMBNAIL_OF_ASSET.run(this.pool, [assetId, ownerId]);
    return rows[0] ? { contentHash: rows[0].content_hash.trim(), ready: rows[0].has_thumbnail } : undefined;
  }

  async find(contentHash: string): Promise<ThumbnailRecord | undefined> {
    const row = await this.db.thumbnail.findUnique({ where: { contentHash } });
    return row
      ? {
          contentHash: row.contentHash.trim(),
          status: row.status as ThumbnailRecord['status'],
          width: row.width,
          height: row.height,
          size: row.size,
        }
      : undefined;
  }

  /** The MIME types of those of these contents that still exist (not collected) and have no thumbnail row yet. */
  async pending(contentHashes: readonly string[]): Promise<Map<string, string>> {
    const rows = await this.db.$queryRaw<
      { blake3: string; mimeType: string }[]
    >`SELECT c.blake3, c.mime_type AS "mimeType" FROM content c
      WHERE c.blake3 = ANY(${[...contentHashes]}::char(64)[]) AND NOT EXISTS (SELECT 1 FROM thumbnail t WHERE t.content_hash = c.blake3)`;
    return new Map(rows.map((r) => [r.blake3.trim(), r.mimeType]));
  }

  /**
   * Records the outcome for a content that still exists, under the content's advisory lock (the lock every asset
   * insert and the garbage collector hold), and marks every asset of the content. `store` runs under the lock before
   * the row is written, so a thumbnail blob is only ever kept for content that has a row; false when the content is
   * gone.
   */
  async record(rec: ThumbnailRecord & { error?: string }, store: () => Promise<void>): Promise<boolean> {
    return this.transactions.run(async (t) => {
      const tx = prismaOf(t);
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(${contentLockKey(rec.contentHash)})`;
      const exists = await tx.content.findUnique({ where: { blake3: rec.contentHash }, select: { blake3: true } });
      if (!exists) return false;
      if (rec.status === 'ready') await store();
      await tx.thumbnail.upsert({
        where: { contentHash: rec.contentHash },
        create: {
          contentHash: rec.contentHash,
          status: rec.status,
          width: rec.width,
          height: rec.height,
          size: rec.size,
          error: rec.error ?? null,
        },
        update: { status: rec.status, width: rec.width, height: rec.height, size: rec.size, error: rec.error ?? null },
      });
      if (rec.status === 'ready')
        await tx.$executeRaw`UPDATE asset SET has_thumbnail = true WHERE content_hash = ${rec.contentHash} AND NOT has_thumbnail`;
      return true;
    });
  }

  /** Contents of these MIME types that have no thumbnail row yet, oldest first, after `afterHash` (backfill paging). */
  async withoutThumbnail(mimeTypes: readonly string[], afterHash: string, limit: number): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ blake3: string }[]>`SELECT c.blake3 FROM content c
      WHERE c.mime_type = ANY(${[...mimeTypes]}::text[]) AND c.blake3 > ${afterHash}
        AND NOT EXISTS (SELECT 1 FROM thumbnail t WHERE t.content_hash = c.blake3)
      ORDER BY c.blake3 LIMIT ${limit}`;
    return rows.map((r) => r.blake3.trim());
  }
}
