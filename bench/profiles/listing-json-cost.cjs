'use strict';
// CPU per listing page read from the database, the service's side (pg decoding + JSON) and PostgreSQL's (the one
// backend), for three ways of making GET /api/assets' body from the same 100-asset cursor pages:
//   object: AssetRepository.list + JSON.stringify(assetPageJson(...))   (the path of main at 35b1b3d, GraphQL's now)
//   text:   AssetRepository.pageIfChanged(ASSET_JSON_PAGE) + assetPageText (the service's GET /api/assets now: columns
//           selected as text that needs no parsing, pg's type parsers bypassed, the JSON concatenated)
//   textsql: the same columns, with only the page's columns (no owner counts beside them), written here (a check of
//           what the one-statement join costs)
// (The page's whole JSON built by PostgreSQL, string_agg of concat() per asset, was measured with this script at
// commit 5bac47c and cost more on the two sides together: BENCHMARKS.md, "listing, distinct pages".)
// Usage (on the kept seed of `npm run bench -- listing`, whose PostgreSQL must not be running):
//   BENCH_DATA=/work/bench-data flock -x /tmp/heavy.lock \
//     node bench/profiles/listing-json-cost.cjs [--pages=1000] [--rounds=3] [--tagged]
//     [--ab=.ab-main] [--only=text,text_ab]   (--ab: the text path of another build too, as `text_ab`)
// One connection, pages asked one after another, variants interleaved per round; CPU from process.cpuUsage() and
// /proc/<backend pid>/stat. Prints µs per page for each side and their sum, and each variant's ratio to `object`.
const path = require('node:path');
const { DIST, OWNER, cpuMicros, parseArgs, runScript, log, median } = require('../lib/common.cjs');
const { keptListing } = require('../figures/listing.cjs');

const LIMIT = 100;

