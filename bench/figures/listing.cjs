'use strict';
// Figure 5 (listing at scale): one owner with 1,000,000 assets in a table of 2,000,000 (seeded with SQL
// generate_series; one in five of the owner's also tagged "loras"). Requests: the first page and a cursor page
// 500,000 rows deep, each with and without include_tags=models,loras; GET /api/tags; the refine facets (unfiltered and
// filtered). p50/p99 and req/s at 1 and 16 connections, against the bare node:http + pg server running the same
// statements in the same run, and the EXPLAIN (ANALYZE) plans of the statements AssetRepository really sends
// (captured at the pg driver, as test/integration/query-plans.test.ts does). `--smoke`: 2,000 rows, 1 s runs.
//
// Seeding 2,000,000 rows takes ~15 minutes, so the seeded cluster is kept under $BENCH_DATA/listing (default
// .bench-data/listing in the repository) with a seed-version marker, and reused while the marker matches; a later
// start of the service applies any newer migration to it. `--seed-only` seeds (or checks) it and stops, so the
// seeding can run under a shared lock and only the measuring under an exclusive one:
//   flock -s /tmp/heavy.lock npm run bench -- listing --seed-only && flock -x /tmp/heavy.lock npm run bench -- listing
const fs = require('node:fs');
const path = require('node:path');
const {
  ROOT,
  DIST,
  KEY,
  OWNER,
  startStack,
  startPostgres,
  spawnService,
  benchTmp,
  rmrf,
  onCleanup,
  spawnHelper,
  cannon,
  requestJson,
  median,
  r2,
  r3,
  log,
  printResult,
} = require('../lib/common.cjs');

/** Bump when seed() changes: a kept cluster with another marker is seeded again from scratch. */
const SEED_VERSION = 'listing-seed-2';

const TAGS = 'include_tags=models,loras';
/** A two-tag filter the maintained counts cannot bound (about 2,000 matches): its total is counted. */
const COUNTED = 'include_tags=loras,tag5';

/**
 * `n` requests one at a time to the service and to the baseline (interleaved), each right after the owner's version
 * is bumped, so neither answers from its cache; p50 and max in ms.
 */
async function coldRuns(databaseUrl, svcUrl, baseUrl, query, n) {
  const { Client } = require('pg');
  const c = new Client({ connectionString: databaseUrl });
  await c.connect();
  const times = { service: [], baseline: [] };
  try {
    for (let i = 0; i < n; i++) {
      for (const [who, url] of [
        ['service', svcUrl],
        ['baseline', baseUrl],
      ]) {
        // Both counters, as a change of a matched column moves them: no cached count, facet or page is current.
        await c.query(
          'UPDATE asset_owner_stats SET version = version + 1, rows_version = rows_version + 1 WHERE owner_id = $1',
          [OWNER],
        );
        const t0 = process.hrtime.bigint();
        const r = await requestJson(url, 'GET', query);
        times[who].push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (r.status !== 200) throw new Error(`${query}: ${r.status}`);
      }
    }
  } finally {
    await c.end();
  }
  const sum = (xs) => ({ p50_ms: r2(median(xs)), max_ms: r2(Math.max(...xs)) });
  return { service: sum(times.service), baseline: sum(times.baseline) };
}

