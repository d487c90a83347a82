'use strict';
// A CPU profile of the service under one of figure 7's workloads (bench/figures/graphql.cjs):
//   node bench/profiles/profile.cjs [graphql|graphql-list|rest|rest-list] [--dist=DIR] [--duration=S] [--top=N]
// Starts the build in DIR (default dist) with `--cpu-prof`, seeds 50 assets (with previews for the list workloads),
// warms up, runs 64 connections for S seconds (default 10), stops the service and prints where its CPU went: the
// top functions by self time, and self time by package (node_modules/<pkg>, our own code, Node internals, GC).
// The .cpuprofile stays in the printed directory (open it in Chrome DevTools or speedscope).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startStack, spawnService, uploadMultipart, cannon, log, parseArgs, runScript } = require('../lib/common.cjs');
const { summarizeDir } = require('../lib/cpu-profile.cjs');
const { cycling, seedPreviews } = require('../figures/graphql.cjs');

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const kind = args._?.[0] ?? process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 'graphql';
  const dist = path.resolve(args.opts.dist ?? 'dist');
  const duration = Number(args.opts.duration ?? 10);
  const top = Number(args.opts.top ?? 40);
  const profDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cpuprof-'));
  const stack = await startStack({ prefix: 'prof' });
  let svc;
  let requests = 0;
  try {
    const ids = [];
    for (let i = 0; i < 50; i++)
      ids.push((await uploadMultipart(stack.svc.url, 1024 + i, { fileName: `p${i}.bin` })).body.id);
    if (kind.endsWith('-list')) await seedPreviews(stack.svc.url, ids);
    await stack.svc.stop();
    svc = await spawnService({
      dataDir: stack.dataDir,
      databaseUrl: stack.databaseUrl,
      nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
      main: path.join(dist, 'src', 'main.js'),
    });
    const warm = await cannon({ ...cycling(svc.url, ids, kind), duration: 2, connections: 64 });
    const r = await cannon({ ...cycling(svc.url, ids, kind), duration, connections: 64 });
    log(`${kind}: ${r.rps.toFixed(0)} req/s p50 ${r.p50} p99 ${r.p99} ms (under the profiler), ok=${r.ok}`);
    requests = warm.total + r.total;
    await svc.stop();
    svc = undefined;
  } finally {
    await svc?.stop();
    await stack.stop();
  }
  summarizeDir(profDir, top, console.log, requests);
}

runScript(main);
