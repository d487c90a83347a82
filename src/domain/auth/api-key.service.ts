import crypto from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { BootstrapKey } from '../../config';
import type { Principal } from '../assets/asset.types';
import { DomainError } from '../errors';
import type { ApiKeyRepository, ApiKeyRow } from './api-key.repository';

export const hashKey = (key: string): string => crypto.hash('sha256', key, 'hex');

/** A stored key as operators see it (`npm run keys -- list`): everything but its digest. */
export type ApiKeyInfo = Omit<ApiKeyRow, 'keyHash'>;

const CACHE_TTL_MS = 10_000;
const CACHE_MAX = 10_000;
/** Unknown keys remembered, so a client repeating one does not reach the database again within the TTL. */
const NEGATIVE_CACHE_MAX = 50_000;

/**
 * API keys. Only SHA-256 digests are kept, in memory for the bootstrap keys of API_KEYS/ADMIN_API_KEYS and in the
 * api_key table for keys made with `npm run keys`. Lookups are cached for 10 s, so a revoked key stops working
 * within 10 s on every instance.
 */
export class ApiKeyService {
  private readonly bootstrap = new Map<string, Principal>();
  /**
   * Valid and unknown keys are cached apart, each an LRU with a TTL: a flood of unknown keys only evicts other unknown
   * keys, never a valid one, and a full cache drops its least recently used entries rather than everything.
   */
  private readonly valid = new LRUCache<string, Principal>({ max: CACHE_MAX, ttl: CACHE_TTL_MS });
  private readonly unknown = new LRUCache<string, true>({ max: NEGATIVE_CACHE_MAX, ttl: CACHE_TTL_MS });

  constructor(
    private readonly repo: ApiKeyRepository,
    bootstrapKeys: readonly BootstrapKey[],
  ) {
    for (const k of bootstrapKeys) {
      this.bootstrap.set(hashKey(k.key), { ownerId: k.owner, isAdmin: k.admin, keyId: `env:${k.owner}` });
    }
  }

  /**
   * What is known of a key without asking the database: its principal (a bootstrap key, or a key looked up in the
   * last 10 s), `null` when it is missing or known to be invalid, `undefined` when only the database can tell.
   */
  cached(key: string | undefined): Principal | null | undefined {
    if (!key) return null;
    const digest = hashKey(key);
    const p = this.bootstrap.get(digest) ?? this.valid.get(digest);
    if (p) return p;
    return this.unknown.has(digest) ? null : undefined;
  }

  /** The principal of a presented key; 401 for a missing or unknown one. */
  async authenticate(key: string | undefined): Promise<Principal> {
    if (!key) throw new DomainError('UNAUTHORIZED', 'an API key is required (X-API-Key header)');
    const digest = hashKey(key);
    const known = this.bootstrap.get(digest) ?? this.valid.get(digest);
    if (known) return known;
    if (this.unknown.has(digest)) throw invalidKey();
    const row = await this.repo.findByDigest(digest);
    if (!row || row.revokedAt) {
      this.unknown.set(digest, true);
      throw invalidKey();
    }
    const principal: Principal = { ownerId: row.ownerId, isAdmin: row.isAdmin, keyId: row.id };
    this.valid.set(digest, principal);
    return principal;
  }

  /** Makes a key; the plaintext is returned once and never stored. */
  async create(opts: { owner: string; admin?: boolean; label?: string }): Promise<{ key: string; info: ApiKeyInfo }> {
    if (!/^[\w.@-]{1,128}$/.test(opts.owner)) {
      throw new DomainError('INVALID_BODY', "owner must be 1-128 letters, digits, '.', '@', '_' or '-'");
    }
    const key = `ask_${crypto.randomBytes(24).toString('base64url')}`;
    const row = await this.repo.insert({
      id: crypto.randomUUID(),
      ownerId: opts.owner,
      keyHash: hashKey(key),
      isAdmin: !!opts.admin,
      label: opts.label ?? '',
    });
    return { key, info: infoOf(row) };
  }

  async list(): Promise<ApiKeyInfo[]> {
    return (await this.repo.list()).map(infoOf);
  }

  /** Revokes by id (or by the key itself); returns whether a key was revoked. */
  async revoke(idOrKey: string): Promise<boolean> {
    const isUuid = /^[0-9a-f-]{36}$/i.test(idOrKey);
    const revoked = await this.repo.revoke(isUuid ? { id: idOrKey } : { keyHash: hashKey(idOrKey) });
    this.valid.clear();
    return revoked;
  }
}

const infoOf = ({ keyHash: _digest, ...info }: ApiKeyRow): ApiKeyInfo => info;
const invalidKey = () => new DomainError('UNAUTHORIZED', 'the API key is not valid');
