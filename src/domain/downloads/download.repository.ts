import { Prisma } from '../../generated/prisma/client';
import { prismaOf, type Db, type Transaction, type Transactions } from '../../infra/prisma';

export type TransferStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

export interface Transfer {
  id: string;
  sourceUrl: string;
  provider: string;
  status: TransferStatus;
  fileName: string | null;
  expectedSha256: string | null;
  expectedBlake3: string | null;
  bytesDownloaded: number;
  bytesTotal: number | null;
  validator: string | null;
  contentHash: string | null;
}

type Row = Omit<Transfer, 'bytesDownloaded' | 'bytesTotal'> & { bytesDownloaded: bigint; bytesTotal: bigint | null };
const toTransfer = (r: Row): Transfer => ({
  ...r,
  status: r.status as TransferStatus,
  expectedSha256: r.expectedSha256?.trim() ?? null,
  expectedBlake3: r.expectedBlake3?.trim() ?? null,
  contentHash: r.contentHash?.trim() ?? null,
  bytesDownloaded: Number(r.bytesDownloaded),
  bytesTotal: r.bytesTotal === null ? null : Number(r.bytesTotal),
});

const COLUMNS = Prisma.sql`id::text AS "id", source_url AS "sourceUrl", provider, status, file_name AS "fileName",
  expected_sha256 AS "expectedSha256", expected_blake3 AS "expectedBlake3", bytes_downloaded AS "bytesDownloaded",
  bytes_total AS "bytesTotal", validator, content_hash AS "contentHash"`;

/**
 * Transfers (one per source URL being downloaded, shared by the tasks that asked for it) and the source URL → content
 * map. A transfer is worked on under a lease: the worker holding `lease_token` renews `lease_expires_at`; a running
 * transfer whose lease ran out lost its worker and is handed to another.
 */
export class DownloadRepository {
  constructor(
    private readonly db: Db,
    private readonly transactions: Transactions,
  ) {}