async function seed(databaseUrl, rows) {
  const { Client } = require('pg');
  const c = new Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    // Half of the rows belong to the bench owner; every asset is tagged "models", one in five also "loras". The derived
    // `metadata` is set (as ingest sets it): rows without it would be rewritten by the metadata backfill job while the
    // benchmark measures (seed 1 had that flaw: ~11,000 row updates a minute during its runs).
    await c.query(`
      INSERT INTO content (blake3, sha256, size, mime_type, first_name, metadata)
      SELECT encode(sha256(('b' || i)::bytea), 'hex'), encode(sha256(('s' || i)::bytea), 'hex'), i, 'application/octet-stream', 'f' || i, '{}'::jsonb
      FROM generate_series(1, ${rows}) AS i;
      INSERT INTO asset (id, owner_id, name, content_hash, size, mime_type, tags, user_metadata, created_at, updated_at, last_access_time, metadata)
      SELECT gen_random_uuid(), CASE WHEN i % 2 = 1 THEN 'other' || (i % 7) ELSE '${OWNER}' END, 'asset-' || md5(i::text),
        encode(sha256(('b' || i)::bytea), 'hex'), i, 'application/octet-stream',
        CASE WHEN i % 10 = 0 THEN ARRAY['models', 'loras', 'tag' || (i % 97)] ELSE ARRAY['models', 'checkpoints', 'tag' || (i % 97)] END,
        jsonb_build_object('k', i % 211), now() - i * interval '1 second', now() - (i % 313) * interval '1 minute', now(),
        jsonb_build_object('filename', 'asset-' || md5(i::text), 'content_length', i)
      FROM generate_series(1, ${rows}) AS i;
      ANALYZE content;`);
    // What autovacuum does to an insert-only table soon after such a load (autovacuum_vacuum_insert_threshold), done
    // here so every run starts from the same state: the visibility map set (index-only scans skip the heap).
    await c.query('VACUUM (ANALYZE) asset');
    const n = await c.query(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE owner_id = $1 AND tags @> ARRAY['models','loras'])::int AS m FROM asset`,
      [OWNER],
    );
    return n.rows[0];
  } finally {
    await c.end();
  }
}

/** The cursor at the row `depth` deep in the owner's created_at desc list (optionally with the tag filter). */
async function cursorAt(databaseUrl, depth, tags) {
  const { encodeCursor } = require(path.join(DIST, 'domain', 'assets', 'cursor.js'));
  const { Client } = require('pg');
  const c = new Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const where = tags ? `AND tags @> ARRAY['models','loras']` : '';
    const r = await c.query(
      `SELECT created_at, id::text AS id FROM asset WHERE owner_id = $1 ${where}
      ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1`,
      [OWNER, depth],
    );
    const row = r.rows[0];
    return {
      cursor: encodeCursor('created_at', 'desc', { value: row.created_at.toISOString(), id: row.id }),
      position: { value: row.created_at.toISOString(), id: row.id },
    };
  } finally {
    await c.end();
  }
}

/**
 * `n` cursors `step` rows apart, from `depth` rows deep in the owner's created_at desc list (optionally with the tag
 * filter): pages no instance has read before, as a client paging through the list asks for them.
 */
async function cursorsFrom(databaseUrl, depth, n, step, tags) {
  const { encodeCursor } = require(path.join(DIST, 'domain', 'assets', 'cursor.js'));
  const { Client } = require('pg');
  const c = new Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const where = tags ? `AND tags @> ARRAY['models','loras']` : '';
    const r = await c.query(
      `SELECT created_at, id FROM (
        SELECT created_at, id::text AS id, row_number() OVER (ORDER BY created_at DESC, id DESC) AS rn FROM (
          SELECT created_at, id FROM asset WHERE owner_id = $1 ${where} ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT $3) AS w) AS x
      WHERE rn % $4 = 1 ORDER BY rn`,
      [OWNER, depth, n * step, step],
    );
    return r.rows.map((row) => encodeCursor('created_at', 'desc', { value: row.created_at.toISOString(), id: row.id }));
  } finally {
    await c.end();
  }
}

/** The statements AssetRepository sends for each request of the run, EXPLAIN ANALYZEd. */
async function plans(databaseUrl, deep, deepTagged) {
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
      else if (first && typeof first === 'object' && 'text' in first)
        captured.push({ text: first.text, values: first.values ?? [] });
      return query(...args);
    };
  });
  const explainer = new Client({ connectionString: databaseUrl });
  await explainer.connect();
  try {
    const repo = new AssetRepository(db.prisma, db.pool);
    const q = (includeTags) => ({
      includeTags,
      excludeTags: [],
      limit: 100,
      offset: 0,
      sort: 'created_at',
      order: 'desc',
    });
    // GET /api/assets' statement (GraphQL's `list` sends the same).
    const page = (tags, after) => repo.pageIfChanged(OWNER, q(tags), after, undefined);
    const calls = {
      first_page: () => page([]),
      first_page_tagged: () => page(['models', 'loras']),
      deep_cursor_page: () => page([], deep),
      deep_cursor_page_tagged: () => page(['models', 'loras'], deepTagged),
      tags: () => repo.listTags(OWNER, { limit: 100, offset: 0, order: 'count_desc' }),
      refine: () => repo.tagFacets(OWNER, { includeTags: [], excludeTags: [] }, 100),
      refine_tagged: () => repo.tagFacets(OWNER, { includeTags: ['models', 'loras'], excludeTags: [] }, 100),
      counted_page: () => page(['loras', 'tag5']),
      // A page this instance holds, asked again while the owner's rows are unchanged: the version read only.
      unchanged_page: async () => repo.pageIfChanged(OWNER, q([]), undefined, (await repo.list(OWNER, q([]))).version),
    };
    const out = [];
    for (const [name, call] of Object.entries(calls)) {
      captured.length = 0;
      await call();
      for (const s of captured.filter((x) => /^\s*(SELECT|WITH)\b/i.test(x.text))) {
        const r = await explainer.query({ text: `EXPLAIN (ANALYZE, BUFFERS) ${s.text}`, values: s.values });
        out.push({ request: name, sql: s.text.replace(/\s+/g, ' ').trim(), plan: r.rows.map((x) => x['QUERY PLAN']) });
      }
    }
    return out;
  } finally {
    await explainer.end();
    await db.close();
  }
}

/**
 * PostgreSQL with the seeded data and the service on it. Smoke runs seed a temporary cluster; full runs keep theirs
 * (see the top of this file) and seed it only when its marker is missing or of another seed version.
 */
async function seededStack(rows, persist, serviceOpts = {}) {
  if (!persist) {
    const stack = await startStack({ prefix: 'listing' });
    return {
      stack,
      counts: await seed(stack.databaseUrl, rows).catch(async (err) => (await stack.stop(), Promise.reject(err))),
    };
  }
  const { migrate } = require(path.join(DIST, 'infra', 'migrate.js'));
  const { createLogger } = require(path.join(DIST, 'infra', 'logger.js'));
  const keep = keptListingDir();
  const marker = path.join(keep, 'seed-version');
  const want = `${SEED_VERSION} rows=${rows}`;
  const have = fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').trim() : '';
  if (have !== want) {
    log(`  no kept seed of ${want} under ${keep} (found ${JSON.stringify(have)}): seeding from scratch (~15 minutes)`);
    rmrf(keep);
  }
  fs.mkdirSync(keep, { recursive: true });
  fs.chmodSync(keep, 0o755);
  const pg = await startPostgres(path.join(keep, 'postgres'));
  const forgetPg = onCleanup(() => pg.stop());
  let counts;
  try {
    await migrate(pg.url, createLogger('warn'));
    if (have !== want) {
      counts = await seed(pg.url, rows);
      fs.writeFileSync(marker, want + '\n');
    } else {
      counts = await countRows(pg.url);
      log(`  reusing the kept seed under ${keep}`);
    }
  } catch (err) {
    forgetPg();
    await pg.stop();
    throw err;
  }
  const dir = benchTmp('listing');
  const started = new Date(Date.now() - 1000);
  let svc;
  try {
    svc = await spawnService({ dataDir: path.join(dir, 'data'), databaseUrl: pg.url, ...serviceOpts });
  } catch (err) {
    forgetPg();
    await pg.stop();
    rmrf(dir);
    throw err;
  }
  const stop = async () => {
    forget();
    forgetPg();
    await svc.stop().catch(() => undefined);
    await pg.stop().catch(() => undefined);
    rmrf(dir);
  };
  const forget = onCleanup(stop);
  await startJobsSettled(pg.url, started).catch(async (err) => {
    await stop();
    throw err;
  });
  return { stack: { databaseUrl: pg.url, svc, stop }, counts };
}

/**
 * Waits until the jobs every start sends (the metadata backfill walks all 2,000,000 assets and contents, reading
 * only once they all have metadata) are done, so they do not run beside the measurements.
 */
async function startJobsSettled(databaseUrl, since) {
  const { Client } = require('pg');
  const c = new Client({ connectionString: databaseUrl });
  c.on('error', () => undefined);
  await c.connect();
  try {
    const t0 = Date.now();
    for (;;) {
      // The job this start sent (sendAtStart), finished; or, after a minute, none of this start pending. Jobs of
      // earlier starts are not waited for: one whose process was killed stays \`active\` until it expires (6 h).
      const r = await c.query(
        `SELECT count(*) FILTER (WHERE state IN ('created', 'retry', 'active'))::int AS pending,
          count(*) FILTER (WHERE state IN ('completed', 'failed'))::int AS done
        FROM pgboss.job WHERE name = 'metadata.backfill' AND created_on >= $1`,
        [since],
      );
      if (r.rows[0].pending === 0 && (r.rows[0].done > 0 || Date.now() - t0 > 60_000)) break;
      if (Date.now() - t0 > 15 * 60_000) throw new Error('the metadata backfill did not finish within 15 minutes');
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    log(`  start jobs settled after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    await c.end();
  }
}

