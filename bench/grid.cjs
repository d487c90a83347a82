'use strict';
// The asset browser's first page (issue 16: "the grid's first page with 100 tiles loads, all thumbnails fetched, in
// under 1 s on loopback"): headless Chromium (playwright-core) opens /ui?pageSize=100 with the key already in the
// tab's sessionStorage, and the time is taken in the page from navigation start (performance.now()) to the frame in
// which all 100 tiles show a decoded thumbnail.
//
// Two cases: "first load" in a new browser context (empty HTTP cache: the page, its script and every thumbnail come
// from the service) and "reload" in the same context (thumbnails may come from the browser's cache, as their
// immutable caching allows). Baseline, same run, interleaved: a static page of 100 <img> elements of the same
// thumbnail bytes from a bare node:http server (bench/lib/thumb-page-server.cjs): what the browser alone needs to
// show 100 thumbnails here. Reported: medians, and baseline/service ratios (1 = as fast as the static page).
//
// The images are 100 generated 1024x1024 PNGs (gradients, shapes and grain, like renders). `--dist=<dir>` measures
// another build's service (e.g. `.ab-old`, main's build) on the same data instead of this one; `--also=<dir>`
// measures another build as well, in the same rounds (interleaved); `--smoke`: 12 tiles, one round.
const fs = require('node:fs');
const path = require('node:path');
const sharp = require('sharp');
const { KEY, benchTmp, rmrf, startStack, spawnHelper, spawnService, median, r3, log, printResult, sleep } = require('./lib/common.cjs');

let TILES = 100;
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