/** Variant `text`: every column as text, pg's type parsers bypassed, the asset JSON concatenated here. */
function textVariant(pool, ownerId, tagged, base) {
  const raw = { getTypeParser: () => (v) => v };
  const prefix = JSON.stringify(`${base}/api/assets/`).slice(0, -1);
  const ts = (c) => `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  const text = `SELECT id::text, to_json(name)::text AS nj, size::text, content_hash::text AS h, to_json(mime_type)::text AS mt,
      coalesce(array_to_json(tags)::text, '[]') AS tags, user_metadata::text AS um, preview_id::text AS pv, prompt_id::text AS pr,
      ${ts('created_at')} AS c, ${ts('updated_at')} AS u, ${ts('last_access_time')} AS l, is_immutable::text AS im, has_thumbnail::text AS th,
      metadata::text AS md, 'models' = ANY(tags) AS m
    FROM asset WHERE owner_id = $1 ${tagged ? `AND tags @> '{models,loras}'` : ''} AND (created_at, asset.id) < ($2::timestamptz, $3::uuid)
    ORDER BY created_at DESC, asset.id DESC LIMIT ${LIMIT + 1}`;
  const name = `text_variant_${tagged ? 't' : 'u'}`;
  return async (after) => {
    const { rows } = await pool.query({ name, text, values: [ownerId, after.value, after.id], types: raw });
    let out = '';
    const n = Math.min(rows.length, LIMIT);
    for (let i = 0; i < n; i++) {
      const r = rows[i];
      const um = r.um === 'null' ? '{}' : JSON.stringify(JSON.parse(r.um));
      const pv = r.pv === null ? 'null' : `"${r.pv}"`;
      const pr = r.pr === null ? 'null' : `"${r.pr}"`;
      out += `${i ? ',' : ''}{"id":"${r.id}","name":${r.nj},"display_name":${r.nj},"size":${r.size},"asset_hash":"blake3:${r.h}","hash":"blake3:${r.h}","mime_type":${r.mt},"tags":${r.tags},"user_metadata":${um},"preview_id":${pv},"prompt_id":${pr},"job_id":${pr},"created_at":"${r.c}","updated_at":"${r.u}","last_access_time":"${r.l}","is_immutable":${r.im}`;
      if (r.pv !== null) out += `,"preview_url":${prefix}${r.pv}/content"`;
      if (r.th === 'true') out += `,"thumbnail_url":${prefix}${r.id}/thumbnail"`;
      // (loader_path: the bench's names are safe paths; the service's rule is safeRelativePath)
      if (r.m === 't') out += `,"loader_path":${r.nj}`;
      if (r.md !== null && r.md !== 'null') out += `,"metadata":${JSON.stringify(JSON.parse(r.md))}`;
      out += '}';
    }
    return `{"assets":[${out}],"has_more":${rows.length > LIMIT}}`;
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const opts = args.opts;
  const pages = Number(opts.pages ?? 1000);
  const rounds = args.rounds ?? 3;
  const tagged = Boolean(opts.tagged);
  const pg = await keptListing({ pages, tagged });
  const { cursors } = pg;
  const { createDatabase } = require(path.join(DIST, 'infra', 'prisma.js'));
  const { AssetRepository } = require(path.join(DIST, 'domain', 'assets', 'asset.repository.js'));
  const { assetPageJson, assetPageText } = require(path.join(DIST, 'http', 'rest', 'asset.presenter.js'));
  const { ASSET_JSON_PAGE } = require(path.join(DIST, 'http', 'rest', 'read-model', 'asset-page.js'));
  const db = createDatabase(pg.url, 1);
  try {
    const base = 'http://127.0.0.1:8080';
    const repo = new AssetRepository(db.prisma, db.pool);
    const q = {
      includeTags: tagged ? ['models', 'loras'] : [],
      excludeTags: [],
      limit: LIMIT,
      offset: 0,
      sort: 'created_at',
      order: 'desc',
    };
    const backend = Number((await db.pool.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    const text = textVariant(db.pool, OWNER, tagged, base);
    const variants = {
      object: async (after) => JSON.stringify(assetPageJson(await repo.list(OWNER, q, after), base)),
      text: async (after) => assetPageText(await repo.pageIfChanged(OWNER, q, after, undefined, ASSET_JSON_PAGE), base),
      textsql: text,
    };
    // --ab=DIR: also the text path of another build (e.g. .ab-main), same run, same connection.
    if (typeof opts.ab === 'string') {
      const other = path.resolve(opts.ab, 'src');
      const { AssetRepository: OtherRepository } = require(path.join(other, 'domain', 'assets', 'asset.repository.js'));
      const { assetPageText: otherPageText } = require(path.join(other, 'http', 'rest', 'asset.presenter.js'));
      const otherRepo = new OtherRepository(db.prisma, db.pool);
      variants.text_ab = async (after) =>
        otherPageText(await otherRepo.pageTextIfChanged(OWNER, q, after, undefined), base);
    }
    // --only=a,b: a subset of the variants (object is always run: the ratios are to it).
    if (typeof opts.only === 'string')
      for (const k of Object.keys(variants))
        if (k !== 'object' && !opts.only.split(',').includes(k)) delete variants[k];
    // The same page from each: text byte-identical to object; textsql the same assets.
    const o = await variants.object(cursors[0]);
    for (const k of ['text', 'text_ab'])
      if (variants[k] && (await variants[k](cursors[0])) !== o) throw new Error(`${k} differs from object`);
    if (
      variants.textsql &&
      JSON.stringify(JSON.parse(await variants.textsql(cursors[0])).assets) !== JSON.stringify(JSON.parse(o).assets)
    ) {
      throw new Error('textsql differs from object');
    }
    const results = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
    for (let round = 0; round < rounds; round++) {
      for (const [name, fn] of Object.entries(variants)) {
        for (const c of cursors.slice(0, 50)) await fn(c); // warm: plans, JIT
        const u0 = process.cpuUsage();
        const b0 = cpuMicros(backend);
        const t0 = process.hrtime.bigint();
        for (const c of cursors) await fn(c);
        const wall = Number(process.hrtime.bigint() - t0) / 1e3 / cursors.length;
        const u = process.cpuUsage(u0);
        const service = (u.user + u.system) / cursors.length;
        const postgres = (cpuMicros(backend) - b0) / cursors.length;
        results[name].push({ service, postgres, sum: service + postgres, wall });
        log(
          `  round ${round + 1} ${name.padEnd(6)}: service ${service.toFixed(0)} µs, postgres ${postgres.toFixed(0)} µs, sum ${(service + postgres).toFixed(0)} µs, wall ${wall.toFixed(0)} µs per page`,
        );
      }
    }
    const med = (name, k) => median(results[name].map((r) => r[k]));
    for (const name of Object.keys(variants)) {
      const ratios = results[name].map((r, i) => r.sum / results.object[i].sum);
      log(
        `${name.padEnd(6)} median: service ${med(name, 'service').toFixed(0)} µs, postgres ${med(name, 'postgres').toFixed(0)} µs, sum ${med(name, 'sum').toFixed(0)} µs per page; sum / object's in the same round: ${ratios.map((x) => x.toFixed(2)).join(', ')}`,
      );
    }
  } finally {
    await db.close();
    await pg.stop();
  }
}

if (require.main === module) runScript(main);