async function countRows(databaseUrl) {
  const { Client } = require('pg');
  const c = new Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const n = await c.query(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE owner_id = $1 AND tags @> ARRAY['models','loras'])::int AS m FROM asset`,
      [OWNER],
    );
    return n.rows[0];
  } finally {
    await c.end();
  }
}

async function run(args) {
  const rows = args.smoke ? 2000 : 2_000_000;
  const depth = args.smoke ? 500 : 500_000;
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const duration = args.smoke ? 1 : 10;
  // `--dist=<dir>`: another build's service on the same seed (e.g. the build before a change, run after this one).
  const dist = args.opts.dist ? { main: path.resolve(String(args.opts.dist), 'src', 'main.js') } : {};
  const { stack, counts } = await seededStack(rows, !args.smoke, dist);
  let base;
  try {
    log(`  seeded ${counts.n} assets; ${counts.m} match include_tags=models,loras for the bench owner`);
    if (args.opts['seed-only']) return;
    const deep = await cursorAt(stack.databaseUrl, depth, false);
    const deepTagged = await cursorAt(stack.databaseUrl, Math.floor(depth / 5), true);
    // A repeated request (the same URL every time) is answered by the service from its page cache while the owner's
    // rows are unchanged; the `*_distinct` requests are 1,000 different cursor pages in turn (77 MB of answers, more
    // than the 32 MiB cache holds, so every one is read from the database: the cost of a page nobody asked for yet).
    const distinct = (tags) =>
      cursorsFrom(
        stack.databaseUrl,
        tags ? Math.floor(depth / 5) : depth,
        args.smoke ? 5 : 1000,
        args.smoke ? 10 : 100,
        tags,
      );
    const requests = {
      first_page: '/api/assets?limit=100',
      first_page_tagged: `/api/assets?${TAGS}&limit=100`,
      deep_cursor_page: `/api/assets?limit=100&after=${deep.cursor}`,
      deep_cursor_page_tagged: `/api/assets?${TAGS}&limit=100&after=${deepTagged.cursor}`,
      deep_cursor_pages_distinct: (await distinct(false)).map((c) => `/api/assets?limit=100&after=${c}`),
      deep_cursor_pages_distinct_tagged: (await distinct(true)).map((c) => `/api/assets?${TAGS}&limit=100&after=${c}`),
      tags: '/api/tags',
      refine: '/api/assets/tags/refine',
      refine_tagged: `/api/assets/tags/refine?${TAGS}`,
    };
    // One URL, or a list of URLs asked in turn.
    const load = (base, query) => {
      if (typeof query === 'string') return { url: base + query };
      let i = 0;
      return {
        url: base,
        requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: query[i++ % query.length] }) }],
      };
    };
    // `--only=a,b`: a subset of the requests (one-off runs while iterating).
    const only = typeof args.opts.only === 'string' ? args.opts.only.split(',') : undefined;
    base = await spawnHelper('baseline-server.cjs', [], { DATABASE_URL: stack.databaseUrl });
    const headers = { 'x-api-key': KEY };
    const results = {};
    for (const [name, query] of Object.entries(requests)) {
      if (only && !only.includes(name)) continue;
      await cannon({ ...load(stack.svc.url, query), headers, duration: 1, connections: 4 });
      await cannon({ ...load(base.url, query), headers, duration: 1, connections: 4 });
      // One connection: the latency of a request on its own; 16: throughput, with latency mostly queueing.
      const levels = {};
      for (const connections of [1, 16]) {
        const s = [];
        const b = [];
        for (let i = 0; i < rounds; i++) {
          s.push(await cannon({ ...load(stack.svc.url, query), headers, duration, connections }));
          b.push(await cannon({ ...load(base.url, query), headers, duration, connections }));
          log(
            `  ${name} c=${connections} round ${i + 1}: service ${s[i].rps.toFixed(0)} req/s p50 ${s[i].p50} p99 ${s[i].p99} ms; baseline ${b[i].rps.toFixed(0)} req/s p50 ${b[i].p50} p99 ${b[i].p99} ms`,
          );
          if (!s[i].ok || !b[i].ok) throw new Error(`non-2xx or errors during the ${name} run`);
        }
        levels[`connections_${connections}`] = {
          service: {
            rps: r2(median(s.map((x) => x.rps))),
            p50_ms: median(s.map((x) => x.p50)),
            p99_ms: median(s.map((x) => x.p99)),
          },
          baseline: {
            rps: r2(median(b.map((x) => x.rps))),
            p50_ms: median(b.map((x) => x.p50)),
            p99_ms: median(b.map((x) => x.p99)),
          },
          ratio_median: r3(median(s.map((x, i) => x.rps / b[i].rps))),
        };
      }
      results[name] = {
        query: typeof query === 'string' ? query : `${query.length} URLs, e.g. ${query[0]}`,
        ...levels,
      };
    }
    // Answers a warm instance serves from its cache of counts: their cost when cold, i.e. each request right after
    // the owner's version moved (what any change of the owner's assets, on any instance, does).
    const coldRequests = {
      first_page: requests.first_page,
      first_page_tagged: requests.first_page_tagged,
      deep_cursor_page: requests.deep_cursor_page,
      deep_cursor_page_tagged: requests.deep_cursor_page_tagged,
      refine_tagged: requests.refine_tagged,
      counted_page: `/api/assets?${COUNTED}&limit=100`,
    };
    const coldResults = {};
    for (const [name, query] of Object.entries(coldRequests)) {
      if (only && !only.includes(name)) continue;
      coldResults[name] = {
        query,
        ...(await coldRuns(stack.databaseUrl, stack.svc.url, base.url, query, args.smoke ? 3 : 30)),
      };
      log(`  ${name} cold (c=1, after a version change): ${JSON.stringify(coldResults[name])}`);
    }
    const explained = await plans(stack.databaseUrl, deep.position, deepTagged.position);
    for (const p of explained) log(`  [${p.request}] ${p.sql}\n    ${p.plan.join('\n    ')}`);
    const planText = explained.map((p) => p.plan.join('\n')).join('\n');
    const p50 = (name, c) => results[name][`connections_${c}`].service.p50_ms;
    const p99 = (name, c) => results[name][`connections_${c}`].service.p99_ms;
    printResult('listing', {
      assets: counts.n,
      owner_assets: Math.floor(counts.n / 2),
      matching: counts.m,
      cursor_depth: depth,
      requests: results,
      cold: coldResults,
      deep_vs_first: only
        ? undefined
        : {
            untagged_p50_c1: r3(p50('deep_cursor_page', 1) / Math.max(p50('first_page', 1), 0.001)),
            tagged_p50_c1: r3(p50('deep_cursor_page_tagged', 1) / Math.max(p50('first_page_tagged', 1), 0.001)),
            untagged_p99_c16: r3(p99('deep_cursor_page', 16) / Math.max(p99('first_page', 16), 0.001)),
            tagged_p99_c16: r3(p99('deep_cursor_page_tagged', 16) / Math.max(p99('first_page_tagged', 16), 0.001)),
          },
      // Read from the database (no cached page), one at a time.
      cold_deep_vs_first:
        coldResults.first_page && coldResults.deep_cursor_page
          ? {
              untagged_p50_c1: r3(coldResults.deep_cursor_page.service.p50_ms / coldResults.first_page.service.p50_ms),
              tagged_p50_c1: r3(
                coldResults.deep_cursor_page_tagged.service.p50_ms / coldResults.first_page_tagged.service.p50_ms,
              ),
            }
          : undefined,
      uses_index: /Index/.test(planText) && !/Seq Scan on (asset|content)\b/.test(planText),
      plans: explained,
    });
  } finally {
    await base?.stop();
    await stack.stop();
  }
}

/** Where the seeded listing cluster is kept between runs ($BENCH_DATA/listing, default .bench-data/listing). */
function keptListingDir() {
  return path.join(process.env.BENCH_DATA || path.join(ROOT, '.bench-data'), 'listing');
}

/**
 * The kept seeded cluster for the listing cost scripts (listing-pg-cost): DATABASE_URL when a
 * PostgreSQL already runs on it (iterating), else started here until `stop`; with `pages` cursors of the owner's
 * `created_at desc` walk 500,000 rows deep (tagged: 100,000 matches of models,loras deep), decoded.
 */
async function keptListing({ pages, tagged }) {
  const pg = process.env.DATABASE_URL
    ? { url: process.env.DATABASE_URL, stop: async () => undefined }
    : await startPostgres(path.join(keptListingDir(), 'postgres'));
  const forget = onCleanup(() => pg.stop());
  const stop = async () => {
    forget();
    await pg.stop();
  };
  try {
    const { decodeCursor } = require(path.join(DIST, 'domain', 'assets', 'cursor.js'));
    const cursors = (await cursorsFrom(pg.url, tagged ? 100_000 : 500_000, pages, 100, tagged)).map((c) =>
      decodeCursor(c, 'created_at', 'desc'),
    );
    return { url: pg.url, cursors, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

module.exports = { run, seededStack, cursorAt, cursorsFrom, keptListing };
