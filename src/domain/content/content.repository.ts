import type { Pool } from 'pg';
import type { Db, Tx } from '../../infra/prisma';
import { contentLockKey } from '../../infra/prisma';

export interface ContentRecord {
  blake3: string;
  sha256: string;
  size: number;
  mimeType: string;
  firstName: string;
}

type Row = { blake3: string; sha256: string; size: bigint; mimeType: string; firstName: string };
const toRecord = (r: Row): ContentRecord => ({
  blake3: r.blake3.trim(),
  sha256: r.sha256.trim(),
  size: Number(r.size),
  mimeType: r.mimeType,
  firstName: r.firstName,
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
      data: { blake3: rec.blake3, sha256: rec.sha256, size: BigInt(rec.size), mimeType: rec.mimeType, firstName: rec.firstName },
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
