'use strict';
// Two builds of the service in the same run: `node bench/ab.cjs <distA> <distB> [graphql|rest|graphql-list|rest-list] [--rounds N] [--duration=S]`.
// Both run as processes on one PostgreSQL and one data dir, and take turns (A B, B A, …) under 64 connections on
// figure 7's workloads (bench/graphql.cjs): GraphQL `asset(id)` or REST GET /api/assets/{id}. Printed per build:
// req/s, p99 and the CPU time the service process used per request (/proc), and the medians of the per-round B/A
// ratios.
// For a change that has no run-time switch. A build of another commit, for example:
//   git worktree add /tmp/old <rev> && (cd /tmp/old && npm install && npm run build)
//   cp -r dist .ab-new   # this tree's build; a dist dir must sit under a checkout so node_modules resolves
//   node bench/ab.cjs /tmp/old/dist .ab-new graphql
// Or one build under two settings: AB_ENV_A / AB_ENV_B add environment variables to A's or B's process
// (`K=V,K2=V2`), e.g. the cost of the metrics: AB_ENV_A=METRICS_ENABLED=false node bench/ab.cjs dist dist rest
const path = require('node:path');
const { startStack, spawnService, uploadMultipart, cannon, cannonWithCpu, median, r3, log, printResult, parseArgs, runScript } = require('./lib/common.cjs');
const { cycling, seedPreviews } = require('./graphql.cjs');
const KINDS = ['graphql', 'rest', 'graphql-list', 'rest-list'];

async function main() {
  const [a, b, kind = 'graphql', ...rest] = process.argv.slice(2);
  if (!a || !b || !KINDS.includes(kind)) throw new Error(`usage: node bench/ab.cjs <distA> <distB> [${KINDS.join('|')}] [--rounds N] [--duration=S]`);
  const duration = Number(parseArgs(rest).opts.duration ?? 8);
  const rounds = parseArgs(rest).rounds ?? 4;
  const stack = await startStack({ prefix: 'ab' });
  const svc = {};
  try {
    for (const [k, dir] of [['A', a], ['B', b]]) {
      const env = Object.fromEntries((process.env[`AB_ENV_${k}`] ?? '').split(',').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
      svc[k] = await spawnService({ dataDir: stack.dataDir, databaseUrl: stack.databaseUrl, env, main: path.resolve(dir, 'src', 'main.js') });
    }
    const ids = [];
    for (let i = 0; i < 50; i++) ids.push((await uploadMultipart(stack.svc.url, 1024 + i, { fileName: `m${i}.bin` })).body.id);
    if (kind.endsWith('-list')) await seedPreviews(stack.svc.url, ids);
    await stack.svc.stop(); // only A and B serve from here on
    for (const k of ['A', 'B']) await cannon({ ...cycling(svc[k].url, ids, kind), duration: 2, connections: 64 });
    const res = { A: [], B: [] };
    for (let round = 0; round < rounds; round++) {
      for (const k of round % 2 ? ['B', 'A'] : ['A', 'B']) {
        const r = await cannonWithCpu({ ...cycling(svc[k].url, ids, kind), duration, connections: 64 }, svc[k].pid);
        if (!r.ok) throw new Error(`${k}: non-2xx or errors: ${JSON.stringify(r)}`);
        res[k].push({ rps: r.rps, p99: r.p99, cpuUs: r.cpuUs });
        log(`  round ${round + 1} ${k}: ${r.rps.toFixed(0)} req/s p99 ${r.p99} ms ${res[k].at(-1).cpuUs.toFixed(0)} µs CPU/req`);
      }
    }
    const sum = (xs) => ({ rps: Math.round(median(xs.map((x) => x.rps))), p99_ms: median(xs.map((x) => x.p99)), cpu_us_per_request: Math.round(median(xs.map((x) => x.cpuUs))) });
    printResult('ab', {
      kind,
      rounds,
      A: { dist: a, env: process.env.AB_ENV_A, ...sum(res.A) },
      B: { dist: b, env: process.env.AB_ENV_B, ...sum(res.B) },
      rps_ratio_b_to_a: r3(median(res.B.map((x, i) => x.rps / res.A[i].rps))),
      cpu_per_request_ratio_b_to_a: r3(median(res.B.map((x, i) => x.cpuUs / res.A[i].cpuUs))),
    });
  } finally {
    for (const k of ['A', 'B']) await svc[k]?.stop();
    await stack.stop();
  }
}

runScript(main);
