import type { Pool, PoolClient } from 'pg';
import { Prisma } from '../../generated/prisma/client';
import { PreparedStatement } from '../../infra/pg-statement';
import {
  contentLockKey,
  isUniqueViolation,
  prismaOf,
  type Db,
  type Transaction,
  type Transactions,
} from '../../infra/prisma';
import { AlreadyExists } from '../errors';

export interface ContentRecord {
  blake3: string;
  sha256: string;
  size: number;
  mimeType: string;
  firstName: string;
  /** Derived at ingest (the asset's `metadata`); null for content stored before that existed, until backfilled. */
  metadata: Record<string, unknown> | null;
  /** No blob: the bytes are a file of an in-place import root (contract 6.4); absent (false) for stored content. */
  inPlace?: boolean;
}

type Row = {
  blake3: string;
  sha256: string;
  size: bigint;
  mimeType: string;
  firstName: string;
  metadata?: unknown;
  inPlace?: boolean;
};
const toRecord = (r: Row): ContentRecord => ({
  blake3: r.blake3.trim(),
  sha256: r.sha256.trim(),
  size: Number(r.size),
  mimeType: r.mimeType,
  firstName: r.firstName,
  metadata: (r.metadata ?? null) as Record<string, unknown> | null,
  ...(r.inPlace ? { inPlace: true } : {}),
});

/** A new content's row as Prisma writes it (one insert; an import's batch is `insertMany`'s). */
const contentData = (rec: ContentRecord): Prisma.ContentCreateManyInput => ({
  blake3: rec.blake3,
  sha256: rec.sha256,
  size: BigInt(rec.size),
  mimeType: rec.mimeType,
  firstName: rec.firstName,
  metadata: (rec.metadata ?? undefined) as Prisma.InputJsonObject | undefined,
});

/** What may be done while holding a content's session lock (`ContentRepository.withSessionLock`). */
export interface LockedContent {
  /** Deletes the row if it is unreferenced and its grace period is over; whether it did. */
  deleteIfCollectable(graceSeconds: number): Promise<boolean>;
  hasRow(): Promise<boolean>;
}

/**
 * `exists` by either hash. No column: the answer is whether a row came back, and a row of no columns costs pg no
 * type parsers and no row object to build.
 */
const CONTENT_EXISTS = {
  blake3: new PreparedStatement('content_exists_blake3', 'SELECT FROM content WHERE blake3 = $1 LIMIT 1'),
  sha256: new PreparedStatement('content_exists_sha256', 'SELECT FROM content WHERE sha256 = $1 LIMIT 1'),
};

/** Content rows: one per distinct stored byte sequence, shared by every owner. */
export class ContentRepository {
  /**
   * `pool` is the pg pool behind `db`: `exists` (HEAD /api/assets/hash/{hash}) runs on it as a prepared statement,
   * and the GC's session locks hold one of its connections.
   */
  constructor(
    private readonly db: Db,
    private readonly pool: Pool,
    private readonly transactions: Transactions,
  ) {}

  async find(
    hash: { algorithm: 'blake3' | 'sha256'; hex: string },
    tx?: Transaction,
  ): Promise<ContentRecord | undefined> {
    const q = prismaOf(tx, this.db);
    const row =
      hash.algorithm === 'blake3'
        ? await q.content.findUnique({ where: { blake3: hash.hex } })
        : await q.content.findUnique({ where: { sha256: hash.hex } });
    return row ? toRecord(row) : undefined;
  }

  async exists(hash: { algorithm: 'blake3' | 'sha256'; hex: string }): Promise<boolean> {
    const { rowCount } = await CONTENT_EXISTS[hash.algorithm].run(this.pool, [hash.hex]);
    return (rowCount ?? 0) > 0;
  }

  /** Which of these hashes have a content row. */
  async existing(blake3s: readonly string[]): Promise<Set<string>> {
    const rows = await this.db.$queryRaw<
      { blake3: string }[]
    >`SELECT blake3 FROM content WHERE blake3 = ANY(${[...blake3s]}::text[])`;
    return new Set(rows.map((r) => r.blake3.trim()));
  }

  /**
   * Serialises everything that creates, references or removes this content (ingest commit, from-hash, delete, GC)
   * for the rest of the transaction. GC takes the same key as a session lock around its blob deletion.
   */
  async lock(blake3: string, tx: Transaction): Promise<void> {
    await prismaOf(tx).$executeRaw`SELECT pg_advisory_xact_lock(${contentLockKey(blake3)})`;
  }

