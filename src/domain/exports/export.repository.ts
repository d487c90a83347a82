import { prismaOf, type Db, type Transaction } from '../../infra/prisma';

export interface ExportArchiveRecord {
  name: string;
  ownerId: string;
  taskId: string;
  size: number;
  expiresAt: Date;
  /** When the archive was written (known once stored). */
  createdAt?: Date;
}

export interface ExportableAsset {
  id: string;
  name: string;
  contentHash: string;
  size: number;
  promptId: string | null;
  previewId: string | null;
  createdAt: Date;
}

const toAsset = (r: {
  id: string;
  name: string;
  contentHash: string;
  size: bigint;
  promptId: string | null;
  previewId: string | null;
  createdAt: Date;
}): ExportableAsset => ({
  id: r.id,
  name: r.name,
  contentHash: r.contentHash.trim(),
  size: Number(r.size),
  promptId: r.promptId,
  previewId: r.previewId,
  createdAt: r.createdAt,
});

const SELECT = {
  id: true,
  name: true,
  contentHash: true,
  size: true,
  promptId: true,
  previewId: true,
  createdAt: true,
} as const;

/** Export archives (table `export_archive`) and the assets an export selects. */
export class ExportRepository {
  constructor(private readonly db: Db) {}

  /** This owner's assets named by id or made by one of the jobs, oldest first; at most `limit`. */
  async selectAssets(ownerId: string, assetIds: string[], jobIds: string[], limit: number): Promise<ExportableAsset[]> {
    const rows = await this.db.asset.findMany({
      where: {
        ownerId,
        OR: [
          ...(assetIds.length ? [{ id: { in: assetIds } }] : []),
          ...(jobIds.length ? [{ promptId: { in: jobIds } }] : []),
        ],
      },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      take: limit,
      select: SELECT,
    });
    return rows.map(toAsset);
  }

  async assetsByIds(ownerId: string, ids: string[]): Promise<ExportableAsset[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.asset.findMany({ where: { ownerId, id: { in: ids } }, select: SELECT });
    return rows.map(toAsset);
  }

  async insertArchive(rec: ExportArchiveRecord, tx?: Transaction): Promise<void> {
    await prismaOf(tx, this.db).exportArchive.create({
      data: {
        name: rec.name,
        ownerId: rec.ownerId,
        taskId: rec.taskId,
        size: BigInt(rec.size),
        expiresAt: rec.expiresAt,
      },
    });
  }

  async findArchive(name: string): Promise<ExportArchiveRecord | undefined> {
    const r = await this.db.exportArchive.findUnique({ where: { name } });
    if (!r) return undefined;
    return {
      name: r.name,
      ownerId: r.ownerId,
      taskId: r.taskId,
      size: Number(r.size ?? 0),
      expiresAt: r.expiresAt,
      createdAt: r.createdAt,
    };
  }

  async findExpired(now: Date, limit: number): Promise<string[]> {
    const rows = await this.db.exportArchive.findMany({
      where: { expiresAt: { lte: now } },
      select: { name: true },
      take: limit,
    });
    return rows.map((r) => r.name);
  }

  async deleteArchive(name: string): Promise<void> {
    await this.db.exportArchive.deleteMany({ where: { name } });
  }
}
