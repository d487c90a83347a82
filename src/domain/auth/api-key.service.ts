import crypto from 'node:crypto';
import { lruByCount } from '../../infra/lru';
import type { BootstrapKey } from '../../config';
import type { AuditService } from '../audit/audit.service';
import { DomainError } from '../errors';
import type { ApiKeyRepository, ApiKeyRow } from './api-key.repository';
import {
  forbidden,
  hasScope,
  isScope,
  legacyScopes,
  requireScope,
  SCOPES,
  sortedScopes,
  type Principal,
  type Scope,
} from './scopes';

export const hashKey = (key: string): string => crypto.hash('sha256', key, 'hex');

/** A stored key as its owner and operators see it: everything but its digest. */
export type ApiKeyInfo = Omit<ApiKeyRow, 'keyHash' | 'isAdmin'>;

export interface NewKeyInput {
  owner?: string;
  label?: string;
  scopes?: readonly string[];
  expiresAt?: Date;
}

/** The operator at the machine (`npm run keys`): every scope, recorded in the audit trail as key `cli`. */
export const OPERATOR: Principal = { ownerId: 'operator', scopes: SCOPES, keyId: 'cli' };

/**
 * How long a valid key is taken on this instance's word before the database is asked again: a key revoked on another
 * instance (or by `npm run keys`) stops working everywhere within this time (contract 8: 5 s). Expiry is checked on
 * every use, cached or not.
 */
export const CACHE_TTL_MS = 2_000;
const CACHE_MAX = 10_000;
/** Unknown keys remembered, so a client repeating one does not reach the database again within the TTL. */
const NEGATIVE_CACHE_MAX = 50_000;
const UNKNOWN_TTL_MS = 10_000;
/** Longer presented keys are refused unread (ours are 36 characters). */
const MAX_KEY_LENGTH = 512;
/** `last_used_at` is kept to the minute: one write per key per minute and instance at most. */
const LAST_USED_STEP_MS = 60_000;
const OWNER = /^[\w.@-]{1,128}$/;
const MAX_LABEL = 128;

interface ValidKey {
  principal: Principal;
  expiresAt: number | undefined;
}

/**
 * API keys. Only SHA-256 digests are kept, in memory for the bootstrap keys of API_KEYS/ADMIN_API_KEYS and in the
 * api_key table for keys made through the API or `npm run keys`. Valid keys are cached for CACHE_TTL_MS, unknown ones
 * for 10 s; every digest comparison is constant-time.
 */
export class ApiKeyService {
  private readonly bootstrap: { digest: Buffer; principal: Principal }[] = [];
  /**
   * Valid and unknown keys are cached apart, each an LRU with a TTL: a flood of unknown keys only evicts other unknown
   * keys, never a valid one, and a full cache drops its least recently used entries rather than everything.
   */
  private readonly valid = lruByCount<string, ValidKey>(CACHE_MAX, { ttl: CACHE_TTL_MS });
  private readonly unknown = lruByCount<string, true>(NEGATIVE_CACHE_MAX, { ttl: UNKNOWN_TTL_MS });
  /** When this instance last recorded each key's use (by key id). */
  private readonly lastUsed = lruByCount<string, number>(CACHE_MAX);

  constructor(
    private readonly repo: ApiKeyRepository,
    bootstrapKeys: readonly BootstrapKey[],
    private readonly audit?: AuditService,
  ) {
    for (const k of bootstrapKeys) {
      this.bootstrap.push({
        digest: Buffer.from(hashKey(k.key), 'hex'),
        principal: { ownerId: k.owner, scopes: legacyScopes(k.admin), keyId: `env:${k.owner}` },
      });
    }
  }

  /**
   * What is known of a key without asking the database: its principal (a bootstrap key, or a key looked up in the
   * last CACHE_TTL_MS), `null` when it is missing or known to be invalid, `undefined` when only the database can tell.
   */
  cached(key: string | undefined): Principal | null | undefined {
    if (!key || key.length > MAX_KEY_LENGTH) return null;
    const digest = hashKey(key);
    const p = this.fromBootstrap(digest) ?? this.fromCache(digest);
    if (p) return p;
    return this.unknown.has(digest) ? null : undefined;
  }

  /** The principal of a presented key; 401 for a missing, unknown, revoked or expired one. */
  async authenticate(key: string | undefined): Promise<Principal> {
    if (!key) throw new DomainError('UNAUTHORIZED', 'an API key is required (X-API-Key header)');
    if (key.length > MAX_KEY_LENGTH) throw invalidKey();
    const digest = hashKey(key);
    const known = this.fromBootstrap(digest) ?? this.fromCache(digest);
    if (known) return this.used(known);
    if (this.unknown.has(digest)) throw invalidKey();
    const row = await this.repo.findByDigest(digest);
    if (!row || !sameDigest(row.keyHash, digest) || row.revokedAt || isExpired(row.expiresAt, Date.now())) {
      this.unknown.set(digest, true);
      throw invalidKey();
    }
    const principal: Principal = { ownerId: row.ownerId, scopes: row.scopes, keyId: row.id };
    this.valid.set(digest, { principal, expiresAt: row.expiresAt?.getTime() });
    if (row.lastUsedAt && !this.lastUsed.has(row.id)) this.lastUsed.set(row.id, row.lastUsedAt.getTime());
    return this.used(principal);
  }

