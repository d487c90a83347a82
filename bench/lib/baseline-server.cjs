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
      // The two statements AssetRepository.list runs for include_tags + limit (page and total), in parallel.
      const tags = (u.searchParams.get('include_tags') || '').split(',').filter(Boolean);
      const limit = Number(u.searchParams.get('limit') || 20);
      const [page, count] = await Promise.all([
        pool.query(`SELECT ${COLUMNS} FROM asset WHERE owner_id = $1 AND tags @> $2::text[] ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET 0`, [
          OWNER,
          tags,
          limit,
        ]),
        pool.query('SELECT count(*) AS n FROM asset WHERE owner_id = $1 AND tags @> $2::text[]', [OWNER, tags]),
      ]);
      const total = Number(count.rows[0].n);
      send(res, 200, { assets: page.rows.map(asJson), total, has_more: page.rows.length < total });
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
