import crypto from 'node:crypto';
import type { Pool, QueryResultRow } from 'pg';
import { Prisma, type Asset as AssetRow } from '../../generated/prisma/client';
import { PreparedStatement } from '../../infra/pg-statement';
import { isUniqueViolation, prismaOf, type Db, type Transaction } from '../../infra/prisma';
import { AlreadyExists } from '../errors';
import type {
  Asset,
  AssetFilter,
  AssetListQuery,
  AssetPage,
  AssetUpdateFields,
  Page,
  TagCount,
  TagListQuery,
} from './asset.types';
import { CountCache } from './count-cache';
import { CURSOR_SORTS, encodeCursor, type CursorPosition } from './cursor';
import {
  COUNT_LIMIT,
  escapeLike,
  filterConditions,
  filterKey,
  isIncludeOnly,
  isTrue,
  isUnfiltered,
  limitOffset,
  ownerStatsOf,
  pageOffset,
  pageSql,
  totalFromCounts,
  type PageForm,
} from './listing-sql';

/** An asset row (Prisma's model of the table; the raw reads alias their columns to its field names). */
export function toAsset(r: AssetRow): Asset {
  return assetOf(r, r.ownerId);
}

/** A row read without its owner column (a listing page, whose owner is the caller's). */
function assetOf(r: Omit<AssetRow, 'ownerId'>, ownerId: string): Asset {
  return {
    id: r.id,
    ownerId,
    name: r.name,
    size: Number(r.size),
    blake3: r.contentHash.trim(),
    mimeType: r.mimeType,
    tags: r.tags ?? [],
    userMetadata: (r.userMetadata ?? {}) as Record<string, unknown>,
    previewId: r.previewId,
    previewRemoved: r.previewRemoved ?? false,
    promptId: r.promptId,
    isImmutable: r.isImmutable,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    lastAccessTime: r.lastAccessTime,
    hasThumbnail: r.hasThumbnail ?? false,
    metadata: (r.metadata ?? null) as Record<string, unknown> | null,
  };
}

const SELECT_ASSET = Prisma.sql`SELECT id::text AS "id", owner_id AS "ownerId", name, content_hash AS "contentHash", size,
  mime_type AS "mimeType", tags, user_metadata AS "userMetadata", preview_id::text AS "previewId",
  preview_removed AS "previewRemoved", prompt_id::text AS "promptId", is_immutable AS "isImmutable",
  created_at AS "createdAt", updated_at AS "updatedAt", last_access_time AS "lastAccessTime", has_thumbnail AS "hasThumbnail", metadata FROM asset`;

/** The same columns as SELECT_ASSET, as a prepared statement for the pg fast path of `findById`. */
const ASSET_BY_ID = new PreparedStatement<AssetRow>(
  'asset_by_id',
  `${SELECT_ASSET.sql} WHERE id = $1::uuid AND owner_id = $2`,
);

/** The same, for a batch of ids (GraphQL's batched `preview` loader). */
const ASSETS_BY_IDS = new PreparedStatement<AssetRow>(
  'assets_by_ids',
  `${SELECT_ASSET.sql} WHERE id = ANY($1::uuid[]) AND owner_id = $2`,
);

/** A new asset: its fields the client or the service chose (the rest are the table's defaults); the content's hash. */
export type NewAssetRow = Pick<
  Asset,
  'id' | 'ownerId' | 'name' | 'size' | 'mimeType' | 'tags' | 'userMetadata' | 'previewId' | 'promptId' | 'metadata'
> & { contentHash: string };

/** A new asset's row as Prisma writes it (one insert, or an import's batch). */
const assetData = (row: NewAssetRow): Prisma.AssetCreateManyInput => ({
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
  metadata: (row.metadata ?? undefined) as Prisma.InputJsonObject | undefined,
});

/**
 * Asset rows. Every read and write is scoped by owner; a row of another owner is indistinguishable from none.
 *
 * Two ways to the database, one per concern: writes, reads inside a transaction and the occasional reads go through
 * Prisma (`db`); the hot reads (an asset by id, a batch of previews, the listing's pages, counts and tags) run on
 * `pool`, the pg pool behind `db`, as prepared statements (infra/pg-statement.ts) or, when their plan depends on their
 * values, unnamed: through the Prisma client runtime a primary-key lookup or a 100-asset page cost more CPU than the
 * statement itself (`npm run bench -- metadata`, `npm run bench -- listing`).
 */
