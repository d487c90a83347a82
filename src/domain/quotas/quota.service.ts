import type { Transaction } from '../../infra/prisma';
import type { AuditService } from '../audit/audit.service';
import { requireScope, type Principal } from '../auth/scopes';
import { DomainError } from '../errors';
import type { QuotaRepository } from './quota.repository';
import type { QuotaChange, QuotaLimits, QuotaRequest, Usage } from './quota.types';

/** An owner name as keys have them (KeyCreateRequest's `owner`). */
const OWNER = /^[\w.@-]{1,128}$/;

/** The one refusal of a create that would pass a limit: 403 QUOTA_EXCEEDED with what was asked against what is left. */
export function quotaExceeded(kind: 'bytes' | 'assets', limit: number, used: number, requested: number): DomainError {
  return new DomainError(
    'QUOTA_EXCEEDED',
    `this would pass the owner's limit of ${limit} ${kind} (${used} used, ${requested} requested)`,
    { limit, used, requested, kind },
  );
}

/** Throws QUOTA_EXCEEDED when `requested` on top of `used` passes one of `limits` (bytes first). */
function assertFits(limits: QuotaLimits, used: { bytes: number; assets: number }, requested: QuotaRequest): void {
  if (limits.maxBytes !== undefined && requested.bytes > 0 && used.bytes + requested.bytes > limits.maxBytes)
    throw quotaExceeded('bytes', limits.maxBytes, used.bytes, requested.bytes);
  if (limits.maxAssets !== undefined && requested.assets > 0 && used.assets + requested.assets > limits.maxAssets)
    throw quotaExceeded('assets', limits.maxAssets, used.assets, requested.assets);
}

function ownerName(owner: unknown): string {
  if (typeof owner !== 'string' || !OWNER.test(owner))
    throw new DomainError('INVALID_BODY', 'owner must be 1 to 128 letters, digits, or . _ @ -', { field: 'owner' });
  return owner;
}

/** The largest limit of each kind (GraphQL's `maxAssets` is a 32-bit Int). */
const MAX_LIMIT = { max_bytes: Number.MAX_SAFE_INTEGER, max_assets: 2_147_483_647 };

function limitOf(v: unknown, field: keyof typeof MAX_LIMIT): number | null | undefined {
  if (v === undefined || v === null) return v;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > MAX_LIMIT[field])
    throw new DomainError('INVALID_BODY', `${field} must be a non-negative integer or null`, { field });
  return v;
}

/**
 * Quotas per owner (contract 8): admins set them, every owner reads its use. Creates check twice: early, where the
 * size is known before the bytes (`precheck`, no lock), and finally in the transaction of the asset insert under the
 * owner's quota row lock (`lock` + `admit`), so concurrent creates of one owner are admitted one at a time.
 */
export class QuotaService {
  constructor(
    private readonly repo: QuotaRepository,
    private readonly audit?: AuditService,
  ) {}

  /** The caller's use, or (admin keys) another owner's. */
  async usage(principal: Principal, owner?: string): Promise<Usage> {
    const target = owner === undefined ? principal.ownerId : ownerName(owner);
    if (target !== principal.ownerId) requireScope(principal, 'admin', "reading another owner's usage");
    return { owner: target, ...(await this.repo.usage(target)) };
  }

  /** PUT /api/owners/{owner}/quota (admin keys): sets or clears limits, records it, answers the owner's usage. */
  async setQuota(principal: Principal, owner: string, change: QuotaChange): Promise<Usage> {
    requireScope(principal, 'admin', 'setting quotas');
    const target = ownerName(owner);
    const maxBytes = limitOf(change.maxBytes, 'max_bytes');
    const maxAssets = limitOf(change.maxAssets, 'max_assets');
    await this.repo.setLimits(target, { maxBytes, maxAssets });
    const set: Record<string, number> = {};
    const cleared: string[] = [];
    for (const [k, v] of [
      ['max_bytes', maxBytes],
      ['max_assets', maxAssets],
    ] as const) {
      if (typeof v === 'number') set[k] = v;
      else if (v === null) cleared.push(k);
    }
    await this.audit?.recordBy(principal, { action: 'quota.set', targetOwner: target, details: { set, cleared } });
    return { owner: target, ...(await this.repo.usage(target)) };
  }

  /**
   * The early check of a create whose size is known before its bytes (a multipart Content-Length, a tus
   * Upload-Length, a download's stated size): bytes only, since whether it makes a new asset (or is a duplicate of
   * one the owner has) is known only at the end. No lock: the final check in `admit` decides.
   */
  async precheck(ownerId: string, bytes: number): Promise<void> {
    const u = await this.repo.usage(ownerId);
    assertFits(u, u, { bytes, assets: 0 });
  }

  /**
   * The check of a create whose content is known but not yet under its content address (ingested bytes): as `admit`
   * but without a lock, so a refused create never puts its blob in place. `isDuplicate` (does the owner have an asset
   * of this content already, which makes no new asset) is asked only when the create would be refused.
   */
  async precheckNew(ownerId: string, bytes: number, isDuplicate: () => Promise<boolean>): Promise<void> {
    const u = await this.repo.usage(ownerId);
    if (u.maxBytes === undefined && u.maxAssets === undefined) return;
    try {
      assertFits(u, u, { bytes, assets: 1 });
    } catch (err) {
      if (!(await isDuplicate())) throw err;
    }
  }

  /**
   * First statement of a create's transaction: the owner's limits, its quota row locked until the commit (nothing
   * is locked for an owner without limits). Taken before any content lock, so creates of one owner queue here only.
   */
  lock(ownerId: string, tx: Transaction): Promise<QuotaLimits | undefined> {
    return this.repo.lockLimits(ownerId, tx);
  }

  /** The final check, under `lock`, right before the insert of new assets: the use as committed by those before. */
  async admit(ownerId: string, limits: QuotaLimits, requested: QuotaRequest, tx: Transaction): Promise<void> {
    if (limits.maxBytes === undefined && limits.maxAssets === undefined) return;
    assertFits(limits, await this.repo.usage(ownerId, tx), requested);
  }
}
