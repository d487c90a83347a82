import { Prisma } from '../../generated/prisma/client';
import { prismaOf, type Db, type Transaction } from '../../infra/prisma';
import type { QuotaChange, QuotaLimits } from './quota.types';

interface UsageRow {
  assets: bigint | null;
  bytes: bigint | null;
  max_bytes: bigint | null;
  max_assets: bigint | null;
}

const limitsOf = (r: { max_bytes: bigint | null; max_assets: bigint | null }): QuotaLimits => ({
  ...(r.max_bytes !== null ? { maxBytes: Number(r.max_bytes) } : {}),
  ...(r.max_assets !== null ? { maxAssets: Number(r.max_assets) } : {}),
});

/**
 * The owner's limits (owner_quota) and its use (asset_owner_stats.asset_count and total_bytes, kept by the asset
 * triggers, migration 20261202120000): primary-key reads, never a scan of the assets.
 */
export class QuotaRepository {
  constructor(private readonly db: Db) {}

  /** Use and limits in one statement (an owner without assets or limits: zeros, no limits). */
  async usage(ownerId: string, tx?: Transaction): Promise<{ bytes: number; assets: number } & QuotaLimits> {
    const [r] = await prismaOf(tx, this.db).$queryRaw<UsageRow[]>(Prisma.sql`
      SELECT s.asset_count AS assets, s.total_bytes AS bytes, q.max_bytes, q.max_assets
        FROM (SELECT ${ownerId}::text AS owner_id) o
        LEFT JOIN asset_owner_stats s ON s.owner_id = o.owner_id
        LEFT JOIN owner_quota q ON q.owner_id = o.owner_id`);
    return { bytes: Number(r?.bytes ?? 0), assets: Number(r?.assets ?? 0), ...(r ? limitsOf(r) : {}) };
  }

  /**
   * The owner's limits, its quota row locked for the rest of the transaction (undefined, and nothing locked, for an
   * owner without one). FOR UPDATE answers the row as last committed, so a limit changed meanwhile applies here.
   */
  async lockLimits(ownerId: string, tx: Transaction): Promise<QuotaLimits | undefined> {
    const [r] = await prismaOf(tx).$queryRaw<Pick<UsageRow, 'max_bytes' | 'max_assets'>[]>(Prisma.sql`
      SELECT max_bytes, max_assets FROM owner_quota WHERE owner_id = ${ownerId} FOR UPDATE`);
    return r ? limitsOf(r) : undefined;
  }

  /** Sets the limits `change` names (null clears one) and keeps the others. */
  async setLimits(ownerId: string, change: QuotaChange): Promise<void> {
    const set = (v: number | null | undefined) => (v === undefined ? undefined : v === null ? null : BigInt(v));
    const maxBytes = set(change.maxBytes);
    const maxAssets = set(change.maxAssets);
    await this.db.ownerQuota.upsert({
      where: { ownerId },
      create: { ownerId, maxBytes: maxBytes ?? null, maxAssets: maxAssets ?? null },
      update: {
        ...(maxBytes !== undefined ? { maxBytes } : {}),
        ...(maxAssets !== undefined ? { maxAssets } : {}),
        updatedAt: new Date(),
      },
    });
  }
}
