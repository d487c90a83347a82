'use strict';
// A valid client's latency while a flood of random API keys hits the service.
//   node bench/figures/auth-flood.cjs [--main=<dist/src/main.js of another build>] [--seconds=10] [--rate=1000]
// One PostgreSQL and one service (127.0.0.1 only). Phase 1: the valid client alone (8 connections, GET
// /api/assets/{id} cycling over 20 assets). Phase 2: the same client while 64 more connections send random keys at
// --rate requests/s in all (a fixed rate, so two builds face the same flood; 0: as fast as they go).
// Printed: the valid client's req/s and p99 in both phases, and the flood's req/s and status mix.
const path = require('node:path');
const crypto = require('node:crypto');
const {
  KEY,
  benchTmp,
  rmrf,
  startPostgres,
  spawnService,
  uploadMultipart,
  cannon,
  parseArgs,
  printResult,
  log,
  runScript,
  onCleanup,
} = require('../lib/common.cjs');
const { cycling } = require('./graphql.cjs');

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const seconds = Number(args.opts.seconds ?? 10);
  const mainFile = args.opts.main;
  const rate = Number(args.opts.rate ?? 1000);
  const dir = benchTmp('auth-flood');
  const pg = await startPostgres(path.join(dir, 'postgres'));
  const svc = await spawnService({
    dataDir: path.join(dir, 'data'),
    databaseUrl: pg.url,
    ...(mainFile ? { main: path.resolve(mainFile) } : {}),
  });
  const stop = async () => {
    await svc.stop().catch(() => undefined);
    await pg.stop().catch(() => undefined);
    rmrf(dir);
  };
  const forget = onCleanup(stop);
  try {
    const ids = [];
    for (let i = 0; i < 20; i++) {
      const up = await uploadMultipart(svc.url, 1024 + i, { fileName: `f${i}.bin` });
      if (up.status !== 201 && up.status !== 200)
        throw new Error(`upload: ${up.status} ${JSON.stringify(up.body)}\n${svc.logs()}`);
      ids.push(up.body.id);
    }
    const probe = await fetch(`${svc.url}/api/assets/${ids[0]}`, { headers: { 'x-api-key': KEY } });
    if (probe.status !== 200) throw new Error(`probe: ${probe.status} ${await probe.text()}`);
    const valid = () => cannon({ ...cycling(svc.url, ids, 'rest'), duration: seconds, connections: 8 });
    await cannon({ ...cycling(svc.url, ids, 'rest'), duration: 2, connections: 8 }); // warm-up
    const alone = await valid();
    log(
      `valid client alone: ${alone.rps.toFixed(0)} req/s, p99 ${alone.p99} ms, non-2xx ${alone.non2xx}, errors ${alone.errors}`,
    );
    const statuses = {};
    const flood = require('autocannon')({
      url: svc.url,
      connections: 64,
      duration: seconds,
      ...(rate > 0 ? { overallRate: rate } : {}),
      requests: [
        {
          method: 'GET',
          setupRequest: (req) => ({
            ...req,
            path: `/api/assets/${ids[0]}`,
            headers: { 'x-api-key': `random-${crypto.randomBytes(12).toString('hex')}` },
          }),
        },
      ],
    });
    flood.on('response', (_client, status) => (statuses[status] = (statuses[status] ?? 0) + 1));
    const [during, floodRes] = await Promise.all([valid(), flood]);
    log(
      `valid client under the flood: ${during.rps.toFixed(0)} req/s, p99 ${during.p99} ms; flood ${floodRes.requests.average.toFixed(0)} req/s ${JSON.stringify(statuses)}`,
    );
    printResult('auth-flood', {
      build: mainFile ?? 'dist',
      seconds,
      flood_rate: rate,
      valid_alone: { rps: Math.round(alone.rps), p99_ms: alone.p99, non2xx: alone.non2xx, errors: alone.errors },
      valid_under_flood: {
        rps: Math.round(during.rps),
        p99_ms: during.p99,
        non2xx: during.non2xx,
        errors: during.errors,
      },
      flood: { rps: Math.round(floodRes.requests.average), statuses },
      p99_ratio: Math.round((during.p99 / Math.max(1, alone.p99)) * 10) / 10,
    });
  } finally {
    forget();
    await stop();
  }
}

runScript(main);
