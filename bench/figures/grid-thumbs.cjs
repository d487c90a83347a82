'use strict';
// The grid's thumbnail requests without a browser: 100 distinct thumbnails by their signed URL
// (`thumbnail_url?access=<grant>`, what the asset browser's <img> elements ask for) over 6 kept-alive connections,
// as Chromium's HTTP/1.1 connection limit has them, against a bare node:http server of the same bytes from memory
// (bench/lib/thumb-page-server.cjs, the `grid` benchmark's baseline). Per round and target: the wall time of the 100
// and the median and 90th percentile time to first byte (request written → response head). Rounds interleave the
// targets; reported are medians and static/service ratios (1 = as fast as the static server).
//
// `--also=<dir>` measures another build's service as well (e.g. `.ab-main`), on the same database and data;
// `--prof`: afterwards, a CPU profile of the service under the same load (node --cpu-prof), its top self times;
// `--smoke`: 12 images, 3 rounds.
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const {
  KEY,
  cpuMicros,
  benchTmp,
  rmrf,
  startStack,
  spawnHelper,
  spawnService,
  median,
  percentile,
  r3,
  log,
  printResult,
} = require('../lib/common.cjs');
const { seed } = require('./grid.cjs');

const CONNECTIONS = 6;

/** GETs every URL once over `CONNECTIONS` kept-alive connections; wall ms, and ms to first byte of each. */
async function fetchAll(urls) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const ttfb = [];
  let next = 0;
  const one = (url) =>
    new Promise((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      const req = http.get(url, { agent }, (res) => {
        ttfb.push(Number(process.hrtime.bigint() - t0) / 1e6);
        let bytes = 0;
        res.on('data', (d) => (bytes += d.length));
        res.on('end', () =>
          res.statusCode === 200 && bytes > 0
            ? resolve()
            : reject(new Error(`${url}: ${res.statusCode}, ${bytes} bytes`)),
        );
      });
      req.on('error', reject);
    });
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < urls.length) await one(urls[next++]);
    }),
  );
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  agent.destroy();
  return { wall, ttfb };
}

async function signedUrls(svcUrl, n) {
  const get = async (p) => (await fetch(`${svcUrl}${p}`, { headers: { 'x-api-key': KEY } })).json();
  const { access } = await get('/api/thumbnail-access');
  const { assets } = await get(`/api/assets?limit=${n}`);
  // thumbnail_url carries the owner's grant already (MEDIA_URL_GRANTS); the page swaps in its own, as the UI does.
  return assets.map((a) => `${a.thumbnail_url.split('?')[0]}?access=${encodeURIComponent(access)}`);
}

/**
 * The functions with the most self time in a .cpuprofile, as [name  file:line, ms], counted from the first sample in
 * the thumbnail route on (the process's start-up left out), idle time left out.
 */
