'use strict';
// The "practical limit of the stack" for the metadata and listing benchmarks: a bare node:http server with a pg
// Pool of the service's default size (10) running the same indexed SELECTs the service runs, with no framework,
// no ORM, no auth lookup; statements are prepared once per connection (named). GET /api/assets runs the service's own
// page statement (AssetRepository.pageIfChanged's text with REST's read model) and answers the service's 20 fields per asset, so the two
// differ in the server around the statement only.
// Usage: DATABASE_URL=... node baseline-server.cjs; prints `ready <port>`.
const http = require('node:http');
const { Pool } = require('pg');

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE || 10) });
const OWNER = process.env.OWNER || 'bench';
const COLUMNS = `id::text AS id, owner_id, name, content_hash, size, mime_type, tags, user_metadata, preview_id::text AS preview_id,
  prompt_id::text AS prompt_id, is_immutable, created_at, updated_at, last_access_time`;

/** AssetRepository's listing statement: the owner's counts and versions (TEXT_COLUMNS' companion, ownerStatsSql). */
const STATS_SERVICE = `SELECT coalesce(o.asset_count, 0) AS total, coalesce(o.version, 0) AS version, coalesce(o.rows_version, 0) AS rows_version,
      ARRAY(SELECT coalesce((SELECT c.count FROM asset_tag_count c WHERE c.owner_id = $1 AND c.tag = t.tag), 0)
            FROM unnest($2::text[]) WITH ORDINALITY AS t(tag, i) ORDER BY t.i) AS counts
    FROM (SELECT 1) AS one LEFT JOIN asset_owner_stats o ON o.owner_id = $3`;

/** With include tags: whether they are common (AssetRepository's COMMON_SHARE), from the counts, once. */
const STATS_COMMON = `SELECT s0.*, (SELECT min(x) > 0 AND sum(ln(greatest(x, 1)::float8 / greatest(s0.total, 1))) >= ln(0.1)
        FROM unnest(s0.counts) AS x) AS common FROM (${STATS_SERVICE}) AS s0 OFFSET 0`;

/** Per include tags: whether their last page said they are common (AssetRepository's `commonTags` hint). */
const commonTags = new Map();

/** AssetRepository's TEXT_COLUMNS: each column as PostgreSQL prints it. */
const PAGE_COLUMNS = `id, name, size, content_hash AS "blake3", mime_type AS "mimeType",
  coalesce(array_to_json(tags)::text, '[]') AS "tagsJson", 'models' = ANY(tags) AS "isModel", user_metadata AS "userMetadata",
  preview_id AS "previewId", prompt_id AS "promptId", is_immutable AS "isImmutable", created_at AT TIME ZONE 'UTC' AS "createdAt",
  updated_at AT TIME ZONE 'UTC' AS "updatedAt", last_access_time AT TIME ZONE 'UTC' AS "lastAccessTime",
  has_thumbnail AS "hasThumbnail", metadata`;

/** pg's type parsers bypassed. */
const AS_TEXT = { getTypeParser: () => (v) => v };

/** A UTC timestamp as PostgreSQL prints it as toISOString prints it (REST's read model's isoOf, its common case). */
const isoOf = (t) =>
  t.length === 23
    ? `${t.slice(0, 10)}T${t.slice(11)}Z`
    : `${t.slice(0, 10)}T${t.slice(11, 19)}.${(t.slice(20) + '000').slice(0, 3)}Z`;

/** One asset's JSON as the service prints it (loader_path: the bench's names are safe paths). */
function assetText(a, urls) {
  const name = JSON.stringify(a.name);
  const preview = a.previewId === null ? 'null' : `"${a.previewId}"`;
  const prompt = a.promptId === null ? 'null' : `"${a.promptId}"`;
  const um = JSON.parse(a.userMetadata);
  const md = a.metadata === null ? null : JSON.parse(a.metadata);
  let out = `{"id":"${a.id}","name":${name},"display_name":${name},"size":${a.size},"asset_hash":"blake3:${a.blake3}","hash":"blake3:${a.blake3}","mime_type":${JSON.stringify(a.mimeType)},"tags":${a.tagsJson},"user_metadata":${JSON.stringify(um ?? {})},"preview_id":${preview},"prompt_id":${prompt},"job_id":${prompt},"created_at":"${isoOf(a.createdAt)}","updated_at":"${isoOf(a.updatedAt)}","last_access_time":"${isoOf(a.lastAccessTime)}","is_immutable":${a.isImmutable === 't'}`;
  if (a.previewId !== null) out += `,"preview_url":${urls}${a.previewId}/content"`;
  if (a.hasThumbnail === 't') out += `,"thumbnail_url":${urls}${a.id}/thumbnail"`;
  if (a.isModel === 't') out += `,"loader_path":${name}`;
  if (md) out += `,"metadata":${JSON.stringify(md)}`;
  return out + '}';
}

