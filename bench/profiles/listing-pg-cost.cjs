'use strict';
// PostgreSQL's CPU per listing page read from the database, by part of the page statement: the same 100-asset cursor
// pages (500,000 rows deep; `--tagged`: 100,000 matches of include_tags=models,loras deep) read through one
// connection, one after another, for each variant of the statement; the backend's CPU from /proc/<pid>/stat per page.
// Variants (the first is the statement the service sends, captured from AssetRepository.pageIfChanged with REST's read model):
//   service    the service's statement as it sends it from a filter's second page on (untagged: named; tagged
//              `models,loras`: named, the sort index's form for common tags)
//   planned    the statement of a filter's first page (tagged: unnamed, planned per request)
//   named      the same text as a named (prepared) statement
//   page       the page alone: the same columns, without the owner's counts and rows version beside it
//   typed      the page's columns as stored (no to_char / to_json / ::text: pg's output functions print them)
//   ts_text    `page` with the timestamps as (col AT TIME ZONE 'UTC')::text instead of to_char(...)
//   name_raw   `page` with name and mime_type as text (no to_json: JSON escaping left to the caller)
//   ids        the page's ids only (the floor: index scan, protocol, 101 rows)
//   no_head    the service's statement with only the page's columns in its output
//   page_lateral / page_params   `page` inside the same lateral join / with LIMIT and OFFSET as parameters
//   scan_505 / any_filter   the sort index walked for 505 rows unfiltered / the tags filter as `= ANY` per tag
// The variants that rewrote the service's statement as it was before it took LIMIT and OFFSET as InitPlans and its
// columns as stored (limit_initplan, one_head, stats, lean, lean_typed: BENCHMARKS.md, "listing, PostgreSQL's share")
// no longer apply to what it sends; they are in this file's history (git show
// 9503c3a:bench/profiles/listing-pg-cost.cjs). Usage (on the kept seed of `npm run bench -- listing`, whose PostgreSQL
// must not be running):
//   BENCH_DATA=/work/bench-data flock -x /tmp/heavy.lock \
//     node bench/profiles/listing-pg-cost.cjs [--pages=500] [--rounds=3] [--tagged] [--only=a,b]
//     [--plan-cache-mode=force_generic_plan]   (DATABASE_URL=...: use a PostgreSQL already running on the kept seed)
// Prints µs of backend CPU and µs of wall time per page for each variant, medians of the rounds, and each variant's
// ratio to `service` in the same round.
const path = require('node:path');
const { DIST, OWNER, cpuMicros, parseArgs, runScript, log, median } = require('../lib/common.cjs');
const { keptListing } = require('../figures/listing.cjs');

