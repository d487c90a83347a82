'use strict';
// Seconds to reclaim N contents whose grace period is over (default 10,000).
//   node bench/figures/gc.cjs [--count=10000] [--limit=120] [--main=<dist/src/main.js of another build>]
// One PostgreSQL and one service. N content rows (orphaned two hours ago) and their blob files are written directly,
// and one `content.gc` job per content is enqueued, as N asset deletions would. Measured: the time until every row
// and every blob is gone, or, after --limit seconds, how many were reclaimed by then (and the rate).
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { Client } = require('pg');
const {
  DIST,
  benchTmp,
  rmrf,
  startPostgres,
  spawnService,
  parseArgs,
  printResult,
  log,
  runScript,
  onCleanup,
  sleep,
  now,
} = require('../lib/common.cjs');

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const n = Number(args.opts.count ?? 10_000);
  const limit = Number(args.opts.limit ?? 120);
  const mainFile = args.opts.main;
  const dir = benchTmp('gc');
  const dataDir = path.join(dir, 'data');
  const pg = await startPostgres(path.join(dir, 'postgres'));
  const svc = await spawnService({
    dataDir,
    databaseUrl: pg.url,
    ...(mainFile ? { main: path.resolve(mainFile) } : {}),
  });
  const db = new Client({ connectionString: pg.url });
  await db.connect();
  const stop = async () => {
    await db.end().catch(() => undefined);
    await svc.stop().catch(() => undefined);
    await pg.stop().catch(() => undefined);
    rmrf(dir);
  };
  const forget = onCleanup(stop);
  try {
    const hexes = Array.from({ length: n }, () => crypto.randomBytes(32).toString('hex'));
    const blobs = path.join(dataDir, 'blobs');
    for (const h of hexes) {
      fs.mkdirSync(path.join(blobs, h.slice(0, 2), h.slice(2, 4)), { recursive: true });
      fs.writeFileSync(path.join(blobs, h.slice(0, 2), h.slice(2, 4), h), h);
    }
    await db.query(
      `INSERT INTO content (blake3, sha256, size, mime_type, first_name, orphaned_at)
       SELECT h, h, 64, 'application/octet-stream', 'gc.bin', now() - interval '2 hours' FROM unnest($1::text[]) AS h`,
      [hexes],
    );
    const { JobQueue } = require(path.join(DIST, 'infra', 'queue.js'));
    const { createLogger } = require(path.join(DIST, 'infra', 'logger.js'));
    const { JOB } = require(path.join(DIST, 'domain', 'job-map.js'));
    const queue = await JobQueue.create(pg.url, createLogger('warn'));
    await queue.raw.start();
    const t0 = now();
    for (let i = 0; i < n; i += 1000)
      await queue.raw.insert(
        JOB.contentGc,
        hexes.slice(i, i + 1000).map((blake3) => ({ data: { blake3 } })),
      );
    await queue.raw.stop({ graceful: false, close: true });
    let left = n;
    while (now() - t0 < limit) {
      left = (await db.query('SELECT count(*)::int AS n FROM content WHERE blake3 = ANY($1::text[])', [hexes])).rows[0]
        .n;
      const blobsLeft =
        left === 0
          ? hexes.filter((h) => fs.existsSync(path.join(blobs, h.slice(0, 2), h.slice(2, 4), h))).length
          : left;
      if (blobsLeft === 0) break;
      await sleep(250);
    }
    const seconds = Math.round((now() - t0) * 10) / 10;
    const reclaimed = n - left;
    log(`${reclaimed} of ${n} contents reclaimed in ${seconds} s`);
    printResult('gc', {
      build: mainFile ?? 'dist',
      count: n,
      reclaimed,
      seconds,
      per_second: Math.round(reclaimed / seconds),
      finished: left === 0,
    });
  } finally {
    forget();
    await stop();
  }
}

runScript(main);
