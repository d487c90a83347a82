import type { Db } from '../../infra/prisma';
import type { Scope } from './scopes';

export interface ApiKeyRow {
  id: string;
  ownerId: string;
  keyHash: string;
  /** Kept equal to `admin` in scopes, for instances of the previous release during a rolling upgrade. */
  isAdmin: boolean;
  label: string;
  scopes: Scope[];
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export type NewApiKeyRow = Pick<ApiKeyRow, 'id' | 'ownerId' | 'keyHash' | 'label' | 'scopes' | 'expiresAt'>;

/** Stored API keys: only SHA-256 digests of the keys are kept. */
export class ApiKeyRepository {
  constructor(private readonly db: Db) {}

  async findByDigest(keyHash: string): Promise<ApiKeyRow | undefined> {
    const row = await this.db.apiKey.findUnique({ where: { keyHash } });
    return row ? rowOf(row) : undefined;
  }

  async findById(id: string): Promise<ApiKeyRow | undefined> {
    const row = await this.db.apiKey.findUnique({ where: { id } });
    return row ? rowOf(row) : undefined;
  }

  async insert(row: NewApiKeyRow): Promise<ApiKeyRow> {
    return rowOf(await this.db.apiKey.create({ data: { ...row, isAdmin: row.scopes.includes('admin') } }));
  }

  /** Keys of one owner, or of every owner (`undefined`), oldest first. */
  async list(ownerId: string | undefined): Promise<ApiKeyRow[]> {
    const rows = await this.db.apiKey.findMany({
      where: ownerId === undefined ? {} : { ownerId },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    });
    return rows.map(rowOf);
  }

  /**
   * Revokes the key with this id (of this owner, when one is given) or digest unless it already is; the revoked row,
   * or undefined when none matched.
   */
  async revoke(key: { id: string; ownerId?: string } | { keyHash: string }): Promise<ApiKeyRow | undefined> {
    const res = await this.db.apiKey.updateManyAndReturn({
      where: { ...key, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    return res[0] ? rowOf(res[0]) : undefined;
  }

  /** Records a use: written only when the last recorded one is a minute old or more (so at most once a minute). */
  async touch(id: string, at: Date): Promise<void> {
    await this.db.apiKey.updateMany({
      where: { id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lte: new Date(at.getTime() - 60_000) } }] },
      data: { lastUsedAt: at },
    });
  }
}

const rowOf = (r: Omit<ApiKeyRow, 'scopes'> & { scopes: string[] }): ApiKeyRow => ({
  ...r,
  scopes: r.scopes as Scope[],
});