export class AssetRepository {
  /** Filtered totals and facets computed from the rows, under the owner's version (see CountCache). */
  private readonly counts = new CountCache<number>();
  // Fewer facet answers: one holds up to `limit` (≤ 1,000) tag counts.
  private readonly facets = new CountCache<{ counts: TagCount[]; lowerBounds: boolean }>(256);
  /**
   * Per owner and include tags: whether the tags were common when their page was last read (each page statement
   * says so from the counts it read), so the next page is sent in the named `commonTags` form (PageForm). Only a
   * choice of statement: a stale entry costs the guarded statement a second round trip, never a wrong page.
   */
  private readonly commonTags = new CountCache<boolean>(1000);

  constructor(
    private readonly db: Db,
    private readonly pool: Pool,
  ) {}

  /** The hot read of an asset (every GET, HEAD and content request): a prepared statement on the pool. */
  async findById(ownerId: string, id: string): Promise<Asset | undefined> {
    const { rows } = await ASSET_BY_ID.run(this.pool, [id, ownerId]);
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  /** The same read inside a transaction (its own connection, which the pool's statements cannot use). */
  async findByIdIn(tx: Transaction, ownerId: string, id: string): Promise<Asset | undefined> {
    const row = await prismaOf(tx, this.db).asset.findFirst({ where: { id, ownerId } });
    return row ? toAsset(row) : undefined;
  }

  /** The asset with this id of any owner: only to tell "mine" from "another owner's" when a client chooses the id. */
  async findByIdAnyOwner(id: string, tx?: Transaction): Promise<Asset | undefined> {
    const row = await prismaOf(tx, this.db).asset.findUnique({ where: { id } });
    return row ? toAsset(row) : undefined;
  }

  async findByContent(ownerId: string, blake3: string, tx?: Transaction): Promise<Asset | undefined> {
    const row = await prismaOf(tx, this.db).asset.findUnique({
      where: { ownerId_contentHash: { ownerId, contentHash: blake3 } },
    });
    return row ? toAsset(row) : undefined;
  }

  async findManyByIds(ownerId: string, ids: readonly string[]): Promise<Asset[]> {
    // As findById: a page of previews through the Prisma runtime cost a GraphQL list much of its CPU
    // (`npm run bench -- graphql --list`).
    const { rows } = await ASSETS_BY_IDS.run(this.pool, [[...ids], ownerId]);
    return rows.map(toAsset);
  }

  /** An asset with this id (or of this owner with this content) exists already: AlreadyExists, a race to retry. */
  async insert(row: NewAssetRow, tx?: Transaction): Promise<Asset> {
    const created = await prismaOf(tx, this.db)
      .asset.create({ data: assetData(row) })
      .catch((err: unknown) => {
        throw isUniqueViolation(err) ? new AlreadyExists(`asset ${row.id}`, { cause: err }) : err;
      });
    return toAsset(created);
  }

  /** Many new assets in one statement (an import's batch); an id or (owner, content) taken meanwhile fails it. */
  async insertMany(rows: readonly NewAssetRow[], tx: Transaction): Promise<void> {
    if (rows.length === 0) return;
    // The batch as one JSON parameter: Prisma's createMany compiled each of its ~700 values, which made the client
    // most of an in-place import's main-thread time (`npm run bench -- import --in-place`).
    const batch = JSON.stringify(
      rows.map((r) => ({
        id: r.id,
        owner_id: r.ownerId,
        name: r.name,
        content_hash: r.contentHash,
        size: r.size,
        mime_type: r.mimeType,
        tags: r.tags,
        user_metadata: r.userMetadata ?? {},
        preview_id: r.previewId,
        prompt_id: r.promptId,
        metadata: r.metadata ?? null,
      })),
    );
    await prismaOf(tx).$executeRaw`
        INSERT INTO asset (id, owner_id, name, content_hash, size, mime_type, tags, user_metadata, preview_id, prompt_id, metadata)
        SELECT id, owner_id, name, content_hash, size, mime_type, tags, user_metadata, preview_id, prompt_id, metadata
          FROM jsonb_to_recordset(${batch}::jsonb) AS r(id uuid, owner_id text, name text, content_hash text,
            size bigint, mime_type text, tags text[], user_metadata jsonb, preview_id uuid, prompt_id uuid, metadata jsonb)`.catch(
      (err: unknown) => {
        throw isUniqueViolation(err) ? new AlreadyExists('asset', { cause: err }) : err;
      },
    );
  }

  /** This owner's assets of these contents, by content hash (at most one each: one asset per owner and content). */
  async findByContents(ownerId: string, blake3s: readonly string[], tx: Transaction): Promise<Map<string, Asset>> {
    const rows = await prismaOf(tx).$queryRaw<AssetRow[]>`${SELECT_ASSET}
      WHERE owner_id = ${ownerId} AND content_hash = ANY(${[...blake3s]}::text[])`;
    return new Map(rows.map((r) => [r.contentHash.trim(), toAsset(r)]));
  }

  async update(ownerId: string, id: string, fields: AssetUpdateFields, tx?: Transaction): Promise<Asset | undefined> {
    const data: Prisma.AssetUpdateManyMutationInput = { updatedAt: new Date() };
    if (fields.name !== undefined) data.name = fields.name;
    if (fields.mimeType !== undefined) data.mimeType = fields.mimeType;
    if (fields.tags !== undefined) data.tags = fields.tags;
    if (fields.userMetadata !== undefined) data.userMetadata = fields.userMetadata as Prisma.InputJsonObject;
    if (fields.previewId !== undefined) {
      data.previewId = fields.previewId;
      // A preview set (or cleared) by the client replaces the memory of a deleted one.
      data.previewRemoved = false;
    }
    const rows = await prismaOf(tx, this.db).asset.updateManyAndReturn({ where: { id, ownerId }, data });
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  async setImmutable(ownerId: string | undefined, id: string, immutable: boolean): Promise<Asset | undefined> {
    const rows = await this.db.asset.updateManyAndReturn({
      where: ownerId === undefined ? { id } : { id, ownerId },
      data: { isImmutable: immutable, updatedAt: new Date() },
    });
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  /** Locks the row for a change (delete, tag edits); returns it, or undefined when this owner has no such asset. */
  async lockForUpdate(ownerId: string, id: string, tx: Transaction): Promise<Asset | undefined> {
    const rows = await prismaOf(tx).$queryRaw<
      AssetRow[]
    >`${SELECT_ASSET} WHERE id = ${id}::uuid AND owner_id = ${ownerId} FOR UPDATE`;
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  /**
   * Appends to `metadata.paths` those of `paths` it does not hold yet, keeping at most `max`, in one statement (so
   * concurrent appends of one asset never lose each other's paths); also adds the `tags` it lacks (at most `maxTags`
   * in all). Returns the asset's paths after, or undefined when this owner has no such asset.
   */
  async appendPaths(
    ownerId: string,
    id: string,
    paths: string[],
    max: number,
    tx?: Transaction,
    tags: string[] = [],
    maxTags = 0,
  ): Promise<string[] | undefined> {
    const rows = await prismaOf(tx, this.db).$queryRaw<{ paths: string[] }[]>`
      WITH cur AS (
        SELECT id, COALESCE(metadata->'paths', '[]'::jsonb) AS p FROM asset WHERE id = ${id}::uuid AND owner_id = ${ownerId} FOR UPDATE
      ), added AS (
        SELECT cur.id, cur.p || COALESCE((SELECT jsonb_agg(n ORDER BY i) FROM unnest(${paths}::text[]) WITH ORDINALITY AS u(n, i)
          WHERE NOT cur.p ? n), '[]'::jsonb) AS p FROM cur
      ), upd AS (
        UPDATE asset a SET
          metadata = jsonb_set(COALESCE(a.metadata, '{}'::jsonb), '{paths}',
            (SELECT COALESCE(jsonb_agg(e ORDER BY o), '[]'::jsonb) FROM jsonb_array_elements(added.p) WITH ORDINALITY AS x(e, o) WHERE o <= ${max})),
          tags = CASE WHEN cardinality(${tags}::text[]) = 0 THEN a.tags ELSE (
            SELECT a.tags || COALESCE(array_agg(t ORDER BY i), '{}') FROM unnest(${tags}::text[]) WITH ORDINALITY AS v(t, i)
            WHERE t <> ALL(a.tags) AND i <= ${maxTags} - cardinality(a.tags)) END
        FROM added WHERE a.id = added.id AND (added.p <> COALESCE(a.metadata->'paths', '[]'::jsonb) OR NOT a.tags @> ${tags}::text[])
        RETURNING a.metadata->'paths' AS paths
      )
      SELECT COALESCE((SELECT paths FROM upd), (SELECT p FROM cur)) AS paths FROM cur`;
    return rows[0] ? (rows[0].paths as unknown as string[]) : undefined;
  }

  async deleteRow(id: string, tx: Transaction): Promise<void> {
    await prismaOf(tx).asset.delete({ where: { id } });
  }

  /** After an asset was deleted: this owner's assets that used it as their preview have none (not their own). */
  async clearPreviewsOf(ownerId: string, previewId: string, tx: Transaction): Promise<void> {
    await prismaOf(tx).asset.updateMany({
      where: { ownerId, previewId },
      data: { previewId: null, previewRemoved: true },
    });
  }

  async countByContent(blake3: string, tx?: Transaction): Promise<number> {
    return prismaOf(tx, this.db).asset.count({ where: { contentHash: blake3 } });
  }

  /**
   * A name for this content that is safe to show this owner: the file name of this owner's own finished download of
   * it, else of any download of it from a public source URL. Upload file names of other owners are never read.
   */
  async knownNameOf(ownerId: string, blake3: string): Promise<string | undefined> {
    const rows = await this.db.$queryRaw<{ name: string }[]>`
      SELECT name FROM (
        SELECT result->>'filename' AS name, 1 AS rank, update_time AS at FROM task
        WHERE owner_id = ${ownerId} AND status = 'completed' AND result->>'assetHash' = ${'blake3:' + blake3}
        UNION ALL
        SELECT file_name, 2, created_at FROM source_content WHERE content_hash = ${blake3}
      ) known WHERE name IS NOT NULL AND btrim(name) <> '' ORDER BY rank, at DESC LIMIT 1`;
    return rows[0]?.name;
  }

  /** Marks last access at most once a minute per asset, so reads stay reads. */
  async touch(id: string): Promise<Date | undefined> {
    const rows = await this.db.$queryRaw<{ t: Date }[]>`UPDATE asset SET last_access_time = now()
      WHERE id = ${id}::uuid AND last_access_time < now() - interval '1 minute' RETURNING last_access_time AS t`;
    return rows[0]?.t;
  }

  /**
   * A page in keyset order (sort column, then id). With a cursor the rows strictly after it are read through the
   * (owner_id, column, id) index, so a page deep in the list costs what the first one does. One row more than the page
   * tells whether more follow. The total comes, in this order, from the maintained counts (`totalFromCounts`), from
   * this instance's cache of counts under the owner's current version, or from a count that stops at COUNT_LIMIT + 1.
   */
  async list(ownerId: string, q: AssetListQuery, after?: CursorPosition): Promise<AssetPage> {
    return (await this.pageIfChanged(ownerId, q, after, undefined))!;
  }

  /**
   * `list`; undefined when the owner's rows version is still `known` (the page read at it is still the answer): then
   * the request costs one primary-key read, a named statement whatever the filter (the page's statement may be
   * unnamed, planned per request).
   */
  async pageIfChanged(
    ownerId: string,
    q: AssetListQuery,
    after: CursorPosition | undefined,
    known: string | undefined,
  ): Promise<AssetPage | undefined> {
    if (await this.stillAt(ownerId, known)) return undefined;
    // Include tags only: the statement also says whether they are common (kept per owner and filter, as counts are).
    const hintKey = isIncludeOnly(q) ? `${ownerId}\0${filterKey(q)}` : undefined;
    const form: PageForm = isUnfiltered(q)
      ? 'owner'
      : hintKey !== undefined && this.commonTags.get(hintKey, '')
        ? 'commonTags'
        : 'planned';
    let rows = await this.read<ListRow>(
      pageSql(ownerId, q, after, PAGE_COLUMNS, form, hintKey !== undefined),
      form !== 'planned',
    );
    if (hintKey !== undefined) {
      const common = isTrue(rows[0]!.commonTags);
      this.commonTags.set(hintKey, '', common);
      // The tags were common when this filter was last read and are not now: the named statement read no page (its
      // guard); read it as the planner chooses (whether they are common is known now: not asked again).
      if (form === 'commonTags' && !common)
        rows = await this.read<ListRow>(pageSql(ownerId, q, after, PAGE_COLUMNS, 'planned', false), false);
    }
    const head = rows[0]!;
    const stats = ownerStatsOf(
      { ownerTotal: head.ownerTotal, ownerVersion: head.ownerVersion, tagCounts: head.tagCounts },
      q,
    );
    const counted = totalFromCounts(stats, q) ?? (await this.limitedCount(ownerId, q, stats.version));
    const found = head.id === null ? [] : (rows as (ListRow & { id: string })[]);
    const hasMore = found.length > q.limit;
    const items = found.slice(0, q.limit).map((r) => assetOf(r, ownerId));
    const totalIsLowerBound = counted > COUNT_LIMIT;
    const total = totalIsLowerBound ? Math.max(COUNT_LIMIT, pageOffset(q, after) + items.length) : counted;
    const n = items.length;
    const nextCursor =
      hasMore && n > 0 && CURSOR_SORTS.includes(q.sort)
        ? encodeCursor(q.sort, q.order, {
            value: sortValue(items[n - 1]!, q.sort),
            id: found[n - 1]!.id,
          })
        : undefined;
    return { items, total, hasMore, totalIsLowerBound, nextCursor, version: String(head.rowsVersion) };
  }

  /**
   * Whether the owner's rows version is still `known` (a page read at it is still the answer): one primary-key read.
   */
  private async stillAt(ownerId: string, known: string | undefined): Promise<boolean> {
    return known !== undefined && (await this.rowsVersion(ownerId)) === known;
  }

  /**
   * The owner's rows version now (0 before the owner's first asset): what moves with every change of any of the
   * owner's asset rows (GraphQL's kept list answers, http/graphql/kept-answers.ts). One primary-key read, a named
   * statement.
   */
  async rowsVersion(ownerId: string): Promise<string> {
    const [current] = await this.read<{ v: string | bigint }>(
      Prisma.sql`SELECT rows_version AS v FROM asset_owner_stats WHERE owner_id = ${ownerId}`,
      true,
    );
    return String(current?.v ?? 0);
  }

  /** The filtered count, stopped at COUNT_LIMIT + 1: from this instance's cache when counted at the current version. */
  private async limitedCount(ownerId: string, f: AssetFilter, version: string): Promise<number> {
    const key = `${ownerId}\0${filterKey(f)}`;
    const cached = this.counts.get(key, version);
    if (cached !== undefined) return cached;
    const countCond = Prisma.join(filterConditions(ownerId, f), ' AND ');
    // The version is read in the statement that counts, so the count is stored under the state it was counted in.
    const [row] = await this.read<{ n: string | bigint; version: string | bigint | null }>(Prisma.sql`
      SELECT (SELECT count(*) FROM (SELECT 1 FROM asset WHERE ${countCond} LIMIT ${COUNT_LIMIT + 1}) AS m) AS n,
        (SELECT version FROM asset_owner_stats WHERE owner_id = ${ownerId}) AS version`);
    const n = Number(row?.n ?? 0);
    this.counts.set(key, String(row?.version ?? 0), n);
    return n;
  }

  /** The base models the owner's assets name (derived `metadata.base_model`), most used first, then by name. */
  async baseModels(ownerId: string, limit: number): Promise<TagCount[]> {
    const rows = await this.read<{ name: string; count: string | number }>(
      Prisma.sql`SELECT metadata ->> 'base_model' AS name, count(*) AS count FROM asset
        WHERE owner_id = ${ownerId} AND metadata ->> 'base_model' <> ''
        GROUP BY 1 ORDER BY count(*) DESC, 1 ASC LIMIT ${limit}`,
      true,
    );
    return rows.map((r) => ({ name: r.name, count: Number(r.count) }));
  }

  /**
   * How many of the matching assets carry each tag, most used first, then by name (the refine facets). Like the
   * listing's total, the aggregate reads at most COUNT_LIMIT matching assets (the newest): beyond that the counts are
   * those of the newest 10,000 matches, lower bounds of the true ones (`lowerBounds`), so no facet request costs an
   * aggregate over hundreds of thousands of rows. A filtered answer is cached per instance under the owner's version,
   * as the listing's counts are.
   */
  async tagFacets(
    ownerId: string,
    filter: AssetFilter,
    limit: number,
  ): Promise<{ counts: TagCount[]; lowerBounds: boolean }> {
    if (isUnfiltered(filter)) {
      // Every asset of the owner: the maintained counts are the answer (no aggregate over all of them).
      const rows = await this.read<{ name: string; count: number }>(
        Prisma.sql`SELECT tag AS name, count FROM asset_tag_count
        WHERE owner_id = ${ownerId} AND count > 0 ORDER BY count DESC, tag ASC ${limitOffset(limit, 0, true)}`,
        true,
      );
      return { counts: rows.map((r) => ({ name: r.name, count: Number(r.count) })), lowerBounds: false };
    }
    const key = `${ownerId}\0${limit}\0${filterKey(filter)}`;
    const [current] = await this.read<{ version: string | bigint }>(
      Prisma.sql`SELECT version FROM asset_owner_stats WHERE owner_id = ${ownerId}`,
      true,
    );
    const cached = this.facets.get(key, String(current?.version ?? 0));
    if (cached) return cached;
    const cond = Prisma.join(filterConditions(ownerId, filter), ' AND ');
    const rows = await this.read<{
      name: string | null;
      count: string | bigint | null;
      matched: string | bigint;
      version: string | bigint | null;
    }>(Prisma.sql`
      WITH m AS (SELECT tags FROM asset WHERE ${cond} ORDER BY created_at DESC, asset.id DESC LIMIT ${COUNT_LIMIT + 1}),
           f AS (SELECT t AS name, count(*) AS count FROM (SELECT tags FROM m LIMIT ${COUNT_LIMIT}) AS s, unnest(s.tags) AS t
                 GROUP BY t ORDER BY count(*) DESC, t ASC LIMIT ${limit})
      SELECT f.name, f.count, (SELECT count(*) FROM m) AS matched,
        (SELECT version FROM asset_owner_stats WHERE owner_id = ${ownerId}) AS version
      FROM (SELECT 1) AS one LEFT JOIN f ON true ORDER BY f.count DESC, f.name ASC`);
    const counts = rows.filter((r) => r.name !== null).map((r) => ({ name: r.name!, count: Number(r.count) }));
    const value = { counts, lowerBounds: counts.length > 0 && Number(rows[0]!.matched) > COUNT_LIMIT };
    this.facets.set(key, String(rows[0]?.version ?? 0), value);
    return value;
  }

  /**
   * From the counts table the asset triggers keep (migration 20261122100000): no recount per request. The total rides
   * on the page as a window count; only a page past the end asks for it on its own.
   */
  async listTags(ownerId: string, q: TagListQuery): Promise<Page<TagCount>> {
    // Tags are stored trimmed, their case kept: a prefix is read the same way at its start (an inner or trailing blank
    // is part of it: "my " finds "my tag", not "mytag") and matches as the tag filters do, exactly ("New" finds
    // "NewTag", not "newtag").
    const start = q.prefix?.trimStart();
    const prefix = start ? Prisma.sql`AND tag LIKE ${escapeLike(start) + '%'}` : Prisma.empty;
    const order = q.order === 'name_asc' ? Prisma.sql`tag ASC` : Prisma.sql`count DESC, tag ASC`;
    const rows = await this.read<{ name: string; count: number; total: string | bigint }>(
      Prisma.sql`
      SELECT tag AS name, count, count(*) OVER () AS total FROM asset_tag_count WHERE owner_id = ${ownerId} AND count > 0 ${prefix}
      ORDER BY ${order} ${limitOffset(q.limit, q.offset, true)}`,
      true,
    );
    const n =
      rows.length > 0
        ? Number(rows[0]!.total)
        : Number(
            (
              await this.read<{ n: string | bigint }>(
                Prisma.sql`SELECT count(*) AS n FROM asset_tag_count WHERE owner_id = ${ownerId} AND count > 0 ${prefix}`,
              )
            )[0]?.n ?? 0,
          );
    return {
      items: rows.map((r) => ({ name: r.name, count: Number(r.count) })),
      total: n,
      hasMore: q.offset + rows.length < n,
    };
  }

  /**
   * The owner's assets made by one job (`prompt_id`), oldest first, through the (owner_id, prompt_id, created_at, id)
   * index; the total rides on the page as a window count (a job has few outputs), asked on its own only past the end.
   */
  async listByJob(ownerId: string, jobId: string, limit: number, offset: number): Promise<Page<Asset>> {
    const where = Prisma.sql`WHERE owner_id = ${ownerId} AND prompt_id = ${jobId}::uuid`;
    const rows = await this.db.$queryRaw<(AssetRow & { total: bigint })[]>`
      SELECT j.*, count(*) OVER () AS total FROM (${SELECT_ASSET} ${where}) AS j
      ORDER BY j."createdAt", j.id LIMIT ${limit} OFFSET ${offset}`;
    const counted = async () =>
      (await this.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM asset ${where}`)[0]?.n;
    const total = Number(rows.length > 0 ? rows[0]!.total : ((await counted()) ?? 0));
    return { items: rows.map(toAsset), total, hasMore: offset + rows.length < total };
  }

  /** The listing's statements (pages, counts, tags) on the pool, as the class says. */
  private async read<T extends QueryResultRow>(sql: Prisma.Sql, prepared = false): Promise<T[]> {
    // `prepared`: only statements whose best plan does not depend on their parameters (owner-only pages, primary-key
    // reads): a named statement is planned once per connection, where planning a page took longer than running it.
    // Other filters stay unnamed: a generic plan cannot tell a rare tag (GIN) from a common one (sort index); common
    // include tags are sent named in a form whose plan does not depend on them (PageForm).
    if (prepared) return (await preparedOf<T>(sql.text).run(this.pool, sql.values)).rows;
    return (await this.pool.query<T>({ text: sql.text, values: sql.values })).rows;
  }

  /**
   * Backfill of assets made before metadata existed: their own fields (name, size, source_url) over the content's.
   * Walks the primary key from `afterId`, so a table of millions is read once, not once per batch.
   */
  async fillMissingMetadata(afterId: string, limit: number): Promise<{ filled: number; lastId: string | undefined }> {
    // asset.id, not id: a bare name in ORDER BY means the output column (id::text), which sorted every remaining row
    // of the table per batch (a Sort over 2,000,000 rows 4,000 times on every start of the listing benchmark).
    const ids = await this.db.$queryRaw<{ id: string }[]>`SELECT id::text AS id FROM asset WHERE id > ${afterId}::uuid
      ORDER BY asset.id LIMIT ${limit}`;
    const lastId = ids[ids.length - 1]?.id;
    if (!lastId) return { filled: 0, lastId: undefined };
    const filled = await this.db
      .$executeRaw`UPDATE asset a SET metadata = coalesce(c.metadata, '{}'::jsonb) || jsonb_strip_nulls(jsonb_build_object(
        'filename', a.name, 'content_length', a.size, 'source_url', a.user_metadata -> 'source_url'))
      FROM content c WHERE c.blake3 = a.content_hash AND a.metadata IS NULL AND a.id > ${afterId}::uuid AND a.id <= ${lastId}::uuid`;
    return { filled, lastId };
  }
}

/** What every page statement's rows begin with: the owner's counts and versions, and the row's id (null: no rows). */
export interface PageHead {
  id: string | null;
  /** Include tags only: whether they are common (`COMMON_SHARE`). */
  commonTags?: boolean | null;
  ownerTotal: string | bigint;
  ownerVersion: string | bigint;
  rowsVersion: string | bigint;
  /** The maintained counts of the filter's tags. */
  tagCounts: number[];
}

type ListRow = Omit<AssetRow, 'ownerId' | 'id'> & PageHead;

/**
 * A listing page's columns: SELECT_ASSET's without owner_id (the caller's; one field less to decode per row). The
 * rows become assets (`assetOf`) and the transports present them: REST's assetJson, GraphQL's Asset type.
 */
export const PAGE_COLUMNS = `id::text AS "id", name, content_hash AS "contentHash", size, mime_type AS "mimeType", tags,
  user_metadata AS "userMetadata", preview_id::text AS "previewId", preview_removed AS "previewRemoved",
  prompt_id::text AS "promptId", is_immutable AS "isImmutable", created_at AS "createdAt", updated_at AS "updatedAt",
  last_access_time AS "lastAccessTime", has_thumbnail AS "hasThumbnail", metadata`;

/**
 * The named statements of the pages and counts, by text (a few dozen texts: the sorts and orders, with and without a
 * cursor); a name is the text's hash.
 */
const preparedStatements = new Map<string, PreparedStatement>();
function preparedOf<R extends QueryResultRow>(text: string): PreparedStatement<R> {
  let s = preparedStatements.get(text);
  if (s === undefined) {
    s = new PreparedStatement(`asset_list_${crypto.createHash('sha1').update(text).digest('hex').slice(0, 16)}`, text);
    preparedStatements.set(text, s);
  }
  return s as PreparedStatement<R>;
}

function sortValue(a: Asset, sort: AssetListQuery['sort']): string | number {
  if (sort === 'name') return a.name;
  if (sort === 'size') return a.size;
  return (sort === 'created_at' ? a.createdAt : a.updatedAt).toISOString();
}