  /** Serialises everything that starts, joins, cancels or finishes downloads of one URL, for the transaction. */
  async lockUrl(url: string, tx: Transaction): Promise<void> {
    await prismaOf(tx).$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'download:' + url}, 0))`;
  }

  async findActive(url: string, tx: Transaction): Promise<Transfer | undefined> {
    const rows = await prismaOf(tx).$queryRaw<Row[]>`SELECT ${COLUMNS} FROM download_transfer
      WHERE source_url = ${url} AND status IN ('queued', 'running') ORDER BY created_at DESC LIMIT 1`;
    return rows[0] ? toTransfer(rows[0]) : undefined;
  }

  async get(id: string): Promise<Transfer | undefined> {
    const rows = await this.db.$queryRaw<Row[]>`SELECT ${COLUMNS} FROM download_transfer WHERE id = ${id}::uuid`;
    return rows[0] ? toTransfer(rows[0]) : undefined;
  }

  async insert(
    t: {
      id: string;
      sourceUrl: string;
      provider: string;
      fileName?: string;
      expectedSha256?: string;
      expectedBlake3?: string;
      bytesTotal?: number;
    },
    tx: Transaction,
  ): Promise<void> {
    await prismaOf(tx).downloadTransfer.create({
      data: {
        id: t.id,
        sourceUrl: t.sourceUrl,
        provider: t.provider,
        fileName: t.fileName ?? null,
        expectedSha256: t.expectedSha256 ?? null,
        expectedBlake3: t.expectedBlake3 ?? null,
        bytesTotal: t.bytesTotal === undefined ? null : BigInt(t.bytesTotal),
      },
    });
  }

  /** Takes the lease of a queued or running transfer whose lease is free or expired; undefined if not to be run. */
  async claim(id: string, token: string, leaseMs: number): Promise<Transfer | undefined> {
    const rows = await this.db.$queryRaw<Row[]>`UPDATE download_transfer SET lease_token = ${token}::uuid,
         lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000}),
         status = 'running', started_at = COALESCE(started_at, now()), updated_at = now()
       WHERE id = ${id}::uuid AND status IN ('queued', 'running') AND (lease_token IS NULL OR lease_expires_at < now())
       RETURNING ${COLUMNS}`;
    return rows[0] ? toTransfer(rows[0]) : undefined;
  }

  /** Renews the lease, saving progress when given. Returns the status, or undefined when the lease was lost. */
  async renew(
    id: string,
    token: string,
    leaseMs: number,
    progress?: { bytes: number; total: number | null },
  ): Promise<TransferStatus | undefined> {
    const rows = progress
      ? await this.db.$queryRaw<{ status: TransferStatus }[]>`UPDATE download_transfer
          SET lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000}), bytes_downloaded = ${BigInt(progress.bytes)},
             bytes_total = ${progress.total === null ? null : BigInt(progress.total)}, updated_at = now()
          WHERE id = ${id}::uuid AND lease_token = ${token}::uuid RETURNING status`
      : await this.db.$queryRaw<{ status: TransferStatus }[]>`UPDATE download_transfer
          SET lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
          WHERE id = ${id}::uuid AND lease_token = ${token}::uuid RETURNING status`;
    return rows[0]?.status;
  }

  /** What an answer said about the bytes about to be written (saved before writing them, for If-Range). */
  async saveResponse(
    id: string,
    token: string,
    r: { validator: string | null; total: number | null; bytes: number; fileName?: string },
  ): Promise<void> {
    await this.db.$executeRaw`UPDATE download_transfer SET validator = ${r.validator},
         bytes_total = ${r.total === null ? null : BigInt(r.total)}, bytes_downloaded = ${BigInt(r.bytes)},
         file_name = COALESCE(${r.fileName ?? null}, file_name), updated_at = now()
       WHERE id = ${id}::uuid AND lease_token = ${token}::uuid`;
  }

  async setStored(id: string, blake3: string, size: number, fileName: string, tx: Transaction): Promise<void> {
    await prismaOf(tx).downloadTransfer.update({
      where: { id },
      data: {
        contentHash: blake3,
        bytesDownloaded: BigInt(size),
        bytesTotal: BigInt(size),
        fileName,
        updatedAt: new Date(),
      },
    });
  }

  /** Ends a transfer that is still queued or running (its worker sees the new status at its next renewal). */
  async finish(
    id: string,
    status: 'completed' | 'failed' | 'cancelled',
    errorMessage: string | null,
    tx?: Transaction,
  ): Promise<boolean> {
    const now = new Date();
    const n = await prismaOf(tx, this.db).downloadTransfer.updateMany({
      where: { id, status: { in: ['queued', 'running'] } },
      data: { status, errorMessage, completedAt: now, updatedAt: now },
    });
    return n.count > 0;
  }

  /** Gives the lease back so another worker (or this one after a restart) can pick the transfer up at once. */
  async release(id: string, token: string): Promise<void> {
    await this.db.$executeRaw`UPDATE download_transfer SET lease_token = NULL, lease_expires_at = now()
      WHERE id = ${id}::uuid AND lease_token = ${token}::uuid`;
  }

  /**
   * Running transfers whose worker stopped renewing its lease (a crash, a kill, a lost connection). Each one is
   * given a short grace lease so that only one sweeper re-enqueues it; `enqueue` runs in the same transaction.
   */
  async takeOrphans(
    limit: number,
    graceMs: number,
    enqueue: (id: string, tx: Transaction) => Promise<void>,
  ): Promise<string[]> {
    return this.transactions.run(async (t) => {
      const tx = prismaOf(t);
      const rows = await tx.$queryRaw<{ id: string }[]>`SELECT id::text AS id FROM download_transfer
        WHERE status = 'running' AND lease_expires_at < now()
        ORDER BY lease_expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
      for (const { id } of rows) {
        await tx.$executeRaw`UPDATE download_transfer SET lease_token = NULL,
          lease_expires_at = now() + make_interval(secs => ${graceMs / 1000}) WHERE id = ${id}::uuid`;
        await enqueue(id, t);
      }
      return rows.map((r) => r.id);
    });
  }

  async findSource(url: string, tx?: Transaction): Promise<{ blake3: string; fileName: string } | undefined> {
    const row = await prismaOf(tx, this.db).sourceContent.findUnique({ where: { sourceUrl: url } });
    return row ? { blake3: row.contentHash.trim(), fileName: row.fileName } : undefined;
  }

  async saveSource(url: string, blake3: string, fileName: string, tx?: Transaction): Promise<void> {
    await prismaOf(tx, this.db).sourceContent.upsert({
      where: { sourceUrl: url },
      create: { sourceUrl: url, contentHash: blake3, fileName },
      update: { contentHash: blake3, fileName },
    });
  }
}
