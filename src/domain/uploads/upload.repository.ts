import { Prisma } from '../../generated/prisma/client';
import type { Db } from '../../infra/prisma';

export interface UploadRecord {
  id: string;
  ownerId: string;
  length: number;
  /** Bytes acknowledged: durable in the part blob. */
  offset: number;
  metadata: Record<string, string | null>;
  partKey: string;
  assetId: string | null;
  assetCreated: boolean | null;
  createdAt: Date;
  expiresAt: Date;
}

type Row = {
  id: string;
  ownerId: string;
  length: bigint;
  offset: bigint;
  metadata: unknown;
  partKey: string;
  assetId: string | null;
  assetCreated: boolean | null;
  createdAt: Date;
  expiresAt: Date;
};

const toRecord = (r: Row): UploadRecord => ({
  id: r.id,
  ownerId: r.ownerId,
  length: Number(r.length),
  offset: Number(r.offset),
  metadata: (r.metadata ?? {}) as Record<string, string | null>,
  partKey: r.partKey,
  assetId: r.assetId,
  assetCreated: r.assetCreated,
  createdAt: r.createdAt,
  expiresAt: r.expiresAt,
});

/** The columns of UploadRecord, for the raw statements that return a row. */
const RETURNING_RECORD = Prisma.sql`id::text AS "id", owner_id AS "ownerId", length, "offset", metadata, part_key AS "partKey",
  asset_id::text AS "assetId", asset_created AS "assetCreated", created_at AS "createdAt", expires_at AS "expiresAt"`;

/** Resumable uploads (table `upload`): the state any instance needs to continue an upload. */
export class UploadRepository {
  constructor(private readonly db: Db) {}

  /**
   * The record of a new upload, committed without waiting for the WAL to reach the disk (synchronous_commit off, for
   * this transaction only): a crash of PostgreSQL may lose it without harm, since no byte of the upload is
   * acknowledged yet (the client's next request then finds no upload, and a tus client starts a new one), and the
   * upload's first offset, committed synchronously, flushes it first (the WAL is flushed in order). That flush waited
   * behind the writeback of the parts being written, slowing creations after a large upload
   * (`node bench/profiles/profile-cli.cjs push`). Leases and offsets stay synchronous: a lease lost while its PATCH
   * still streams would let a second request write the same part, and an offset acknowledges bytes.
   */
  async insert(
    rec: Omit<UploadRecord, 'offset' | 'assetId' | 'assetCreated' | 'createdAt'> & { createdAt: Date },
  ): Promise<UploadRecord> {
    const [, row] = await this.db.$transaction([
      this.db.$executeRaw`SET LOCAL synchronous_commit = off`,
      this.db.upload.create({
        data: {
          id: rec.id,
          ownerId: rec.ownerId,
          length: BigInt(rec.length),
          metadata: rec.metadata,
          partKey: rec.partKey,
          createdAt: rec.createdAt,
          expiresAt: rec.expiresAt,
        },
      }),
    ]);
    return toRecord(row);
  }

  async find(id: string): Promise<UploadRecord | undefined> {
    const row = await this.db.upload.findUnique({ where: { id } });
    return row ? toRecord(row) : undefined;
  }

  async setOffset(id: string, offset: number): Promise<void> {
    await this.db.upload.updateMany({ where: { id }, data: { offset: BigInt(offset), updatedAt: new Date() } });
  }

  async setAsset(id: string, assetId: string, created: boolean): Promise<void> {
    await this.db.upload.updateMany({ where: { id }, data: { assetId, assetCreated: created, updatedAt: new Date() } });
  }

  async delete(id: string): Promise<void> {
    await this.db.upload.deleteMany({ where: { id } });
  }

  /**
   * Takes the lease when it is free or lapsed, and reads the row in the same statement: the record, 'held' (by
   * another request) or 'missing' (no such upload, or, with `ownerId`, another owner's).
   */
  async lease(
    id: string,
    token: string,
    leaseMs: number,
    ownerId?: string,
  ): Promise<UploadRecord | 'held' | 'missing'> {
    const owner = ownerId === undefined ? Prisma.empty : Prisma.sql` AND owner_id = ${ownerId}`;
    const rows = await this.db.$queryRaw<Row[]>`UPDATE upload
      SET lock_token = ${token}::uuid, lock_expires_at = now() + make_interval(secs => ${leaseMs / 1000}), release_requested = false
      WHERE id = ${id}::uuid AND (lock_token IS NULL OR lock_expires_at < now())${owner}
      RETURNING ${RETURNING_RECORD}`;
    if (rows[0]) return toRecord(rows[0]);
    const n = await this.db.upload.count({ where: ownerId === undefined ? { id } : { id, ownerId } });
    return n > 0 ? 'held' : 'missing';
  }

  /** Extends a held lease; returns whether a waiting request asked for it (undefined when it is no longer held). */
  async renewLease(id: string, token: string, leaseMs: number): Promise<boolean | undefined> {
    const rows = await this.db.$queryRaw<{ release_requested: boolean }[]>`UPDATE upload
      SET lock_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
      WHERE id = ${id}::uuid AND lock_token = ${token}::uuid RETURNING release_requested`;
    return rows[0]?.release_requested;
  }

  async requestRelease(id: string): Promise<void> {
    await this.db.upload.updateMany({ where: { id, lockToken: { not: null } }, data: { releaseRequested: true } });
  }

  async releaseLease(id: string, token: string): Promise<void> {
    await this.db.upload.updateMany({
      where: { id, lockToken: token },
      data: { lockToken: null, lockExpiresAt: null, releaseRequested: false },
    });
  }

  /**
   * Records the acknowledged offset and lets the lease go, in one statement; false when the lease was no longer held
   * (it lapsed and another request took it), in which case nothing was recorded.
   */
  async releaseLeaseAtOffset(id: string, token: string, offset: number): Promise<boolean> {
    const n = await this.db.$executeRaw`UPDATE upload
      SET "offset" = ${BigInt(offset)}, updated_at = now(), lock_token = NULL, lock_expires_at = NULL, release_requested = false
      WHERE id = ${id}::uuid AND lock_token = ${token}::uuid`;
    return n > 0;
  }

  async findExpired(now: Date, limit: number): Promise<UploadRecord[]> {
    const rows = await this.db.upload.findMany({
      where: { expiresAt: { lte: now } },
      orderBy: { expiresAt: 'asc' },
      take: limit,
    });
    return rows.map(toRecord);
  }
}
