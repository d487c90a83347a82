import { Prisma } from '../../generated/prisma/client';
import type { AssetFilter, AssetKind, AssetListQuery } from './asset.types';
import type { CursorPosition } from './cursor';

/**
 * The SQL of the listing (GET /api/assets, GraphQL `assets`, the refine facets): the page statement in its forms, the
 * filters' conditions, and the totals the maintained counts decide. Pure functions of the query; AssetRepository runs
 * them (the page's columns: PAGE_COLUMNS, asset.repository.ts).
 */

/** `total` is exact up to this many matches; above it the count stops and is a lower bound. */
export const COUNT_LIMIT = 10_000;

const SORT_COLUMN: Record<AssetListQuery['sort'], string> = {
  name: 'name',
  created_at: 'created_at',
  updated_at: 'updated_at',
  size: 'size',
  last_access_time: 'last_access_time',
};

/**
 * How a page statement is sent. `owner`: no filter; named (planned once per connection), LIMIT and OFFSET as
 * InitPlans (`limitOffset`). `planned`: unnamed, planned per request with its values, because the best plan depends
 * on them (a rare tag: the GIN index; a common one: the sort index). `commonTags`: include tags only, and they were
 * common when this filter was last read (`COMMON_SHARE`): named, its plan the sort index's scan from the cursor with
 * the tags as a Filter (their condition written so that the GIN index cannot serve it, so the plan does not depend on
 * the tags and the generic plan is kept), guarded by the same test on the counts read in the statement itself: when
 * the tags are no longer common, the page is not read (a One-Time Filter) and is read `planned`.
 */
export type PageForm = 'owner' | 'planned' | 'commonTags';

/**
 * Include tags are common when the share of the owner's assets expected to carry them all (the product of each tag's
 * share, as the planner assumes them independent) is at least this: the sort index's scan then reads about
 * (limit + 1) / share rows, at most ten times the page, where the GIN index would read every match
 * (`npm run bench -- listing`).
 */
export const COMMON_SHARE = 0.1;

/** The rows skipped before a page: `offset`, or none after a cursor. */
export const pageOffset = (q: AssetListQuery, after: CursorPosition | undefined): number => (after ? 0 : q.offset);

/**
 * The page statement: the owner's counts and rows version (one row, always) and, beside them, the page. `withCommon`
 * (the filter is include tags only, isIncludeOnly): the row also says whether those tags are common.
 */
export function pageSql(
  ownerId: string,
  q: AssetListQuery,
  after: CursorPosition | undefined,
  columns: string,
  form: PageForm,
  withCommon: boolean,
): Prisma.Sql {
  const { cond, col, dir } = pageTerms(ownerId, q, after, form === 'commonTags');
  const offset = pageOffset(q, after);
  // One round trip, one snapshot. The lateral page is the inner side of a nested loop over that one row, so its rows
  // come in the page's order. asset.id, not id: a bare name in ORDER BY means the output column, which no index serves.
  // With include tags only, the statement also says whether they are common (`commonTags`), from the counts it read;
  // the stats are then a subquery of their own (OFFSET 0), so that test is made once, not once per row of the page.
  const stats = withCommon
    ? Prisma.sql`SELECT s0.*, (SELECT min(x) > 0 AND sum(ln(greatest(x, 1)::float8 / greatest(s0.total, 1))) >= ln(${Prisma.raw(String(COMMON_SHARE))})
        FROM unnest(s0.counts) AS x) AS common FROM (${ownerStatsSql(ownerId, q, form === 'commonTags')}) AS s0 OFFSET 0`
    : ownerStatsSql(ownerId, q);
  return Prisma.sql`SELECT s.total AS "ownerTotal", s.version AS "ownerVersion", s.rows_version AS "rowsVersion", s.counts AS "tagCounts",
      ${withCommon ? Prisma.sql`s.common AS "commonTags", ` : Prisma.empty}p.*
    FROM (${stats}) AS s LEFT JOIN LATERAL (
      SELECT ${Prisma.raw(columns)} FROM asset WHERE ${form === 'commonTags' ? Prisma.sql`s.common AND ` : Prisma.empty}${cond}
      ORDER BY ${col} ${dir}, asset.id ${dir} ${limitOffset(q.limit + 1, offset, form !== 'planned')}) AS p ON true`;
}

