'use strict';
// A CPU profile of the service under one of figure 7's workloads (bench/graphql.cjs):
//   node bench/profile.cjs [graphql|graphql-list|rest|rest-list] [--dist=DIR] [--duration=S] [--top=N]
// Starts the build in DIR (default dist) with `--cpu-prof`, seeds 50 assets (with previews for the list workloads),
// warms up, runs 64 connections for S seconds (default 10), stops the service and prints where its CPU went: the
// top functions by self time, and self time by package (node_modules/<pkg>, our own code, Node internals, GC).
// The .cpuprofile stays in the printed directory (open it in Chrome DevTools or speedscope).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startStack, spawnService, uploadMultipart, cannon, log, parseArgs, runScript } = require('./lib/common.cjs');
const { cycling, seedPreviews } = require('./graphql.cjs');

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
    for (let i = 0; i < 50; i++) ids.push((await uploadMultipart(stack.svc.url, 1024 + i, { fileName: `p${i}.bin` })).body.id);
    if (kind.endsWith('-list')) await seedPreviews(stack.svc.url, ids);
    await stack.svc.stop();
    svc = await spawnService({ dataDir: stack.dataDir, databaseUrl: stack.databaseUrl, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`], main: path.join(dist, 'src', 'main.js') });
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
  const file = fs.readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile in ${profDir}`);
  summarize(JSON.parse(fs.readFileSync(path.join(profDir, file), 'utf8')), top, requests);
  log(`profile: ${path.join(profDir, file)}`);
}

/** Self time by package and by function, as shares of the busy time and in µs per request (warm-up included). */
function summarize(profile, top, requests) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (dt[i] ?? 0));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self].filter(([id]) => byId.get(id).callFrame.functionName === '(idle)').reduce((a, [, v]) => a + v, 0);
  const busy = total - idle;
  const fns = new Map();
  const pkgs = new Map();
  for (const [id, t] of self) {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    if (functionName === '(idle)') continue;
    const key = `${functionName || '(anonymous)'} ${short(url)}:${lineNumber + 1}`;
    fns.set(key, (fns.get(key) ?? 0) + t);
    const p = pkgOf(functionName, url);
    pkgs.set(p, (pkgs.get(p) ?? 0) + t);
  }
  const pct = (t) => ((100 * t) / busy).toFixed(1).padStart(5) + ' %' + (requests ? (t / requests).toFixed(1).padStart(8) + ' µs/req' : '');
  console.log(`busy ${(busy / 1e6).toFixed(2)} s of ${(total / 1e6).toFixed(2)} s sampled; ${requests} requests, ${(busy / requests).toFixed(0)} µs busy per request (start-up included)`);
  console.log('\nself time by package:');
  for (const [p, t] of [...pkgs].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`${pct(t)}  ${p}`);
  console.log(`\ntop ${top} functions by self time:`);
  for (const [f, t] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(t)}  ${f}`);
}

function short(url) {
  const i = url.lastIndexOf('node_modules/');
  if (i >= 0) return url.slice(i + 13);
  const d = url.indexOf('/dist/');
  return d >= 0 ? url.slice(d + 1) : url.replace(/^file:\/\//, '');
}

function pkgOf(fn, url) {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const i = url.lastIndexOf('node_modules/');
  if (i >= 0) {
    const rest = url.slice(i + 13).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  return url.includes('/dist/') ? 'service (dist)' : url;
}

runScript(main);