const LIMIT = 100;
const ISO = (c) => `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The service's page statement for `q` after `after`, as AssetRepository sends it (captured at the driver). */
async function serviceStatement(db, repo, q, after) {
  const captured = [];
  const client = await db.pool.connect();
  const query = client.query.bind(client);
  client.query = (config, ...rest) => {
    if (config && typeof config === 'object' && config.text) captured.push(config);
    return query(config, ...rest);
  };
  client.release();
  // Twice: a filter's first page is read by the statement the planner plans (`planned`); from its second page on,
  // common include tags are read by the named statement (AssetRepository's PageForm `commonTags`).
  await repo.pageIfChanged(OWNER, q, after, undefined);
  await repo.pageIfChanged(OWNER, q, after, undefined);
  const pages = captured.filter((c) => /LEFT JOIN LATERAL/.test(c.text));
  if (pages.length < 2) throw new Error('the page statement was not captured');
  return { first: pages[0], svc: pages[pages.length - 1] };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const opts = args.opts;
  const pages = Number(opts.pages ?? 500);
  const rounds = args.rounds ?? 3;
  const tagged = Boolean(opts.tagged);
  const only = typeof opts.only === 'string' ? opts.only.split(',') : undefined;
  const pg = await keptListing({ pages, tagged });
  const { cursors } = pg;
  const { createDatabase } = require(path.join(DIST, 'infra', 'prisma.js'));
  const { AssetRepository } = require(path.join(DIST, 'domain', 'assets', 'asset.repository.js'));
  const db = createDatabase(pg.url, 1);
  try {
    const repo = new AssetRepository(db.prisma, db.pool);
    const tags = tagged ? ['models', 'loras'] : [];
    const q = { includeTags: tags, excludeTags: [], limit: LIMIT, offset: 0, sort: 'created_at', order: 'desc' };
    const { first, svc } = await serviceStatement(db, repo, q, cursors[0]);
    // The service's values with another cursor: the cursor's value and id are the two values before LIMIT and OFFSET.
    const svcValues = (after) => {
      const v = [...svc.values];
      v[v.length - 4] = after.value;
      v[v.length - 3] = after.id;
      return v;
    };
    const where = `owner_id = $1 ${tagged ? 'AND tags @> $4::text[]' : ''} AND (created_at, asset.id) < ($2::timestamptz, $3::uuid)`;
    const pageOf = (columns) =>
      `SELECT ${columns} FROM asset WHERE ${where} ORDER BY created_at DESC, asset.id DESC LIMIT ${LIMIT + 1}`;
    const pageValues = (after) => (tagged ? [OWNER, after.value, after.id, tags] : [OWNER, after.value, after.id]);
    const TEXT = `id::text AS "id", name, to_json(name)::text AS "nameJson", size::text AS "sizeText",
      content_hash::text AS "blake3", to_json(mime_type)::text AS "mimeTypeJson", coalesce(array_to_json(tags)::text, '[]') AS "tagsJson",
      'models' = ANY(tags) AS "isModel", user_metadata::text AS "userMetadata", preview_id::text AS "previewId", prompt_id::text AS "promptId",
      is_immutable::text AS "isImmutable", ${ISO('created_at')} AS "createdAt", ${ISO('updated_at')} AS "updatedAt",
      ${ISO('last_access_time')} AS "lastAccessTime", has_thumbnail::text AS "hasThumbnail", metadata::text AS "metadata"`;
    const unnamedTagged = (name) => (tagged ? undefined : name);
    const variants = {
      service: (after) => ({ name: svc.name, text: svc.text, values: svcValues(after) }),
      // The statement of a filter's first page (tagged: unnamed, planned per request, the GIN-capable condition).
      planned: (after) => ({ name: first.name, text: first.text, values: svcValues(after) }),
      named: (after) => ({ name: 'cost_named', text: svc.text, values: svcValues(after) }),
      page: (after) => ({ name: unnamedTagged('cost_page'), text: pageOf(TEXT), values: pageValues(after) }),
      typed: (after) => ({
        name: unnamedTagged('cost_typed'),
        text: pageOf(`id, name, size, content_hash, mime_type, tags, user_metadata, preview_id, prompt_id, is_immutable, created_at,
          updated_at, last_access_time, has_thumbnail, metadata`),
        values: pageValues(after),
      }),
      ts_text: (after) => ({
        name: unnamedTagged('cost_ts_text'),
        text: pageOf(TEXT.replace(/to_char\((\w+) AT TIME ZONE 'UTC', '[^']+'\)/g, "($1 AT TIME ZONE 'UTC')::text")),
        values: pageValues(after),
      }),
      name_raw: (after) => ({
        name: unnamedTagged('cost_name_raw'),
        text: pageOf(TEXT.replace(/to_json\((name|mime_type)\)::text/g, '$1')),
        values: pageValues(after),
      }),
      ids: (after) => ({ name: unnamedTagged('cost_ids'), text: pageOf('id'), values: pageValues(after) }),
      // The owner's sort index walked for 505 rows (what a tagged page of models,loras reads), no tags filter: the
      // scan without the filter's evaluation.
      scan_505: (after) => ({
        name: 'cost_scan_505',
        text: `SELECT id FROM asset WHERE owner_id = $1 AND (created_at, asset.id) < ($2::timestamptz, $3::uuid) ORDER BY created_at DESC, asset.id DESC LIMIT 505`,
        values: [OWNER, after.value, after.id],
      }),
      // The service's statement with the tags filter as one `= ANY(tags)` per tag (array_contain_compare deconstructs
      // both arrays per row).
      any_filter: (after) => ({
        name: 'cost_any_filter',
        text: svc.text.replace(
          /coalesce\(tags, '\{\}'\) @> \$(\d+)::text\[\]/,
          (m, n) => `($${n}::text[])[1] = ANY(tags) AND ($${n}::text[])[2] = ANY(tags)`,
        ),
        values: svcValues(after),
      }),
      // The service's statement with only the page's columns in its output.
      no_head: (after) => ({
        name: unnamedTagged('cost_no_head'),
        text: svc.text.replace(/^SELECT .*?, p\.\*/s, 'SELECT p.*'),
        values: svcValues(after),
      }),
      // The page alone, inside the same lateral join over one row (no owner's counts).
      page_lateral: (after) => ({
        name: unnamedTagged('cost_page_lateral'),
        text: `SELECT p.* FROM (SELECT 1) AS one LEFT JOIN LATERAL (${pageOf(TEXT)}) AS p ON true`,
        values: pageValues(after),
      }),
      // The page alone with LIMIT and OFFSET as parameters (as the service sends them).
      page_params: (after) => ({
        name: unnamedTagged('cost_page_params'),
        text: pageOf(TEXT).replace(`LIMIT ${LIMIT + 1}`, `LIMIT $${tagged ? 5 : 4} OFFSET $${tagged ? 6 : 5}`),
        values: [...pageValues(after), LIMIT + 1, 0],
      }),
    };
    for (const k of Object.keys(variants)) if (only && !only.includes(k) && k !== 'service') delete variants[k];
    const raw = { getTypeParser: () => (v) => v };
    const client = await db.pool.connect();
    try {
      // --plan-cache-mode=force_generic_plan|force_custom_plan: how named statements are planned (default auto).
      if (opts['plan-cache-mode'])
        await client.query(`SET plan_cache_mode = ${String(opts['plan-cache-mode']).replace(/[^a-z_]/g, '')}`);
      const backend = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      log(`  service statement (${svc.name ? 'named' : 'unnamed'}): ${svc.text.replace(/\s+/g, ' ')}`);
      for (const [name, fn] of Object.entries(variants)) {
        const n = (await client.query({ ...fn(cursors[0]), types: raw })).rows.length;
        if (n !== LIMIT + 1 && name !== 'scan_505') throw new Error(`${name}: ${n} rows`);
      }
      const results = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
      for (let round = 0; round < rounds; round++) {
        for (const [name, fn] of Object.entries(variants)) {
          for (const c of cursors.slice(0, 20)) await client.query({ ...fn(c), types: raw }); // plans cached
          const b0 = cpuMicros(backend);
          const t0 = process.hrtime.bigint();
          for (const c of cursors) await client.query({ ...fn(c), types: raw });
          const wall = Number(process.hrtime.bigint() - t0) / 1e3 / cursors.length;
          const postgres = (cpuMicros(backend) - b0) / cursors.length;
          results[name].push({ postgres, wall });
          log(
            `  round ${round + 1} ${name.padEnd(8)}: postgres ${postgres.toFixed(0)} µs, wall ${wall.toFixed(0)} µs per page`,
          );
        }
      }
      for (const name of Object.keys(variants)) {
        const ratios = results[name].map((r, i) => r.postgres / results.service[i].postgres);
        log(
          `${name.padEnd(8)} median: postgres ${median(results[name].map((r) => r.postgres)).toFixed(0)} µs, wall ${median(results[name].map((r) => r.wall)).toFixed(0)} µs per page; postgres / service's in the same round: ${ratios.map((x) => x.toFixed(2)).join(', ')}`,
        );
      }
    } finally {
      client.release();
    }
  } finally {
    await db.close();
    await pg.stop();
  }
}

if (require.main === module) runScript(main);