/**
 * The WHERE terms, sort column and direction of a page (with a cursor: the rows strictly after it). `sortIndexOnly`
 * (include tags only): the tags' condition as `coalesce(tags, '{}') @> ...`, the same rows (no include tag matches an
 * empty array, and NULL matches nothing either way) in a form no index serves.
 */
function pageTerms(ownerId: string, q: AssetListQuery, after: CursorPosition | undefined, sortIndexOnly = false) {
  const where = sortIndexOnly
    ? [Prisma.sql`owner_id = ${ownerId}`, Prisma.sql`coalesce(tags, '{}') @> (SELECT ${q.includeTags}::text[])`]
    : filterConditions(ownerId, q);
  const asc = q.order === 'asc';
  const col = Prisma.raw(SORT_COLUMN[q.sort]);
  if (after) {
    const v =
      q.sort === 'size'
        ? Prisma.sql`${after.value}::bigint`
        : q.sort === 'name'
          ? Prisma.sql`${after.value}::text`
          : Prisma.sql`${after.value}::timestamptz`;
    where.push(
      asc
        ? Prisma.sql`(${col}, asset.id) > (${v}, ${after.id}::uuid)`
        : Prisma.sql`(${col}, asset.id) < (${v}, ${after.id}::uuid)`,
    );
  }
  return { cond: Prisma.join(where, ' AND '), col, dir: Prisma.raw(asc ? 'ASC' : 'DESC') };
}

/**
 * The owner's maintained total and change counters, and the maintained counts of the filter's tags (include, any,
 * exclude, in that order; 0 for a tag no asset carries): one row of primary-key reads of asset_owner_stats and
 * asset_tag_count (a lookup per tag, written so: a join let a named statement's generic plan read every tag count
 * of the owner).
 */
function ownerStatsSql(ownerId: string, f: AssetFilter, opaqueTags = false): Prisma.Sql {
  const tags = [...f.includeTags, ...(f.anyTags ?? []), ...f.excludeTags];
  // `opaqueTags` (the named statement of common include tags): the tags as an InitPlan, unknown to every plan as
  // LIMIT and OFFSET are (limitOffset), so a custom plan costs what the generic one does and the generic one is kept.
  // With the tags known to custom plans, their estimate and the generic plan's were within PostgreSQL's planning-cost
  // margin (111 + ~28 against 139), and which one it kept varied from run to run (query-plans.test.ts).
  const list = opaqueTags ? Prisma.sql`(SELECT ${tags}::text[])` : Prisma.sql`${tags}::text[]`;
  return Prisma.sql`SELECT coalesce(o.asset_count, 0) AS total, coalesce(o.version, 0) AS version, coalesce(o.rows_version, 0) AS rows_version,
      ARRAY(SELECT coalesce((SELECT c.count FROM asset_tag_count c WHERE c.owner_id = ${ownerId} AND c.tag = t.tag), 0)
            FROM unnest(${list}) WITH ORDINALITY AS t(tag, i) ORDER BY t.i) AS counts
    FROM (SELECT 1) AS one LEFT JOIN asset_owner_stats o ON o.owner_id = ${ownerId}`;
}

export function ownerStatsOf(
  row: { ownerTotal: string | bigint; ownerVersion: string | bigint; tagCounts: number[] },
  f: AssetFilter,
): OwnerStats {
  const counts = (row.tagCounts ?? []).map(Number);
  const nInclude = f.includeTags.length;
  const nAny = f.anyTags?.length ?? 0;
  return {
    total: Number(row.ownerTotal),
    version: String(row.ownerVersion),
    include: counts.slice(0, nInclude),
    any: counts.slice(nInclude, nInclude + nAny),
    exclude: counts.slice(nInclude + nAny),
  };
}

/**
 * LIMIT and OFFSET of a statement. In a named (prepared) statement they are read by the executor (InitPlans), not
 * planned: with `LIMIT $n` the planner's estimate of a generic plan assumes a tenth of the rows (hundreds of times a
 * custom plan's cost for a 100-row page of an owner with 500,000 assets), so PostgreSQL kept planning the page
 * statement anew on every execution, a good part of its CPU per page (`node bench/profiles/listing-pg-cost.cjs`). With
 * both unknown to every plan, the generic plan costs what a custom one does and is kept. The plan is the same: the
 * owner's index in the sort's order, stopped after the limit. Unnamed statements (tag and text filters, planned per
 * request anyway) keep them as plain parameters, which their plans may depend on (a rare tag: the GIN index). The named
 * form of common include tags (PageForm) takes them as InitPlans too.
 */