function topSelf(file, n = 25) {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((x) => [x.id, x]));
  const parent = new Map();
  for (const x of prof.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
  const inRoute = (id) => {
    for (let x = id; x !== undefined; x = parent.get(x))
      if (/thumbnail\.router\.js$/.test(byId.get(x).callFrame.url)) return true;
    return false;
  };
  const self = new Map();
  let started = false;
  for (let i = 0; i < prof.samples.length; i++) {
    started ||= inRoute(prof.samples[i]);
    const cf = byId.get(prof.samples[i]).callFrame;
    if (!started || cf.functionName === '(idle)') continue;
    const k = `${cf.functionName || '(anonymous)'}  ${cf.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/')}:${cf.lineNumber + 1}`;
    self.set(k, (self.get(k) ?? 0) + (prof.timeDeltas[i] ?? 0) / 1000);
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  return { total, top: [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, n) };
}

async function run(args) {
  const tiles = args.smoke ? 12 : 100;
  const rounds = args.rounds ?? (args.smoke ? 3 : 20);
  const dir = benchTmp('grid-thumbs');
  const stack = await startStack({ prefix: 'grid-thumbs' });
  const extra = [];
  try {
    log(`  uploading ${tiles} 1024x1024 PNGs and waiting for their thumbnails`);
    const meanBytes = await seed(stack.svc.url, dir, tiles);
    const baseline = await spawnHelper('thumb-page-server.cjs', [dir]);
    extra.push(baseline);
    const files = fs.readdirSync(dir).sort();
    const targets = {
      service: await signedUrls(stack.svc.url, tiles),
      static: files.map((f) => `${baseline.url}/t/${f}`),
    };
    const pids = { service: stack.svc.pid, static: baseline.pid };
    if (args.opts.also) {
      const also = await spawnService({
        dataDir: stack.dataDir,
        databaseUrl: stack.databaseUrl,
        main: path.resolve(String(args.opts.also), 'src', 'main.js'),
      });
      extra.push(also);
      targets.also = await signedUrls(also.url, tiles);
      pids.also = also.pid;
    }
    for (const urls of Object.values(targets)) await fetchAll(urls); // warm-up
    const res = Object.fromEntries(Object.keys(targets).map((k) => [k, { wall: [], ttfb50: [], ttfb90: [], cpu: [] }]));
    const names = Object.keys(targets);
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < names.length; i++) {
        const name = names[(i + r) % names.length];
        const cpu0 = cpuMicros(pids[name]);
        const { wall, ttfb } = await fetchAll(targets[name]);
        res[name].cpu.push((cpuMicros(pids[name]) - cpu0) / targets[name].length);
        res[name].wall.push(wall);
        res[name].ttfb50.push(median(ttfb));
        res[name].ttfb90.push(percentile(ttfb, 90));
      }
      log(
        `  round ${r + 1}: ${names.map((n) => `${n} ${res[n].wall[r].toFixed(1)} ms (ttfb p50 ${res[n].ttfb50[r].toFixed(2)}, p90 ${res[n].ttfb90[r].toFixed(2)})`).join('; ')}`,
      );
    }
    const summary = (n) => ({
      wall_ms_median: r3(median(res[n].wall)),
      ttfb_p50_ms_median: r3(median(res[n].ttfb50)),
      ttfb_p90_ms_median: r3(median(res[n].ttfb90)),
      // the server process's CPU time per thumbnail over all rounds (/proc counts 10 ms ticks)
      cpu_us_per_request: Math.round(res[n].cpu.reduce((a, b) => a + b, 0) / rounds),
      // static/this per round: 1 = as fast as the static server
      wall_ratio: r3(median(res[n].wall.map((w, i) => res.static.wall[i] / w))),
    });
    let profile;
    if (args.opts.prof) {
      const profDir = path.join(dir, 'prof');
      const svc = await spawnService({
        dataDir: stack.dataDir,
        databaseUrl: stack.databaseUrl,
        nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
      });
      const urls = await signedUrls(svc.url, tiles);
      for (let r = 0; r < rounds; r++) await fetchAll(urls);
      await svc.stop();
      const file = fs.readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
      const { total, top } = topSelf(path.join(profDir, file));
      log(
        `  profile of the service (${rounds} x ${tiles} thumbnails; from its first thumbnail request, idle left out): ${total.toFixed(0)} ms sampled (${((total * 1000) / (rounds * tiles)).toFixed(0)} µs a request); top self times:`,
      );
      for (const [k, ms] of top) log(`    ${ms.toFixed(1).padStart(8)} ms  ${k}`);
      profile = top.slice(0, 10).map(([k, ms]) => `${ms.toFixed(0)} ms ${k}`);
    }
    printResult('grid-thumbs', {
      tiles,
      connections: CONNECTIONS,
      thumbnail_bytes_mean: Math.round(meanBytes),
      rounds,
      ...Object.fromEntries(names.map((n) => [n, summary(n)])),
      ...(profile ? { profile } : {}),
    });
  } finally {
    for (const x of extra.reverse()) await x.stop().catch(() => undefined);
    await stack.stop();
    rmrf(dir);
  }
}

module.exports = { run };
