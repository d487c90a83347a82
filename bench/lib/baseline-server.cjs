'use strict';
// The "practical limit of the stack" for the metadata and listing benchmarks: a bare node:http server with a pg
// Pool of the service's default size (10) running the same indexed SELECTs the service runs, with no framework,
// no ORM, no auth lookup; statements are prepared once per connection (named). Usage: DATABASE_URL=... node baseline-server.cjs; prints `ready <port>`.
const http = require('node:http');
const { Pool } = require('pg');

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE || 10) });
const OWNER = process.env.OWNER || 'bench';
const COLUMNS = `id::text AS id, owner_id, name, content_hash, size, mime_type, tags, user_metadata, preview_id::text AS preview_id,
  prompt_id::text AS prompt_id, is_immutable, created_at, updated_at, last_access_time`;

const STATS = `SELECT coalesce(s.asset_count, 0) AS total, coalesce(s.version, 0) AS version,
    ARRAY(SELECT coalesce(c.count, 0) FROM unnest($2::text[]) WITH ORDINALITY AS t(tag, i)
          LEFT JOIN asset_tag_count c ON c.owner_id = $1 AND c.tag = t.tag ORDER BY t.i) AS counts
  FROM (SELECT 1) AS one LEFT JOIN asset_owner_stats s ON s.owner_id = $1`;

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
      const { rows } = await pool.query({ name: 'by_id', text: `SELECT ${COLUMNS} FROM asset WHERE id = $1 AND owner_id = $2`, values: [m[1], OWNER] });
      rows[0] ? send(res, 200, asJson(rows[0])) : send(res, 404, { code: 'ASSET_NOT_FOUND' });
    } else if (req.method === 'HEAD' && (m = /^\/api\/assets\/hash\/blake3:([0-9a-f]{64})$/.exec(u.pathname))) {
      const { rows } = await pool.query({ name: 'exists', text: 'SELECT 1 FROM content WHERE blake3 = $1 LIMIT 1', values: [m[1]] });
      res.writeHead(rows.length ? 200 : 404).end();
    } else if (req.method === 'GET' && u.pathname === '/api/assets') {
      // The statements AssetRepository.list runs: the page (limit + 1 in keyset order) beside the maintained counts;
      // the total from those when they decide it, else a count stopped at 10,001 cached under the owner's version.
      const tags = (u.searchParams.get('include_tags') || '').split(',').filter(Boolean);
      const limit = Number(u.searchParams.get('limit') || 20);
      const after = u.searchParams.get('after');
      const cond = ['owner_id = $1'];
      const values = [OWNER];
      if (tags.length) cond.push(`tags @> $${values.push(tags)}::text[]`);
      const countCond = cond.join(' AND ');
      const countValues = [...values];
      if (after) {
        const c = JSON.parse(Buffer.from(after, 'base64url').toString('utf8'));
        cond.push(`(created_at, id) < ($${values.push(c.v)}::timestamptz, $${values.push(c.id)}::uuid)`);
      }
      const [page, stats] = await Promise.all([
        pool.query(`SELECT ${COLUMNS} FROM asset WHERE ${cond.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${values.push(limit + 1)}`, values),
        pool.query(STATS, [OWNER, tags]),
      ]);
      const { total, version, counts } = stats.rows[0];
      let n;
      if (tags.length === 0) n = Math.min(Number(total), 10001);
      else if (tags.length === 1) n = Math.min(Number(counts[0]), 10001);
      else if (counts.reduce((lower, c) => lower - (Number(total) - c), Number(total)) > 10000) n = 10001;
      else {
        const key = `count ${tags}`;
        n = cached(key, version);
        if (n === undefined) {
          const r = await pool.query(`SELECT (SELECT count(*) FROM (SELECT 1 FROM asset WHERE ${countCond} LIMIT 10001) AS m) AS n,
            (SELECT version FROM asset_owner_stats WHERE owner_id = $1) AS version`, countValues);
          n = Number(r.rows[0].n);
          cache.set(key, { version: r.rows[0].version, value: n });
        }
      }
      const more = page.rows.length > limit;
      const items = page.rows.slice(0, limit);
      const last = items[items.length - 1];
      const next = more ? Buffer.from(JSON.stringify({ s: 'created_at', o: 'desc', v: last.created_at.toISOString(), id: last.id })).toString('base64url') : undefined;
      send(res, 200, {
        assets: items.map(asJson),
        total: Math.min(n, 10000),
        has_more: more,
        ...(next ? { next_cursor: next } : {}),
        ...(n > 10000 ? { total_is_lower_bound: true } : {}),
      });
    } else if (req.method === 'GET' && u.pathname === '/api/tags') {
      const { rows } = await pool.query(
        'SELECT tag AS name, count, count(*) OVER () AS total FROM asset_tag_count WHERE owner_id = $1 AND count > 0 ORDER BY count DESC, tag ASC LIMIT 100 OFFSET 0',
        [OWNER],
      );
      const n = rows.length ? Number(rows[0].total) : 0;
      send(res, 200, { tags: rows.map((r) => ({ name: r.name, count: r.count })), total: n, has_more: rows.length < n });
    } else if (req.method === 'GET' && u.pathname === '/api/assets/tags/refine') {
      const tags = (u.searchParams.get('include_tags') || '').split(',').filter(Boolean);
      if (tags.length === 0) {
        const { rows } = await pool.query('SELECT tag AS name, count FROM asset_tag_count WHERE owner_id = $1 AND count > 0 ORDER BY count DESC, tag ASC LIMIT 100', [OWNER]);
        send(res, 200, { tag_counts: Object.fromEntries(rows.map((r) => [r.name, Number(r.count)])) });
        return;
      }
      // As AssetRepository.tagFacets: the newest 10,001 matches, cached under the owner's version.
      const key = `facets ${tags}`;
      const v = await pool.query('SELECT version FROM asset_owner_stats WHERE owner_id = $1', [OWNER]);
      let body = cached(key, v.rows[0]?.version ?? '0');
      if (!body) {
        const { rows } = await pool.query(`
          WITH m AS (SELECT tags FROM asset WHERE owner_id = $1 AND tags @> $2::text[] ORDER BY created_at DESC, id DESC LIMIT 10001),
               f AS (SELECT t AS name, count(*) AS count FROM (SELECT tags FROM m LIMIT 10000) AS s, unnest(s.tags) AS t
                     GROUP BY t ORDER BY count(*) DESC, t ASC LIMIT 100)
          SELECT f.name, f.count, (SELECT count(*) FROM m) AS matched, (SELECT version FROM asset_owner_stats WHERE owner_id = $1) AS version
          FROM (SELECT 1) AS one LEFT JOIN f ON true ORDER BY f.count DESC, f.name ASC`, [OWNER, tags]);
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