export function limitOffset(limit: number, offset: number, prepared: boolean): Prisma.Sql {
  return prepared
    ? Prisma.sql`LIMIT (SELECT ${limit}::bigint) OFFSET (SELECT ${offset}::bigint)`
    : Prisma.sql`LIMIT ${limit} OFFSET ${offset}`;
}

export interface OwnerStats {
  /** The owner's assets (asset_owner_stats). */
  total: number;
  /** The owner's change counter (asset_owner_stats.version), as text. */
  version: string;
  /** Maintained counts of the filter's include, any and exclude tags, in the filter's order. */
  include: number[];
  any: number[];
  exclude: number[];
}

/** No condition but (perhaps) include tags. */
function includeTagsAtMost(f: AssetFilter): boolean {
  return (
    f.excludeTags.length === 0 &&
    !f.anyTags?.length &&
    !f.nameContains &&
    !f.hash &&
    Object.keys(f.metadataFilter ?? {}).length === 0 &&
    !hasUncountedTerm(f)
  );
}

/** A kind, creation time or base model condition (no maintained count knows those). */
const hasUncountedTerm = (f: AssetFilter): boolean =>
  !!f.kinds?.length || !!f.createdAfter || !!f.createdBefore || !!f.baseModel;

/** Only include tags (`include_tags` / `tags_all`): filters whose page the named `commonTags` statement may read. */
export const isIncludeOnly = (f: AssetFilter): boolean => f.includeTags.length > 0 && includeTagsAtMost(f);

export const isUnfiltered = (f: AssetFilter): boolean => f.includeTags.length === 0 && includeTagsAtMost(f);

/** A boolean column as pg parses it or as PostgreSQL prints it (`t`). */
export const isTrue = (v: unknown): boolean => v === true || v === 't';

/** The filter as a cache key (the conditions only, not the page). */
export function filterKey(f: AssetFilter): string {
  return JSON.stringify([
    f.includeTags,
    f.anyTags ?? [],
    f.excludeTags,
    f.nameContains ?? null,
    f.hash ?? null,
    f.metadataFilter ?? null,
    f.kinds ?? [],
    f.createdAfter?.toISOString() ?? null,
    f.createdBefore?.toISOString() ?? null,
    f.baseModel ?? null,
  ]);
}

/**
 * A filter's count, stopped at COUNT_LIMIT + 1 as the counting statement would, when the maintained counts decide it;
 * undefined when only the rows can. Exact for no filter or one tag condition (one include tag: its count; one
 * exclude tag: the rest; tags_any of one tag). For tag filters otherwise, a lower bound by the union bound on the
 * assets that fail a condition: the matches are at least total − Σ(total − include_i) − (total − max any_j) −
 * Σ exclude_k, and when that is over COUNT_LIMIT the answer is `total_is_lower_bound` without counting a row.
 */
export function totalFromCounts(s: OwnerStats, f: AssetFilter): number | undefined {
  const stop = (n: number) => Math.min(Math.max(n, 0), COUNT_LIMIT + 1);
  if (f.nameContains || f.hash || Object.keys(f.metadataFilter ?? {}).length > 0 || hasUncountedTerm(f))
    return undefined;
  const conditions = s.include.length + (s.any.length > 0 ? 1 : 0) + s.exclude.length;
  if (conditions === 0) return stop(s.total);
  if (conditions === 1) {
    if (s.include.length === 1) return stop(s.include[0]!);
    if (s.exclude.length === 1) return stop(s.total - s.exclude[0]!);
    if (s.any.length === 1) return stop(s.any[0]!);
  }
  let lower = s.total;
  for (const c of s.include) lower -= s.total - c;
  if (s.any.length > 0) lower -= s.total - Math.max(...s.any);
  for (const c of s.exclude) lower -= c;
  return lower > COUNT_LIMIT ? COUNT_LIMIT + 1 : undefined;
}

