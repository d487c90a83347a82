import type { Db } from '../../infra/prisma';

export interface ApiKeyRow {
  id: string;
  ownerId: string;
  keyHash: string;
  isAdmin: boolean;
  label: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/** Stored API keys (`npm run keys`): only SHA-256 digests of the keys are kept. */
export class ApiKeyRepository {
  constructor(private readonly db: Db) {}

  async findByDigest(keyHash: string): Promise<ApiKeyRow | undefined> {
    return (await this.db.apiKey.findUnique({ where: { keyHash } })) ?? undefined;
  }

  insert(row: Omit<ApiKeyRow, 'createdAt' | 'revokedAt'>): Promise<ApiKeyRow> {
    return this.db.apiKey.create({ data: row });
  }

  list(): Promise<ApiKeyRow[]> {
    return this.db.apiKey.findMany({ orderBy: { createdAt: 'asc' } });
  }

  /** Revokes the key with this id or digest unless it already is; whether one was revoked. */
  async revoke(key: { id: string } | { keyHash: string }): Promise<boolean> {
    const res = await this.db.apiKey.updateMany({
      where: { ...key, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    return res.count > 0;
  }
}