/** Counts and facets under the owner's version, as AssetRepository keeps them (src/domain/assets/count-cache.ts). */
const cache = new Map();
function cached(key, version) {
  const e = cache.get(key);
  return e && e.version === version ? e.value : undefined;
}

const asJson = (r) => ({
  id: r.id,
  name: r.name,
  size: Number(r.size),
  asset_hash: `blake3:${r.content_hash.trim()}`,
  mime_type: r.mime_type,
  tags: r.tags,
  user_metadata: r.user_metadata,
  preview_id: r.preview_id,
  prompt_id: r.prompt_id,
  is_immutable: r.is_immutable,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  last_access_time: r.last_access_time.toISOString(),
});

function send(res, status, body) {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const server = http.createServer(async (req, res) => {
  try {
    const u = new URL(req.url, 'http://x');
    let m;
    if (req.method === 'GET' && (m = /^\/api\/assets\/([0-9a-f-]{36})$/.exec(u.pathname))) {
      const { rows } = await pool.query({
        name: 'by_id',
        text: `SELECT ${COLUMNS} FROM asset WHERE id = $1 AND owner_id = $2`,
        values: [m[1], OWNER],
      });
      rows[0] ? send(res, 200, asJson(rows[0])) : send(res, 404, { code: 'ASSET_NOT_FOUND' });
    } else if (req.method === 'HEAD' && (m = /^\/api\/assets\/hash\/blake3:([0-9a-f]{64})$/.exec(u.pathname))) {
      const { rows } = await pool.query({
        name: 'exists',
        text: 'SELECT 1 FROM content WHERE blake3 = $1 LIMIT 1',
        values: [m[1]],
      });
      res.writeHead(rows.length ? 200 : 404).end();
    } else if (req.method === 'GET' && u.pathname === '/api/assets') {
      // The statement AssetRepository.pageIfChanged sends for these requests (GET /api/assets, created_at desc),
      // the same text: the page (limit + 1 in keyset order) beside the owner's maintained counts, in one round trip;
      // owner-only pages named (LIMIT and OFFSET as InitPlans), tag-filtered ones unnamed; every column read as
      // PostgreSQL prints it. The total from the counts when they decide it, else a count stopped at 10,001 cached
      // under the owner's version. The body: the service's 20 fields per asset, concatenated in the order the service prints them.
      const tags = (u.searchParams.get('include_tags') || '').split(',').filter(Boolean);
      const limit = Number(u.searchParams.get('limit') || 20);
      const after = u.searchParams.get('after');
      const countCond = tags.length ? 'owner_id = $1 AND tags @> $2::text[]' : 'owner_id = $1';
      const cursor = after ? JSON.parse(Buffer.from(after, 'base64url').toString('utf8')) : undefined;
      // As AssetRepository's PageForm: no tags, named; include tags named in the sort index's form (guarded) once
      // their last page said they are common; otherwise unnamed, planned per request.
      const page = (form) => {
        const values = [OWNER, tags, OWNER, OWNER];
        const cond = ['owner_id = $4'];
        if (tags.length)
          cond.push(`${form === 'commonTags' ? "coalesce(tags, '{}')" : 'tags'} @> $${values.push(tags)}::text[]`);
        if (cursor)
          cond.push(
            `(created_at, asset.id) < ($${values.push(cursor.v)}::timestamptz, $${values.push(cursor.id)}::uuid)`,
          );
        const named = form !== 'planned';
        const l = `$${values.push(limit + 1)}`;
        const o = `$${values.push(0)}`;
        const text = `SELECT s.total AS "ownerTotal", s.version AS "ownerVersion", s.rows_version AS "rowsVersion", s.counts AS "tagCounts", ${tags.length ? 's.common AS "commonTags", ' : ''}p.*
          FROM (${tags.length ? STATS_COMMON : STATS_SERVICE}) AS s LEFT JOIN LATERAL (
            SELECT ${PAGE_COLUMNS} FROM asset WHERE ${form === 'commonTags' ? 's.common AND ' : ''}${cond.join(' AND ')}
            ORDER BY created_at DESC, asset.id DESC ${named ? `LIMIT (SELECT ${l}::bigint) OFFSET (SELECT ${o}::bigint)` : `LIMIT ${l} OFFSET ${o}`}) AS p ON true`;
        return pool.query({
          name: named ? `page_${form}_${cursor ? 'after' : 'first'}` : undefined,
          text,
          values,
          types: AS_TEXT,
        });
      };
      const hint = tags.join(',');
      let form = tags.length === 0 ? 'owner' : commonTags.get(hint) ? 'commonTags' : 'planned';
      let { rows } = await page(form);
      if (tags.length) {
        commonTags.set(hint, rows[0].commonTags === 't');
        if (form === 'commonTags' && rows[0].commonTags !== 't') ({ rows } = await page((form = 'planned')));
      }
      const head = rows[0];
      const total = Number(head.ownerTotal);
      const counts = head.tagCounts.length > 2 ? head.tagCounts.slice(1, -1).split(',').map(Number) : [];
      let n;
      if (tags.length === 0) n = Math.min(total, 10001);
      else if (tags.length === 1) n = Math.min(counts[0], 10001);
      else if (counts.reduce((lower, c) => lower - (total - c), total) > 10000) n = 10001;
      else {
        const key = `count ${tags}`;
        n = cached(key, head.ownerVersion);
        if (n === undefined) {
          const r = await pool.query(
            `SELECT (SELECT count(*) FROM (SELECT 1 FROM asset WHERE ${countCond} LIMIT 10001) AS m) AS n,
            (SELECT version FROM asset_owner_stats WHERE owner_id = $1) AS version`,
            tags.length ? [OWNER, tags] : [OWNER],
          );
          n = Number(r.rows[0].n);
          cache.set(key, { version: String(r.rows[0].version), value: n });
        }
      }
      const found = head.id === null ? [] : rows;
      const more = found.length > limit;
      const items = found.slice(0, limit);
      const last = items[items.length - 1];
      const next = more
        ? Buffer.from(JSON.stringify({ s: 'created_at', o: 'desc', v: isoOf(last.createdAt), id: last.id })).toString(
            'base64url',
          )
        : undefined;
      const urls = JSON.stringify(`http://${req.headers.host}/api/assets/`).slice(0, -1);
      let assets = '';
      for (const a of items) assets += (assets ? ',' : '') + assetText(a, urls);
      const body = `{"assets":[${assets}],"total":${Math.min(n, 10000)},"has_more":${more}${next ? `,"next_cursor":"${next}"` : ''}${n > 10000 ? ',"total_is_lower_bound":true' : ''}}`;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    } else if (req.method === 'GET' && u.pathname === '/api/tags') {
      const { rows } = await pool.query(
        'SELECT tag AS name, count, count(*) OVER () AS total FROM asset_tag_count WHERE owner_id = $1 AND count > 0 ORDER BY count DESC, tag ASC LIMIT 100 OFFSET 0',
        [OWNER],
      );
      const n = rows.length ? Number(rows[0].total) : 0;
      send(res, 200, {
        tags: rows.map((r) => ({ name: r.name, count: r.count })),
        total: n,
        has_more: rows.length < n,
      });
    } else if (req.method === 'GET' && u.pathname === '/api/assets/tags/refine') {
      const tags = (u.searchParams.get('include_tags') || '').split(',').filter(Boolean);
      if (tags.length === 0) {
        const { rows } = await pool.query(
          'SELECT tag AS name, count FROM asset_tag_count WHERE owner_id = $1 AND count > 0 ORDER BY count DESC, tag ASC LIMIT 100',
          [OWNER],
        );
        send(res, 200, { tag_counts: Object.fromEntries(rows.map((r) => [r.name, Number(r.count)])) });
        return;
      }
      // As AssetRepository.tagFacets: the newest 10,001 matches, cached under the owner's version.
      const key = `facets ${tags}`;
      const v = await pool.query('SELECT version FROM asset_owner_stats WHERE owner_id = $1', [OWNER]);
      let body = cached(key, v.rows[0]?.version ?? '0');
      if (!body) {
        const { rows } = await pool.query(
          `
          WITH m AS (SELECT tags FROM asset WHERE owner_id = $1 AND tags @> $2::text[] ORDER BY created_at DESC, id DESC LIMIT 10001),
               f AS (SELECT t AS name, count(*) AS count FROM (SELECT tags FROM m LIMIT 10000) AS s, unnest(s.tags) AS t
                     GROUP BY t ORDER BY count(*) DESC, t ASC LIMIT 100)
          SELECT f.name, f.count, (SELECT count(*) FROM m) AS matched, (SELECT version FROM asset_owner_stats WHERE owner_id = $1) AS version
          FROM (SELECT 1) AS one LEFT JOIN f ON true ORDER BY f.count DESC, f.name ASC`,
          [OWNER, tags],
        );
        const found = rows.filter((r) => r.name !== null);
        body = {
          tag_counts: Object.fromEntries(found.map((r) => [r.name, Number(r.count)])),
          ...(found.length && Number(rows[0].matched) > 10000 ? { counts_are_lower_bounds: true } : {}),
        };
        cache.set(key, { version: rows[0].version ?? '0', value: body });
      }
      send(res, 200, body);
    } else {
      send(res, 404, { code: 'NOT_FOUND' });
    }
  } catch (err) {
    send(res, 500, { code: 'INTERNAL', message: String(err) });
  }
});

server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
