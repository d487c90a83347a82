import type { Pool } from 'pg';
import { Prisma } from '../../generated/prisma/client';
import type { Db, Tx } from '../../infra/prisma';
import { contentLockKey } from '../../infra/prisma';

export interface ContentRecord {
  blake3: string;
  sha256: string;
  size: number;
  mimeType: string;
  firstName: string;
  /** Derived at ingest (the asset's `metadata`); null for content stored before that existed, until backfilled. */
  metadata: Record<string, unknown> | null;
}

type Row = { blake3: string; sha256: string; size: bigint; mimeType: string; firstName: string; metadata?: unknown };
const toRecord = (r: Row): ContentRecord => ({
  blake3: r.blake3.trim(),
  sha256: r.sha256.trim(),
  size: Number(r.size),
  mimeType: r.mimeType,
  firstName: r.firstName,
  metadata: (r.metadata ?? null) as Record<string, unknown> | null,
});

/** Content rows: one per distinct stored byte sequence, shared by every owner. */
export class ContentRepository {
  /** `pool` (the pg pool behind `db`), when given, serves `exists` (HEAD /api/assets/hash/{hash}) directly. */
  constructor(
    private readonly db: Db,
    private readonly pool?: Pool,
  ) {}

  async find(hash: { algorithm: 'blake3' | 'sha256'; hex: string }, tx: Tx | Db = this.db): Promise<ContentRecord | undefined> {
    const row =
      hash.algorithm === 'blake3'
        ? await tx.content.findUnique({ where: { blake3: hash.hex } })
        : await tx.content.findUnique({ where: { sha256: hash.hex } });
    return row ? toRecord(row) : undefined;
  }

  async exists(hash: { algorithm: 'blake3' | 'sha256'; hex: string }): Promise<boolean> {
    if (this.pool) {
      const byBlake3 = hash.algorithm === 'blake3';
      const { rowCount } = await this.pool.query({
        name: byBlake3 ? 'content_exists_blake3' : 'content_exists_sha256',
        text: `SELECT 1 FROM content WHERE ${byBlake3 ? 'blake3' : 'sha256'} = $1 LIMIT 1`,
        values: [hash.hex],
      });
      return (rowCount ?? 0) > 0;
    }
    const rows =
      hash.algorithm === 'blake3'
        ? await this.db.$queryRaw<unknown[]>`SELECT 1 FROM content WHERE blake3 = ${hash.hex} LIMIT 1`
        : await this.db.$queryRaw<unknown[]>`SELECT 1 FROM content WHERE sha256 = ${hash.hex} LIMIT 1`;
    return rows.length > 0;
  }

  /**
   * Serialises everything that creates, references or removes this content (ingest commit, from-hash, delete, GC)
   * for the rest of the transaction. GC takes the same key as a session lock around its blob deletion.
   */
  async lock(blake3: string, tx: Tx): Promise<void> {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${contentLockKey(blake3)})`;
  }

  async insert(rec: ContentRecord, tx: Tx): Promise<void> {
    await tx.content.create({
      data: {
        blake3: rec.blake3,
        sha256: rec.sha256,
        size: BigInt(rec.size),
        mimeType: rec.mimeType,
        firstName: rec.firstName,
        metadata: (rec.metadata ?? undefined) as Prisma.InputJsonObject | undefined,
      },
    });
  }

  async clearOrphaned(blake3: string, tx: Tx): Promise<void> {
    await tx.content.updateMany({ where: { blake3, orphanedAt: { not: null } }, data: { orphanedAt: null } });
  }

  async markOrphanedIfUnused(blake3: string, tx: Tx): Promise<boolean> {
    const n = await tx.$executeRaw`UPDATE content SET orphaned_at = now()
      WHERE blake3 = ${blake3} AND NOT EXISTS (SELECT 1 FROM asset WHERE content_hash = ${blake3})`;
    return n > 0;
  }

  /** Content without derived metadata among the next `limit` rows after `afterBlake3` (a walk of the primary key). */
  async findWithoutMetadata(afterBlake3: string, limit: number): Promise<{ rows: ContentRecord[]; last: string | undefined }> {
    // Only a flag of the metadata column is read: filled rows cost an index entry, not their JSON.
    const page = await this.db.$queryRaw<(Row & { missing: boolean })[]>`SELECT blake3, sha256, size, mime_type AS "mimeType",
        first_name AS "firstName", metadata IS NULL AS missing FROM content WHERE blake3 > ${afterBlake3} ORDER BY blake3 LIMIT ${limit}`;
    return { rows: page.filter((r) => r.missing).map((r) => toRecord({ ...r, metadata: null })), last: page[page.length - 1]?.blake3 };
  }

  /** Stores derived metadata on the content and merges it under each of its assets' own fields, in one transaction. */
  async saveMetadata(blake3: string, metadata: Record<string, unknown>): Promise<void> {
    const text = JSON.stringify(metadata);
    await this.db.$transaction([
      this.db.$executeRaw`UPDATE content SET metadata = ${text}::jsonb WHERE blake3 = ${blake3}`,
      // Assets made before metadata existed get their own fields from what they hold: name and source_url.
      this.db.$executeRaw`UPDATE asset SET metadata = ${text}::jsonb || coalesce(metadata, jsonb_strip_nulls(jsonb_build_object(
          'filename', name, 'content_length', size, 'source_url', user_metadata -> 'source_url')))
        WHERE content_hash = ${blake3}`,
    ]);
  }

  /** Content whose grace period ended; candidates for GC. */
  async findExpiredOrphans(graceSeconds: number, limit: number): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ blake3: string }[]>`SELECT blake3 FROM content
      WHERE orphaned_at IS NOT NULL AND orphaned_at <= now() - make_interval(secs => ${graceSeconds})
      ORDER BY orphaned_at LIMIT ${limit}`;
    return rows.map((r) => r.blake3.trim());
  }

  /** Content no asset refers to any more, awaiting collection (count and bytes); cut by the server after `timeoutMs`. */
  async gcBacklog(timeoutMs: number): Promise<{ contents: number; bytes: number }> {
    const [, rows] = await this.db.$transaction([
      this.db.$executeRawUnsafe(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`),
      this.db.$queryRaw<{ n: number; bytes: bigint }[]>`
        SELECT count(*)::int AS n, coalesce(sum(size), 0)::bigint AS bytes FROM content WHERE orphaned_at IS NOT NULL`,
    ]);
    return { contents: rows[0]?.n ?? 0, bytes: Number(rows[0]?.bytes ?? 0) };
  }
}