/** The WHERE terms of GET /api/assets' filters; each one is served by an index (see query-plans.test.ts). */
export function filterConditions(ownerId: string, f: AssetFilter): Prisma.Sql[] {
  const where: Prisma.Sql[] = [Prisma.sql`owner_id = ${ownerId}`];
  if (f.includeTags.length > 0) where.push(Prisma.sql`tags @> ${f.includeTags}::text[]`);
  if (f.anyTags && f.anyTags.length > 0) where.push(Prisma.sql`tags && ${f.anyTags}::text[]`);
  if (f.excludeTags.length > 0) where.push(Prisma.sql`NOT (tags && ${f.excludeTags}::text[])`);
  if (f.nameContains) where.push(Prisma.sql`name ILIKE ${'%' + escapeLike(f.nameContains) + '%'}`);
  if (f.hash) {
    where.push(
      f.hash.algorithm === 'blake3'
        ? Prisma.sql`content_hash = ${f.hash.hex}`
        : Prisma.sql`content_hash = (SELECT blake3 FROM content WHERE sha256 = ${f.hash.hex})`,
    );
  }
  for (const [k, v] of Object.entries(f.metadataFilter ?? {})) {
    const term = metadataTerm(k, v);
    if (term) where.push(term);
  }
  if (f.kinds?.length) where.push(Prisma.sql`(${Prisma.join(f.kinds.map(kindTerm), ' OR ')})`);
  if (f.createdAfter) where.push(Prisma.sql`created_at > ${f.createdAfter}`);
  if (f.createdBefore) where.push(Prisma.sql`created_at < ${f.createdBefore}`);
  // Not index-served: read among the owner's rows (owner_id's index), as the kinds are; Prisma's schema cannot name an
  // expression index, and an owner's few thousand models are read in milliseconds.
  if (f.baseModel) where.push(Prisma.sql`metadata ->> 'base_model' = ${f.baseModel}`);
  return where;
}

/** Model weights' file names (what the asset browser's kindOf reads as a model). */
const MODEL_NAME = String.raw`\.(safetensors|sft|gguf|ckpt|pt|pth|bin|onnx)$`;
const MEDIA_KINDS: Record<Exclude<AssetKind, 'model' | 'other'>, Prisma.Sql> = {
  image: Prisma.sql`mime_type ILIKE 'image/%'`,
  video: Prisma.sql`mime_type ILIKE 'video/%'`,
  audio: Prisma.sql`mime_type ILIKE 'audio/%'`,
  // JSON (`application/json`, `…+json`) and YAML read as text, as the browser shows them.
  text: Prisma.sql`(mime_type ILIKE 'text/%' OR mime_type ~* ${String.raw`^application/([a-z0-9.-]*\+)?json`} OR mime_type ILIKE '%yaml%')`,
};

/** One kind's condition: a model by its name first, so a model file is never also counted as its media type. */
function kindTerm(kind: AssetKind): Prisma.Sql {
  const model = Prisma.sql`name ~* ${MODEL_NAME}`;
  if (kind === 'model') return model;
  if (kind === 'other') return Prisma.sql`NOT (${model} OR ${Prisma.join(Object.values(MEDIA_KINDS), ' OR ')})`;
  return Prisma.sql`(NOT ${model} AND ${MEDIA_KINDS[kind]})`;
}

/**
 * ComfyUI's metadata_filter for one key: a scalar matches an equal value or an equal element of a stored array
 * (jsonb equality, so types are strict); a list is any-of (empty: no constraint); null matches a missing key or an
 * explicit null; an object matches an equal object or an equal element of a stored array. The containment terms
 * (`@>`) are what the GIN index on user_metadata serves; the equality terms make an object match exactly, not by
 * subset.
 */
function metadataTerm(key: string, value: unknown): Prisma.Sql | undefined {
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined;
    return Prisma.sql`(${Prisma.join(
      value.map((v) => metadataTerm(key, v) ?? Prisma.sql`false`),
      ' OR ',
    )})`;
  }
  if (value === null) return Prisma.sql`(NOT (user_metadata ? ${key}) OR user_metadata -> ${key} = 'null'::jsonb)`;
  const asValue = JSON.stringify({ [key]: value });
  const inArray = JSON.stringify({ [key]: [value] });
  const contains = Prisma.sql`(user_metadata @> ${asValue}::jsonb OR user_metadata @> ${inArray}::jsonb)`;
  if (typeof value !== 'object') return contains;
  const v = JSON.stringify(value);
  return Prisma.sql`(${contains} AND (user_metadata -> ${key} = ${v}::jsonb OR EXISTS (SELECT 1 FROM jsonb_array_elements(
    CASE WHEN jsonb_typeof(user_metadata -> ${key}) = 'array' THEN user_metadata -> ${key} ELSE '[]'::jsonb END) AS e WHERE e = ${v}::jsonb)))`;
}

export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => '\\' + c);
}
