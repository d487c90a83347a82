'use strict';
// Figure 5: GET /api/assets?include_tags=models,loras&limit=100 with 100k assets in the database (seeded with SQL
// generate_series): p50/p99 and req/s, against the bare node:http + pg server running the same two statements, and
// the EXPLAIN (ANALYZE) plans of the statements the service's AssetRepository.list really sends (captured at the pg
// driver, as test/integration/query-plans.test.ts does).
const path = require('node:path');
const { DIST, KEY, OWNER, startStack, spawnHelper, cannon, median, r2, r3, log, printResult } = require('./lib/common.cjs');

const QUERY = '/api/assets?include_tags=models,loras&limit=100';

async function seed(databaseUrl, rows) {
  const { Client } = require('pg');
  const c = new Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    // 90% of the rows belong to the bench owner; every asset is tagged "models", one in five also "loras".
    await c.query(`
      INSERT INTO content (blake3, sha256, size, mime_type, first_name)
      SELECT encode(sha256(('b' || i)::bytea), 'hex'), encode(sha256(('s' || i)::bytea), 'hex'), i, 'application/octet-stream', 'f' || i
      FROM generate_series(1, ${rows}) AS i;
      INSERT INTO asset (id, owner_id, name, content_hash, size, mime_type, tags, user_metadata, created_at, updated_at, last_access_time)
      SELECT gen_random_uuid(), CASE WHEN i % 10 = 0 THEN 'other' || (i % 7) ELSE '${OWNER}' END, 'asset-' || md5(i::text),
        encode(sha256(('b' || i)::bytea), 'hex'), i, 'application/octet-stream',
        CASE WHEN i % 5 = 0 THEN ARRAY['models', 'loras', 'tag' || (i % 97)] ELSE ARRAY['models', 'checkpoints', 'tag' || (i % 97)] END,
        jsonb_build_object('k', i % 211), now() - i * interval '1 second', now() - (i % 313) * interval '1 minute', now()
      FROM generate_series(1, ${rows}) AS i;
      ANALYZE content;
      ANALYZE asset;`);
    const n = await c.query(`SELECT count(*)::int AS n, count(*) FILTER (WHERE owner_id = $1 AND tags @> ARRAY['models','loras'])::int AS m FROM asset`, [OWNER]);
    return n.rows[0];
  } finally {
    await c.end();
  }
}

/** The statements AssetRepository.list sends for this query, EXPLAIN ANALYZEd. */
async function plans(databaseUrl) {
  const { createDatabase } = require(path.join(DIST, 'infra', 'prisma.js'));
  const { AssetRepository } = require(path.join(DIST, 'domain', 'assets', 'asset.repository.js'));
  const { Client } = require('pg');
  const db = createDatabase(databaseUrl, 2);
  const captured = [];
  db.pool.on('connect', (client) => {
    const query = client.query.bind(client);
    client.query = (...args) => {
      const [first, second] = args;
      if (typeof first === 'string') captured.push({ text: first, values: Array.isArray(second) ? second : [] });
      else if (first && typeof first === 'object' && 'text' in first) captured.push({ text: first.text, values: first.values ?? [] });
      return query(...args);
    };
  });
  const explainer = new Client({ connectionString: databaseUrl });
  await explainer.connect();
  try {
    const repo = new AssetRepository(db.prisma, db.pool);
    const q = { includeTags: ['models', 'loras'], excludeTags: [], limit: 100, offset: 0, sort: 'created_at', order: 'desc' };
    await repo.list(OWNER, q);
    const out = [];
    for (const s of captured.filter((x) => /^\s*SELECT\b/i.test(x.text))) {
      const r = await explainer.query({ text: `EXPLAIN (ANALYZE, BUFFERS) ${s.text}`, values: s.values });
      out.push({ sql: s.text.replace(/\s+/g, ' ').trim(), plan: r.rows.map((x) => x['QUERY PLAN']) });
    }
    return out;
  } finally {
    await explainer.end();
    await db.close();
  }
}

async function run(args) {
  const rows = args.smoke ? 2000 : 100_000;
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const duration = args.smoke ? 1 : 10;
  const stack = await startStack({ prefix: 'listing' });
  let base;
  try {
    const counts = await seed(stack.databaseUrl, rows);
    log(`  seeded ${counts.n} assets; ${counts.m} match include_tags=models,loras for the bench owner`);
    base = await spawnHelper('baseline-server.cjs', [], { DATABASE_URL: stack.databaseUrl });
    const headers = { 'x-api-key': KEY };
    await cannon({ url: stack.svc.url + QUERY, headers, duration: 1, connections: 4 });
    await cannon({ url: base.url + QUERY, headers, duration: 1, connections: 4 });
    // One connection: the latency of a request on its own; 16: throughput, with latency mostly queueing.
    const levels = {};
    for (const connections of [1, 16]) {
      const s = [];
      const b = [];
      for (let i = 0; i < rounds; i++) {
        s.push(await cannon({ url: stack.svc.url + QUERY, headers, duration, connections }));
        b.push(await cannon({ url: base.url + QUERY, headers, duration, connections }));
        log(`  c=${connections} round ${i + 1}: service ${s[i].rps.toFixed(0)} req/s p50 ${s[i].p50} p99 ${s[i].p99} ms; baseline ${b[i].rps.toFixed(0)} req/s p50 ${b[i].p50} p99 ${b[i].p99} ms`);
        if (!s[i].ok || !b[i].ok) throw new Error('non-2xx or errors during the listing run');
      }
      levels[`connections_${connections}`] = {
        service: { rps: r2(median(s.map((x) => x.rps))), p50_ms: median(s.map((x) => x.p50)), p99_ms: median(s.map((x) => x.p99)) },
        baseline: { rps: r2(median(b.map((x) => x.rps))), p50_ms: median(b.map((x) => x.p50)), p99_ms: median(b.map((x) => x.p99)) },
        ratio_median: r3(median(s.map((x, i) => x.rps / b[i].rps))),
      };
    }
    const explained = await plans(stack.databaseUrl);
    for (const p of explained) log(`  ${p.sql}\n    ${p.plan.join('\n    ')}`);
    const planText = explained.map((p) => p.plan.join('\n')).join('\n');
    printResult('listing', {
      assets: counts.n,
      matching: counts.m,
      query: QUERY,
      ...levels,
      uses_index: /Index/.test(planText) && !/Seq Scan on (asset|content)\b/.test(planText),
      plans: explained,
    });
  } finally {
    await base?.stop();
    await stack.stop();
  }
}

module.exports = { run };