  /**
   * Runs `fn` holding the content's advisory lock as a session lock on a dedicated connection: unlike a transaction
   * lock it spans what `fn` does after a committed row delete (removing the blob).
   */
  async withSessionLock<T>(blake3: string, fn: (locked: LockedContent) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const key = contentLockKey(blake3).toString();
    // A connection whose unlock failed may still hold the session lock: it is closed, never pooled again.
    let broken: Error | undefined;
    try {
      await client.query('SELECT pg_advisory_lock($1::bigint)', [key]).catch((err: Error) => {
        throw (broken = err);
      });
      try {
        return await fn(lockedContent(client, blake3));
      } finally {
        await client.query('SELECT pg_advisory_unlock($1::bigint)', [key]).catch((err: Error) => {
          broken = err;
        });
      }
    } finally {
      client.release(broken);
    }
  }

  /**
   * Deletes up to `batch` rows whose grace period is over, in one statement: claimed with FOR UPDATE SKIP LOCKED
   * (instances sweeping at once take disjoint sets), only where no one holds their content lock
   * (pg_try_advisory_xact_lock, the lock every referencing path takes), re-checked for references. Returns the
   * hashes deleted (committed), whose blobs are still to be removed.
   */
  async deleteExpired(graceSeconds: number, batch: number): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ blake3: string }[]>`
      WITH due AS (
         SELECT blake3 FROM content
          WHERE orphaned_at IS NOT NULL AND orphaned_at <= now() - make_interval(secs => ${graceSeconds})
          ORDER BY orphaned_at LIMIT ${batch} FOR UPDATE SKIP LOCKED)
       DELETE FROM content c USING due
        WHERE c.blake3 = due.blake3
          AND pg_try_advisory_xact_lock(('x' || left(c.blake3, 16))::bit(64)::bigint)
          AND NOT EXISTS (SELECT 1 FROM asset a WHERE a.content_hash = c.blake3)
       RETURNING c.blake3`;
    return rows.map((r) => r.blake3.trim());
  }

  /** A row with this hash exists already: AlreadyExists (a race the caller retries). */
  async insert(rec: ContentRecord, tx: Transaction): Promise<void> {
    try {
      await prismaOf(tx).content.create({ data: contentData(rec) });
    } catch (err) {
      if (isUniqueViolation(err)) throw new AlreadyExists(`content ${rec.blake3}`, { cause: err });
      throw err;
    }
  }

  /**
   * The content locks of many contents (an import's batch), taken in key order: every other path holds one content
   * lock at a time, so a batch waiting for one never holds what that holder waits for.
   */
  async lockMany(blake3s: readonly string[], tx: Transaction): Promise<void> {
    const keys = [...new Set(blake3s.map((b) => contentLockKey(b)))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    if (keys.length === 0) return;
    await prismaOf(tx).$executeRaw`SELECT pg_advisory_xact_lock(k) FROM unnest(${keys.map(String)}::bigint[]) AS k`;
  }

  /** The rows of those of these hashes that are stored, by BLAKE3. */
  async findMany(blake3s: readonly string[], tx: Transaction): Promise<Map<string, ContentRecord>> {
    // A template, not findMany: an import's batch asks for 64 hashes, each of which Prisma's compiler processed.
    const rows = await prismaOf(tx).$queryRaw<Row[]>`
      SELECT blake3, sha256, size, mime_type AS "mimeType", first_name AS "firstName", metadata, in_place AS "inPlace"
        FROM content WHERE blake3 = ANY(${[...blake3s]}::text[])`;
    return new Map(rows.map((r) => [r.blake3.trim(), toRecord(r)]));
  }

  /** New content rows in one statement (an import's batch); a hash stored meanwhile is a unique violation. */
  async insertMany(recs: readonly ContentRecord[], tx: Transaction): Promise<void> {
    if (recs.length === 0) return;
    // One JSON parameter, as AssetRepository.insertMany (Prisma's createMany compiled every value).
    const batch = JSON.stringify(
      recs.map((r) => ({
        blake3: r.blake3,
        sha256: r.sha256,
        size: r.size,
        mime_type: r.mimeType,
        first_name: r.firstName,
        metadata: r.metadata ?? null,
        in_place: r.inPlace === true,
      })),
    );
    try {
      await prismaOf(tx).$executeRaw`
        INSERT INTO content (blake3, sha256, size, mime_type, first_name, metadata, in_place)
        SELECT blake3, sha256, size, mime_type, first_name, metadata, in_place
          FROM jsonb_to_recordset(${batch}::jsonb) AS r(blake3 text, sha256 text, size bigint, mime_type text,
            first_name text, metadata jsonb, in_place boolean)`;
    } catch (err) {
      if (isUniqueViolation(err)) throw new AlreadyExists('content', { cause: err });
      throw err;
    }
  }

  /** As `clearOrphaned`, for many contents in one statement. */
  async clearOrphanedMany(blake3s: readonly string[], tx: Transaction): Promise<void> {
    if (blake3s.length === 0) return;
    await prismaOf(tx).content.updateMany({
      where: { blake3: { in: [...blake3s] }, orphanedAt: { not: null } },
      data: { orphanedAt: null },
    });
  }

  async clearOrphaned(blake3: string, tx: Transaction): Promise<void> {
    await prismaOf(tx).content.updateMany({ where: { blake3, orphanedAt: { not: null } }, data: { orphanedAt: null } });
  }

  async markOrphanedIfUnused(blake3: string, tx: Transaction): Promise<boolean> {
    const n = await prismaOf(tx).$executeRaw`UPDATE content SET orphaned_at = now()
      WHERE blake3 = ${blake3} AND NOT EXISTS (SELECT 1 FROM asset WHERE content_hash = ${blake3})`;
    return n > 0;
  }

  /** The next `limit` rows after `afterBlake3` in key order, hash and size only (verify's walk of every row). */
  async page(afterBlake3: string, limit: number): Promise<{ blake3: string; size: number }[]> {
    // In-place contents have no blob to compare (contract 6.4): verify never looks at their files.
    const rows = await this.db.$queryRaw<{ blake3: string; size: bigint }[]>`SELECT blake3, size FROM content
      WHERE blake3 > ${afterBlake3} AND NOT in_place ORDER BY blake3 LIMIT ${limit}`;
    return rows.map((r) => ({ blake3: r.blake3.trim(), size: Number(r.size) }));
  }

  /** Content without derived metadata among the next `limit` rows after `afterBlake3` (a walk of the primary key). */
  async findWithoutMetadata(
    afterBlake3: string,
    limit: number,
  ): Promise<{ rows: ContentRecord[]; last: string | undefined }> {
    // Only a flag of the metadata column is read: filled rows cost an index entry, not their JSON.
    const page = await this.db.$queryRaw<
      (Row & { missing: boolean })[]
    >`SELECT blake3, sha256, size, mime_type AS "mimeType",
        first_name AS "firstName", metadata IS NULL AS missing FROM content WHERE blake3 > ${afterBlake3} ORDER BY blake3 LIMIT ${limit}`;
    return {
      rows: page.filter((r) => r.missing).map((r) => toRecord({ ...r, metadata: null })),
      last: page[page.length - 1]?.blake3,
    };
  }

  /** Stores derived metadata on the content and merges it under each of its assets' own fields, in one transaction. */
  async saveMetadata(blake3: string, metadata: Record<string, unknown>): Promise<void> {
    const text = JSON.stringify(metadata);
    await this.transactions.run(async (tx) => {
      const db = prismaOf(tx);
      await db.$executeRaw`UPDATE content SET metadata = ${text}::jsonb WHERE blake3 = ${blake3}`;
      // Assets made before metadata existed get their own fields from what they hold: name and source_url.
      await db.$executeRaw`UPDATE asset SET metadata = ${text}::jsonb || coalesce(metadata, jsonb_strip_nulls(jsonb_build_object(
          'filename', name, 'content_length', size, 'source_url', user_metadata -> 'source_url')))
        WHERE content_hash = ${blake3}`;
    });
  }

  /** Content whose grace period ended; candidates for GC. */
  async findExpiredOrphans(graceSeconds: number, limit: number): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ blake3: string }[]>`SELECT blake3 FROM content
      WHERE orphaned_at IS NOT NULL AND orphaned_at <= now() - make_interval(secs => ${graceSeconds})
      ORDER BY orphaned_at LIMIT ${limit}`;
    return rows.map((r) => r.blake3.trim());
  }

  /**
   * Content no asset refers to any more, awaiting collection (count and bytes); cut by the server after `timeoutMs`.
   */
  async gcBacklog(timeoutMs: number): Promise<{ contents: number; bytes: number }> {
    const rows = await this.transactions.run(
      async (tx) =>
        prismaOf(tx).$queryRaw<{ n: number; bytes: bigint }[]>`
        SELECT count(*)::int AS n, coalesce(sum(size), 0)::bigint AS bytes FROM content WHERE orphaned_at IS NOT NULL`,
      { statementTimeoutMs: timeoutMs },
    );
    return { contents: rows[0]?.n ?? 0, bytes: Number(rows[0]?.bytes ?? 0) };
  }
}

function lockedContent(client: PoolClient, blake3: string): LockedContent {
  return {
    async deleteIfCollectable(graceSeconds) {
      const res = await client.query(
        `DELETE FROM content WHERE blake3 = $1 AND orphaned_at IS NOT NULL
           AND orphaned_at <= now() - make_interval(secs => $2)
           AND NOT EXISTS (SELECT 1 FROM asset WHERE content_hash = $1) RETURNING blake3`,
        [blake3, graceSeconds],
      );
      return (res.rowCount ?? 0) > 0;
    },
    async hasRow() {
      const res = await client.query('SELECT 1 FROM content WHERE blake3 = $1', [blake3]);
      return (res.rowCount ?? 0) > 0;
    },
  };
}
