import type { Pool } from 'pg';
import { Prisma } from '../../generated/prisma/client';
import type { Db, Tx } from '../../infra/prisma';
import type { Asset, AssetListQuery, AssetUpdateFields, Page, TagCount, TagListQuery } from './asset.types';

type AssetRow = {
  id: string;
  ownerId: string;
  name: string;
  contentHash: string;
  size: bigint;
  mimeType: string;
  tags: string[];
  userMetadata: unknown;
  previewId: string | null;
  promptId: string | null;
  isImmutable: boolean;
  createdAt: Date;
  updatedAt: Date;
  lastAccessTime: Date;
};

export function toAsset(r: AssetRow): Asset {
  return {
    id: r.id,
    ownerId: r.ownerId,
    name: r.name,
    size: Number(r.size),
    blake3: r.contentHash.trim(),
    mimeType: r.mimeType,
    tags: r.tags ?? [],
    userMetadata: (r.userMetadata ?? {}) as Record<string, unknown>,
    previewId: r.previewId,
    promptId: r.promptId,
    isImmutable: r.isImmutable,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    lastAccessTime: r.lastAccessTime,
  };
}

const SELECT_ASSET = Prisma.sql`SELECT id::text AS "id", owner_id AS "ownerId", name, content_hash AS "contentHash", size,
  mime_type AS "mimeType", tags, user_metadata AS "userMetadata", preview_id::text AS "previewId",
  prompt_id::text AS "promptId", is_immutable AS "isImmutable", created_at AS "createdAt", updated_at AS "updatedAt",
  last_access_time AS "lastAccessTime" FROM asset`;

/** The same columns as SELECT_ASSET, as a prepared statement for the pg fast path of `findById`. */
const ASSET_BY_ID = {
  name: 'asset_by_id',
  text: `${SELECT_ASSET.sql} WHERE id = $1::uuid AND owner_id = $2`,
};

/** The same, for a batch of ids (GraphQL's batched `preview` loader). */
const ASSETS_BY_IDS = {
  name: 'assets_by_ids',
  text: `${SELECT_ASSET.sql} WHERE id = ANY($1::uuid[]) AND owner_id = $2`,
};

const SORT_COLUMN: Record<AssetListQuery['sort'], string> = {
  name: 'name',
  created_at: 'created_at',
  updated_at: 'updated_at',
  size: 'size',
  last_access_time: 'last_access_time',
};

export interface NewAssetRow {
  id: string;
  ownerId: string;
  name: string;
  contentHash: string;
  size: number;
  mimeType: string;
  tags: string[];
  userMetadata: Record<string, unknown>;
  previewId: string | null;
  promptId: string | null;
}

/** Asset rows. Every read and write is scoped by owner; a row of another owner is indistinguishable from none. */
export class AssetRepository {
  /**
   * `pool` is the pg pool behind `db`. When given, `findById` outside a transaction (GET /api/assets/{id}, GraphQL
   * `asset`) runs as one prepared statement on it: under 64 connections the Prisma client runtime took about a fifth
   * of that request's CPU for a primary-key lookup (bench/metadata.cjs, BENCHMARKS.md).
   */
  constructor(
    private readonly db: Db,
    private readonly pool?: Pool,
  ) {}

  async findById(ownerId: string, id: string, tx: Tx | Db = this.db): Promise<Asset | undefined> {
    if (this.pool && tx === this.db) {
      const { rows } = await this.pool.query<AssetRow>({ ...ASSET_BY_ID, values: [id, ownerId] });
      return rows[0] ? toAsset(rows[0]) : undefined;
    }
    const row = await tx.asset.findFirst({ where: { id, ownerId } });
    return row ? toAsset(row) : undefined;
  }

  /** The asset with this id of any owner: only to tell "mine" from "another owner's" when a client chooses the id. */
  async findByIdAnyOwner(id: string, tx: Tx | Db = this.db): Promise<Asset | undefined> {
    const row = await tx.asset.findUnique({ where: { id } });
    return row ? toAsset(row) : undefined;
  }

  async findByContent(ownerId: string, blake3: string, tx: Tx | Db = this.db): Promise<Asset | undefined> {
    const row = await tx.asset.findUnique({ where: { ownerId_contentHash: { ownerId, contentHash: blake3 } } });
    return row ? toAsset(row) : undefined;
  }

  async findManyByIds(ownerId: string, ids: readonly string[]): Promise<Asset[]> {
    if (this.pool) {
      // As findById: a page of 50 previews through the Prisma runtime was ~12 % of a GraphQL `assets(limit: 50)`
      // request's CPU in a --cpu-prof profile under 64 connections.
      const { rows } = await this.pool.query<AssetRow>({ ...ASSETS_BY_IDS, values: [[...ids], ownerId] });
      return rows.map(toAsset);
    }
    const rows = await this.db.asset.findMany({ where: { ownerId, id: { in: [...ids] } } });
    return rows.map(toAsset);
  }

  async insert(row: NewAssetRow, tx: Tx | Db = this.db): Promise<Asset> {
    const created = await tx.asset.create({
      data: {
        id: row.id,
        ownerId: row.ownerId,
        name: row.name,
        contentHash: row.contentHash,
        size: BigInt(row.size),
        mimeType: row.mimeType,
        tags: row.tags,
        userMetadata: row.userMetadata as Prisma.InputJsonObject,
        previewId: row.previewId,
        promptId: row.promptId,
      },
    });
    return toAsset(created);
  }