async function picture(i) {
  const h1 = (i * 47) % 360;
  const h2 = (h1 + 60) % 360;
  const shapes = Array.from({ length: 6 }, (_, k) => {
    const s = (i * 31 + k * 17) % 100;
    return `<circle cx="${100 + ((s * 97) % 820)}" cy="${100 + ((s * 61) % 820)}" r="${40 + ((s * 7) % 160)}" fill="hsl(${(h1 + k * 40) % 360},70%,${40 + (k % 3) * 15}%)" fill-opacity="0.7"/>`;
  }).join('');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="1024" height="1024">
    <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="hsl(${h1},70%,60%)"/><stop offset="1" stop-color="hsl(${h2},60%,30%)"/></linearGradient></defs>
    <rect width="1024" height="1024" fill="url(#g)"/>${shapes}</svg>`;
  const grain = await sharp({ create: { width: 1024, height: 1024, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 12 } } })
    .png()
    .toBuffer();
  return sharp(Buffer.from(svg)).composite([{ input: grain, blend: 'overlay' }]).png({ compressionLevel: 1 }).toBuffer();
}

/** Uploads `n` generated PNGs, waits for their thumbnails and copies their bytes into `dir`; the mean size. */
async function seed(url, dir, n = TILES) {
  for (let i = 0; i < n; i++) {
    const form = new FormData();
    form.append('tags', 'renders');
    form.append('file', new Blob([await picture(i)], { type: 'image/png' }), `render_${String(i).padStart(3, '0')}.png`);
    const res = await fetch(`${url}/api/assets`, { method: 'POST', headers: { 'x-api-key': KEY }, body: form });
    if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
  }
  // Every thumbnail made; their bytes copied for the baseline page.
  for (let tries = 0; ; tries++) {
    const res = await fetch(`${url}/api/assets?limit=${n}`, { headers: { 'x-api-key': KEY } });
    const { assets } = await res.json();
    const urls = assets.map((a) => a.thumbnail_url).filter(Boolean);
    if (urls.length === n) {
      let bytes = 0;
      for (const [i, u] of urls.entries()) {
        const data = Buffer.from(await (await fetch(u, { headers: { 'x-api-key': KEY } })).arrayBuffer());
        fs.writeFileSync(path.join(dir, `${String(i).padStart(3, '0')}.webp`), data);
        bytes += data.length;
      }
      return bytes / n;
    }
    if (tries > 600) throw new Error(`only ${urls.length} of ${n} thumbnails after a minute`);
    await sleep(100);
  }
}

/** In the page: resolves with ms since navigation start at the first frame where `count` images are decoded. */
function untilShown({ sel, count }) {
  return new Promise((resolve) => {
    const check = () => {
      const imgs = [...document.querySelectorAll(sel)];
      if (imgs.length >= count && imgs.every((i) => i.complete && i.naturalWidth > 0)) {
        const res = performance.getEntriesByType('resource');
        const thumbs = res.filter((e) => /\/thumbnail(\?|$)|\/t\/\d+\.webp$/.test(e.name));
        const end = (xs) => Math.round(Math.max(-1, ...xs.map((e) => e.responseEnd)));
        const start = (xs) => Math.round(Math.min(1e9, ...xs.map((e) => e.startTime)));
        // Where the time went, in ms after navigation start: the script loaded, GraphQL answered, thumbnails asked and got.
        // ttfb: the median of the thumbnails' request-to-first-byte (the server's answer time, queueing included).
        const ttfb = thumbs.map((e) => e.responseStart - e.requestStart).sort((a, b) => a - b)[Math.floor(thumbs.length / 2)] ?? -1;
        const access = res.filter((e) => /\/thumbnail-access$/.test(e.name)).map((e) => Math.round(e.responseEnd));
        const phases =
          `script ${end(res.filter((e) => /\.js$/.test(e.name)))}, graphql ${res.filter((e) => /\/graphql$/.test(e.name)).map((e) => Math.round(e.responseEnd)).join('/')}` +
          `${access.length ? `, access ${access.join('/')}` : ''}` +
          `${['ui:first-page', 'ui:tiles'].map((m) => performance.getEntriesByName(m)[0]).filter(Boolean).map((m) => `, ${m.name.slice(3)} ${Math.round(m.startTime)}`).join('')}, thumbnails ${start(thumbs)}-${end(thumbs)} (ttfb ${Math.round(ttfb)})`;
        resolve({ ms: performance.now(), phases, cached: thumbs.filter((e) => e.transferSize === 0).length });
      } else requestAnimationFrame(check);
    };
    check();
  });
}

async function run(args) {
  const { chromium } = require('playwright-core');
  const rounds = args.rounds ?? (args.smoke ? 1 : 5);
  if (args.smoke) TILES = 12;
  const dir = benchTmp('grid');
  const stack = await startStack({ prefix: 'grid' });
  let baseline;
  let browser;
  let other;
  let also;
  try {
    log(`  uploading ${TILES} 1024x1024 PNGs and waiting for their thumbnails`);
    const thumbBytes = await seed(stack.svc.url, dir);
    baseline = await spawnHelper('thumb-page-server.cjs', [dir]);
    if (args.opts.dist) other = await spawnService({ dataDir: stack.dataDir, databaseUrl: stack.databaseUrl, main: path.resolve(String(args.opts.dist), 'src', 'main.js') });
    const svcUrl = (other ?? stack.svc).url;
    if (args.opts.also) also = await spawnService({ dataDir: stack.dataDir, databaseUrl: stack.databaseUrl, main: path.resolve(String(args.opts.also), 'src', 'main.js') });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--disable-component-update', '--no-first-run'],
    });
    const targets = {
      service: { url: `${svcUrl}/ui?pageSize=${TILES}`, sel: '.tile img' },
      baseline: { url: `${baseline.url}/page`, sel: 'img.thumb' },
      ...(also ? { also: { url: `${also.url}/ui?pageSize=${TILES}`, sel: '.tile img' } } : {}),
    };
    const newContext = async () => {
      const context = await browser.newContext({ viewport: { width: 1360, height: 860 } });
      await context.addInitScript((key) => sessionStorage.setItem('assetBrowser.apiKey', key), KEY);
      return context;
    };
    const shown = async (context, t) => {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(t.url, { waitUntil: 'commit' });
      return page.evaluate(untilShown, { sel: t.sel, count: TILES });
    };
    // Warm-up (the browser's own first start, the service's first GraphQL request), not counted.
    for (const t of Object.values(targets)) {
      const c = await newContext();
      await shown(c, t);
      await c.close();
    }
    const res = { service: { first: [], reload: [] }, baseline: { first: [], reload: [] }, also: { first: [], reload: [] } };
    const cached = [];
    const phases = [];
    const basePhases = [];
    for (let r = 0; r < rounds; r++) {
      for (const [name, t] of Object.entries(targets)) {
        const c = await newContext();
        const first = await shown(c, t);
        const again = await shown(c, t);
        await c.close();
        res[name].first.push(first.ms);
        res[name].reload.push(again.ms);
        if (name === 'service') {
          cached.push(again.cached);
          phases.push({ first: first.phases, reload: again.phases });
        } else if (name === 'baseline') basePhases.push(first.phases);
      }
      log(
        `  round ${r + 1}: first load ${res.service.first[r].toFixed(0)} ms (static page ${res.baseline.first[r].toFixed(0)}), ` +
          `reload ${res.service.reload[r].toFixed(0)} ms (static page ${res.baseline.reload[r].toFixed(0)}; ${cached[r]} thumbnails from the cache)`,
      );
      log(`    first load: ${phases[r].first}\n    reload: ${phases[r].reload}\n    static page, first load: ${basePhases[r]}`);
      if (also) log(`    ${args.opts.also}: first load ${res.also.first[r].toFixed(0)} ms, reload ${res.also.reload[r].toFixed(0)} ms`);
    }
    const ratio = (k) => median(res.service[k].map((s, i) => res.baseline[k][i] / s));
    printResult('grid', {
      build: String(args.opts.dist ?? 'dist'),
      tiles: TILES,
      thumbnail_bytes_mean: Math.round(thumbBytes),
      rounds,
      first_load_ms_median: Math.round(median(res.service.first)),
      first_load_ms: res.service.first.map(Math.round),
      baseline_first_load_ms_median: Math.round(median(res.baseline.first)),
      first_load_ratio: r3(ratio('first')),
      reload_ms_median: Math.round(median(res.service.reload)),
      reload_ms: res.service.reload.map(Math.round),
      baseline_reload_ms_median: Math.round(median(res.baseline.reload)),
      reload_ratio: r3(ratio('reload')),
      ...(also
        ? {
            also: String(args.opts.also),
            also_first_load_ms_median: Math.round(median(res.also.first)),
            also_first_load_ms: res.also.first.map(Math.round),
            also_reload_ms_median: Math.round(median(res.also.reload)),
          }
        : {}),
      target_ms: 1000,
      met: median(res.service.first) < 1000,
    });
  } finally {
    await browser?.close().catch(() => undefined);
    await baseline?.stop();
    await other?.stop();
    await also?.stop();
    await stack.stop();
    rmrf(dir);
  }
}

module.exports = { run, seed };
