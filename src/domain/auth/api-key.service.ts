import crypto from 'node:crypto';
import type { BootstrapKey } from '../../config';
import type { Db } from '../../infra/prisma';
import type { Principal } from '../assets/asset.types';
import { DomainError } from '../errors';

export const hashKey = (key: string): string => crypto.createHash('sha256').update(key, 'utf8').digest('hex');

export interface ApiKeyInfo {
  id: string;
  ownerId: string;
  isAdmin: boolean;
  label: string;
  createdAt: Date;
  revokedAt: Date | null;
}

const CACHE_TTL_MS = 10_000;
const CACHE_MAX = 10_000;

/**
 * API keys. Only SHA-256 digests are kept, in memory for the bootstrap keys of API_KEYS/ADMIN_API_KEYS and in the
 * api_key table for keys made with `npm run keys`. Lookups are cached for 10 s, so a revoked key stops working
 * within 10 s on every instance.
 */
export class ApiKeyService {
  private readonly bootstrap = new Map<string, Principal>();
  private readonly cache = new Map<string, { principal: Principal | null; at: number }>();

  constructor(
    private readonly db: Db,
    bootstrapKeys: readonly BootstrapKey[],
  ) {
    for (const k of bootstrapKeys) {
      this.bootstrap.set(hashKey(k.key), { ownerId: k.owner, isAdmin: k.admin, keyId: `env:${k.owner}` });
    }
  }

  /** The principal of a presented key; 401 for a missing or unknown one. */
  async authenticate(key: string | undefined): Promise<Principal> {
    if (!key) throw new DomainError('UNAUTHORIZED', 'an API key is required (X-API-Key header)');
    const digest = hashKey(key);
    const fromEnv = this.bootstrap.get(digest);
    if (fromEnv) return fromEnv;
    const hit = this.cache.get(digest);
    let principal: Principal | null;
    if (hit && Date.now() - hit.at < CACHE_TTL_MS) {
      principal = hit.principal;
    } else {
      const row = await this.db.apiKey.findUnique({ where: { keyHash: digest } });
      principal = row && !row.revokedAt ? { ownerId: row.ownerId, isAdmin: row.isAdmin, keyId: row.id } : null;
      if (this.cache.size >= CACHE_MAX) this.cache.clear();
      this.cache.set(digest, { principal, at: Date.now() });
    }
    if (!principal) throw new DomainError('UNAUTHORIZED', 'the API key is not valid');
    return principal;
  }

  /** Makes a key; the plaintext is returned once and never stored. */
  async create(opts: { owner: string; admin?: boolean; label?: string }): Promise<{ key: string; info: ApiKeyInfo }> {
    if (!/^[\w.@-]{1,128}$/.test(opts.owner)) {
      throw new DomainError('INVALID_BODY', "owner must be 1-128 letters, digits, '.', '@', '_' or '-'");
    }
    const key = `ask_${crypto.randomBytes(24).toString('base64url')}`;
    const row = await this.db.apiKey.create({
      data: { id: crypto.randomUUID(), ownerId: opts.owner, keyHash: hashKey(key), isAdmin: !!opts.admin, label: opts.label ?? '' },
    });
    return { key, info: row };
  }

  async list(): Promise<ApiKeyInfo[]> {
    return this.db.apiKey.findMany({ orderBy: { createdAt: 'asc' } });
  }

  /** Revokes by id (or by the key itself); returns whether a key was revoked. */
  async revoke(idOrKey: string): Promise<boolean> {
    const isUuid = /^[0-9a-f-]{36}$/i.test(idOrKey);
    const res = await this.db.apiKey.updateMany({
      where: isUuid ? { id: idOrKey, revokedAt: null } : { keyHash: hashKey(idOrKey), revokedAt: null },
      data: { revokedAt: new Date() },
    });
    this.cache.clear();
    return res.count > 0;
  }
}
