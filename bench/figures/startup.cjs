'use strict';
// Figure 8: time from starting `node dist/src/main.js` (what `npm start` runs after building) to GET /readyz 200,
// with the embedded PostgreSQL: cold (fresh DATA_DIR, so initdb + migrations) and warm (same DATA_DIR again).
// Baseline in the same run: a process that only starts the same embedded PostgreSQL (cold: initdb) and runs
// SELECT 1 — the floor the service's own start-up (migrations, pg-boss, GraphQL schema, HTTP) adds to.
const path = require('node:path');
const {
  benchTmp,
  rmrf,
  spawnService,
  spawnHelper,
  now,
  median,
  r2,
  r3,
  log,
  printResult,
  onCleanup,
} = require('../lib/common.cjs');

async function timeService(dataDir) {
  const svc = await spawnService({ dataDir });
  const seconds = svc.readySeconds;
  await svc.stop();
  return seconds;
}

async function timePgOnly(dir) {
  const t0 = now();
  const h = await spawnHelper('pg-only.cjs', [dir]);
  const seconds = now() - t0;
  await h.stop();
  return seconds;
}

async function run(args) {
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const root = benchTmp('startup');
  const forget = onCleanup(() => rmrf(root));
  const r = { svcCold: [], svcWarm: [], pgCold: [], pgWarm: [] };
  try {
    for (let i = 0; i < rounds; i++) {
      const svcDir = path.join(root, `svc-${i}`);
      const pgDir = path.join(root, `pg-${i}`, 'postgres');
      r.svcCold.push(await timeService(svcDir));
      r.pgCold.push(await timePgOnly(pgDir));
      r.svcWarm.push(await timeService(svcDir));
      r.pgWarm.push(await timePgOnly(pgDir));
      log(
        `  round ${i + 1}: cold service ${r.svcCold[i].toFixed(2)} s (pg alone ${r.pgCold[i].toFixed(2)} s); ` +
          `warm service ${r.svcWarm[i].toFixed(2)} s (pg alone ${r.pgWarm[i].toFixed(2)} s)`,
      );
      rmrf(svcDir);
      rmrf(path.dirname(pgDir));
    }
  } finally {
    rmrf(root);
    forget();
  }
  printResult('startup', {
    rounds,
    cold_s: r2(median(r.svcCold)),
    warm_s: r2(median(r.svcWarm)),
    pg_alone_cold_s: r2(median(r.pgCold)),
    pg_alone_warm_s: r2(median(r.pgWarm)),
    cold_ratio_vs_pg_alone: r3(median(r.svcCold.map((x, i) => x / r.pgCold[i]))),
    warm_ratio_vs_pg_alone: r3(median(r.svcWarm.map((x, i) => x / r.pgWarm[i]))),
  });
}

module.exports = { run };
