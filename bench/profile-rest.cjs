'use strict';
// A CPU profile of the service under figure 4's load: `node bench/profile-rest.cjs [get|head] [--duration=S] [--dist=DIR] [--top=N]`.
// Starts the service with --cpu-prof (profile written to BENCH_PROFILE_DIR, default the OS temp dir), runs 64
// connections of GET /api/assets/{id} (or HEAD /api/assets/hash/{hash}) for S seconds, stops it, and prints the
// functions with the most self time (the share of all samples), grouped by function and file.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { KEY, startStack, spawnService, uploadMultipart, cannon, log, parseArgs, runScript } = require('./lib/common.cjs');
const { teachAutocannonHead, skipHeadBodies } = require('./metadata.cjs');

function top(profileFile, n) {
  const p = JSON.parse(fs.readFileSync(profileFile, 'utf8'));
  const self = new Map();
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const counts = new Map();
  for (const s of p.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
  let total = 0;
  for (const [id, c] of counts) {
    const node = byId.get(id);
    const f = node.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|src)\//, '$1/')}:${f.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + c);
    total += c;
  }
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, c]) => `${((100 * c) / total).toFixed(1).padStart(5)} %  ${k}`);
}

async function main() {
  const { opts } = parseArgs(process.argv.slice(3));
  const kind = process.argv[2] ?? 'get';
  const duration = Number(opts.duration ?? 10);
  const dir = process.env.BENCH_PROFILE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'prof-'));
  const stack = await startStack({ prefix: 'profile' });
  let svc;
  try {
    const ids = [];
    const hashes = [];
    for (let i = 0; i < 50; i++) {
      const r = await uploadMultipart(stack.svc.url, 1024 + i, { fileName: `m${i}.bin`, tags: 'bench,metadata' });
      ids.push(r.body.id);
      hashes.push(r.body.asset_hash);
    }
    await stack.svc.stop();
    svc = await spawnService({
      dataDir: stack.dataDir,
      databaseUrl: stack.databaseUrl,
      nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
      ...(opts.dist ? { main: path.resolve(opts.dist, 'src', 'main.js') } : {}),
    });
    let i = 0;
    const paths = kind === 'head' ? hashes.map((h) => `/api/assets/hash/${h}`) : ids.map((id) => `/api/assets/${id}`);
    const method = kind === 'head' ? 'HEAD' : 'GET';
    if (kind === 'head') {
      teachAutocannonHead();
      skipHeadBodies(true);
    }
    const load = { url: svc.url, headers: { 'x-api-key': KEY }, connections: 64, requests: [{ method, setupRequest: (req) => ({ ...req, path: paths[i++ % paths.length] }) }] };
    await cannon({ ...load, duration: 2 });
    const r = await cannon({ ...load, duration });
    log(`${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms`);
    await svc.stop();
    svc = undefined;
    const file = fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(dir, f)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
    log(`profile: ${file}`);
    for (const line of top(file, Number(opts.top ?? 40))) log(line);
  } finally {
    await svc?.stop();
    await stack.stop();
  }
}

module.exports = { top };

if (require.main === module) runScript(main);