  async update(ownerId: string, id: string, fields: AssetUpdateFields, tx: Tx | Db = this.db): Promise<Asset | undefined> {
    const data: Prisma.AssetUpdateManyMutationInput = { updatedAt: new Date() };
    if (fields.name !== undefined) data.name = fields.name;
    if (fields.mimeType !== undefined) data.mimeType = fields.mimeType;
    if (fields.tags !== undefined) data.tags = fields.tags;
    if (fields.userMetadata !== undefined) data.userMetadata = fields.userMetadata as Prisma.InputJsonObject;
    if (fields.previewId !== undefined) data.previewId = fields.previewId;
    const rows = await tx.asset.updateManyAndReturn({ where: { id, ownerId }, data });
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  async setImmutable(ownerId: string | undefined, id: string, immutable: boolean): Promise<Asset | undefined> {
    const rows = await this.db.asset.updateManyAndReturn({
      where: ownerId === undefined ? { id } : { id, ownerId },
      data: { isImmutable: immutable, updatedAt: new Date() },
    });
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  /** Locks the row for a delete; returns it, or undefined when this owner has no such asset. */
  async lockForDelete(ownerId: string, id: string, tx: Tx): Promise<Asset | undefined> {
    const rows = await tx.$queryRaw<AssetRow[]>`${SELECT_ASSET} WHERE id = ${id}::uuid AND owner_id = ${ownerId} FOR UPDATE`;
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  async deleteRow(id: string, tx: Tx): Promise<void> {
    await tx.asset.delete({ where: { id } });
  }

  async countByContent(blake3: string, tx: Tx | Db = this.db): Promise<number> {
    return tx.asset.count({ where: { contentHash: blake3 } });
  }

  /** Marks last access at most once a minute per asset, so reads stay reads. */
  async touch(id: string): Promise<Date | undefined> {
    const rows = await this.db.$queryRaw<{ t: Date }[]>`UPDATE asset SET last_access_time = now()
      WHERE id = ${id}::uuid AND last_access_time < now() - interval '1 minute' RETURNING last_access_time AS t`;
    return rows[0]?.t;
  }

  async list(ownerId: string, q: AssetListQuery): Promise<Page<Asset>> {
    const where: Prisma.Sql[] = [Prisma.sql`owner_id = ${ownerId}`];
    if (q.includeTags.length > 0) where.push(Prisma.sql`tags @> ${q.includeTags}::text[]`);
    if (q.excludeTags.length > 0) where.push(Prisma.sql`NOT (tags && ${q.excludeTags}::text[])`);
    if (q.nameContains) where.push(Prisma.sql`name ILIKE ${'%' + escapeLike(q.nameContains) + '%'}`);
    if (q.metadataFilter && Object.keys(q.metadataFilter).length > 0) {
      // Containment uses the GIN index; the per-key equality makes nested objects/arrays match exactly, not by subset.
      where.push(Prisma.sql`user_metadata @> ${JSON.stringify(q.metadataFilter)}::jsonb`);
      for (const [k, v] of Object.entries(q.metadataFilter)) {
        if (v !== null && typeof v === 'object') where.push(Prisma.sql`user_metadata -> ${k} = ${JSON.stringify(v)}::jsonb`);
      }
    }
    const cond = Prisma.join(where, ' AND ');
    const dir = q.order === 'asc' ? Prisma.raw('ASC') : Prisma.raw('DESC');
    const col = Prisma.raw(SORT_COLUMN[q.sort]);
    const [rows, count] = await Promise.all([
      // asset.id, not id: a bare name in ORDER BY means the output column (id::text), which no index can serve.
      this.db.$queryRaw<AssetRow[]>`${SELECT_ASSET} WHERE ${cond} ORDER BY ${col} ${dir}, asset.id ${dir} LIMIT ${q.limit} OFFSET ${q.offset}`,
      this.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM asset WHERE ${cond}`,
    ]);
    const total = Number(count[0]?.n ?? 0);
    return { items: rows.map(toAsset), total, hasMore: q.offset + rows.length < total };
  }

  async listTags(ownerId: string, q: TagListQuery): Promise<Page<TagCount>> {
    const prefix = q.prefix ? Prisma.sql`AND t LIKE ${escapeLike(q.prefix.toLowerCase()) + '%'}` : Prisma.empty;
    const order = q.order === 'name_asc' ? Prisma.sql`t ASC` : Prisma.sql`count(*) DESC, t ASC`;
    const rows = await this.db.$queryRaw<{ name: string; count: bigint; total: bigint }[]>`
      SELECT t AS name, count(*) AS count, count(*) OVER () AS total
      FROM asset, unnest(tags) AS t WHERE owner_id = ${ownerId} ${prefix}
      GROUP BY t ORDER BY ${order} LIMIT ${q.limit} OFFSET ${q.offset}`;
    let total = Number(rows[0]?.total ?? 0);
    if (rows.length === 0 && q.offset > 0) {
      const c = await this.db.$queryRaw<{ n: bigint }[]>`SELECT count(DISTINCT t) AS n FROM asset, unnest(tags) AS t
        WHERE owner_id = ${ownerId} ${prefix}`;
      total = Number(c[0]?.n ?? 0);
    }
    return {
      items: rows.map((r) => ({ name: r.name, count: Number(r.count) })),
      total,
      hasMore: q.offset + rows.length < total,
    };
  }
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => '\\' + c);
}