  /**
   * Makes a key for `actor`: for its own owner with at most its own scopes (never admin), or, with an admin key, for
   * any owner with any scopes. The plaintext is returned once and never stored.
   */
  async create(actor: Principal, input: NewKeyInput): Promise<{ key: string; info: ApiKeyInfo }> {
    const owner = input.owner ?? actor.ownerId;
    if (!OWNER.test(owner)) {
      throw new DomainError('INVALID_BODY', "owner must be 1-128 letters, digits, '.', '@', '_' or '-'", {
        field: 'owner',
      });
    }
    const label = input.label ?? '';
    if (label.length > MAX_LABEL)
      throw new DomainError('INVALID_BODY', `label must be at most ${MAX_LABEL} characters`, { field: 'label' });
    const asked = input.scopes ?? ['read', 'write'];
    const unknownScope = asked.find((s) => !isScope(s));
    if (unknownScope !== undefined || asked.length === 0) {
      throw new DomainError('INVALID_BODY', 'scopes must be a non-empty list of read, write and admin', {
        field: 'scopes',
      });
    }
    const scopes = sortedScopes(asked as Scope[]);
    if (input.expiresAt && input.expiresAt.getTime() <= Date.now())
      throw new DomainError('INVALID_BODY', 'expires_at must be in the future', { field: 'expires_at' });
    if (!hasScope(actor, 'admin')) {
      if (owner !== actor.ownerId) throw forbidden('admin', "making another owner's keys");
      const beyond = scopes.find((s) => s === 'admin' || !hasScope(actor, s));
      if (beyond) throw forbidden(beyond, `making a key with the ${beyond} scope`);
    }
    const key = `ask_${crypto.randomBytes(24).toString('base64url')}`;
    const row = await this.repo.insert({
      id: crypto.randomUUID(),
      ownerId: owner,
      keyHash: hashKey(key),
      label,
      scopes,
      expiresAt: input.expiresAt ?? null,
    });
    await this.audit?.recordBy(actor, {
      action: 'key.create',
      targetOwner: owner,
      targetId: row.id,
      details: { scopes, ...(label ? { label } : {}), ...(row.expiresAt ? { expires_at: row.expiresAt } : {}) },
    });
    return { key, info: infoOf(row) };
  }

  /** This owner's keys; an admin key may name another owner or ask for every owner's. */
  async list(actor: Principal, query: { owner?: string; allOwners?: boolean } = {}): Promise<ApiKeyInfo[]> {
    if (query.allOwners) requireScope(actor, 'admin', "listing every owner's keys");
    else if (query.owner !== undefined && query.owner !== actor.ownerId)
      requireScope(actor, 'admin', "listing another owner's keys");
    const owner = query.allOwners ? undefined : (query.owner ?? actor.ownerId);
    return (await this.repo.list(owner)).map(infoOf);
  }

  /**
   * Revokes a key by id: one of the actor's owner's keys whose scopes the actor has, or, with an admin key, any key.
   * Another owner's key is NOT_FOUND for a non-admin, exactly as a key that does not exist; a revoked key stays so.
   */
  async revoke(actor: Principal, id: string): Promise<void> {
    const admin = hasScope(actor, 'admin');
    const row = await this.repo.findById(id);
    if (!row || (!admin && row.ownerId !== actor.ownerId)) throw new DomainError('NOT_FOUND', `no key ${id}`);
    if (!admin) {
      const beyond = row.scopes.find((s) => s === 'admin' || !hasScope(actor, s));
      if (beyond) throw forbidden(beyond, `revoking a key with the ${beyond} scope`);
    }
    if (row.revokedAt) return;
    await this.revokeRow(actor, { id });
  }

  /** `npm run keys -- revoke ID|KEY`: any key, by id or by the key itself; whether one was revoked. */
  async revokeAny(actor: Principal, idOrKey: string): Promise<boolean> {
    const isUuid = /^[0-9a-f-]{36}$/i.test(idOrKey);
    return this.revokeRow(actor, isUuid ? { id: idOrKey } : { keyHash: hashKey(idOrKey) });
  }

  private async revokeRow(actor: Principal, where: { id: string } | { keyHash: string }): Promise<boolean> {
    const revoked = await this.repo.revoke(where);
    this.valid.clear();
    if (revoked) {
      await this.audit?.recordBy(actor, { action: 'key.revoke', targetOwner: revoked.ownerId, targetId: revoked.id });
    }
    return !!revoked;
  }

  private fromBootstrap(digest: string): Principal | undefined {
    const d = Buffer.from(digest, 'hex');
    let found: Principal | undefined;
    // Every entry is compared, in constant time, so the time taken says nothing about which one matched.
    for (const b of this.bootstrap) if (crypto.timingSafeEqual(b.digest, d)) found = b.principal;
    return found;
  }

  private fromCache(digest: string): Principal | undefined {
    const v = this.valid.get(digest);
    if (!v) return undefined;
    if (isExpired(v.expiresAt, Date.now())) {
      this.valid.delete(digest);
      return undefined;
    }
    return v.principal;
  }

  /** Records a stored key's use, to the minute: written in the background, once a minute at most. */
  private used(p: Principal): Principal {
    if (p.keyId.startsWith('env:')) return p;
    const now = Date.now();
    if (now - (this.lastUsed.get(p.keyId) ?? 0) >= LAST_USED_STEP_MS) {
      this.lastUsed.set(p.keyId, now);
      // A lost write costs one minute of last_used_at, never the request.
      this.repo.touch(p.keyId, new Date(now)).catch(() => this.lastUsed.delete(p.keyId));
    }
    return p;
  }
}

const isExpired = (expiresAt: Date | number | null | undefined, now: number): boolean =>
  expiresAt !== null &&
  expiresAt !== undefined &&
  (typeof expiresAt === 'number' ? expiresAt : expiresAt.getTime()) <= now;
const sameDigest = (a: string, b: string): boolean =>
  a.length === b.length && crypto.timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
const infoOf = ({ keyHash: _digest, isAdmin: _admin, ...info }: ApiKeyRow): ApiKeyInfo => info;
const invalidKey = () => new DomainError('UNAUTHORIZED', 'the API key is not valid');
