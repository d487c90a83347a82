'use strict';
// The asset browser's first page (issue 16: "the grid's first page with 100 tiles loads, all thumbnails fetched, in
// under 1 s on loopback"): headless Chromium (playwright-core) opens /ui?pageSize=100 with the key already in the
// tab's sessionStorage. Two times per load, both in ms since navigation start: "fetched", the last thumbnail's
// Resource Timing responseEnd (every thumbnail's last byte received: the issue's definition), and "shown", the first
// frame in which all 100 tiles show a decoded thumbnail (that adds the browser's decoding of 100 WebP images and its
// layout, which on the static page alone costs 0.1-1 s on this machine). A load that has not shown them all after
// 60 s stops the run with what the page had got (no hang).
//
// Two cases: "first load" in a new browser context (empty HTTP cache: the page, its script and every thumbnail come
// from the service) and "reload" in the same context (thumbnails may come from the browser's cache, as their
// immutable caching allows). Baseline, same run, interleaved: a static page of 100 <img> elements of the same
// thumbnail bytes from a bare node:http server (bench/lib/thumb-page-server.cjs): what the browser alone needs to
// show 100 thumbnails here. A second baseline, the same static page that first fetches its list of images as JSON
// (about the size of the asset browser's first-screen answer) and then adds the <img> elements: what the one round
// trip any application needs before its first image costs here. Reported: medians, and baseline/service ratios (1 =
// as fast as the static page); per round the phases (ms after navigation: script loaded, GraphQL answered, grant,
// marks of the page, thumbnails, how the thumbnails' requests waited and flowed) and the CPU each process spent.
//
// The images are 100 generated 1024x1024 PNGs (gradients, shapes and grain, like renders). `--dist=<dir>` measures
// another build's service (e.g. `.ab-old`, main's build) on the same data instead of this one; `--also=<dir>`
// measures another build as well, in the same rounds (interleaved); `--smoke`: 12 tiles, one round. `--prof`: one more
// load under the JavaScript profiler; `--trace`: one more load of each page under a Chromium trace (busy time by thread
// and event: script, style, layout, image decoding). `UI_MINIFY=0 npm run build` gives a page whose names read.
const fs = require('node:fs');
const path = require('node:path');
const sharp = require('sharp');
const {
  KEY,
  cpuMicros,
  benchTmp,
  rmrf,
  startStack,
  spawnHelper,
  spawnService,
  median,
  r3,
  log,
  printResult,
  sleep,
} = require('../lib/common.cjs');

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
  const grain = await sharp({
    create: {
      width: 1024,
      height: 1024,
      channels: 3,
      background: '#808080',
      noise: { type: 'gaussian', mean: 128, sigma: 12 },
    },
  })
    .png()
    .toBuffer();
  return sharp(Buffer.from(svg))
    .composite([{ input: grain, blend: 'overlay' }])
    .png({ compressionLevel: 1 })
    .toBuffer();
}

/** Uploads `n` generated PNGs, waits for their thumbnails and copies their bytes into `dir`; the mean size. */
async function seed(url, dir, n = TILES) {
  for (let i = 0; i < n; i++) {
    const form = new FormData();
    form.append('tags', 'renders');
    form.append(
      'file',
      new Blob([await picture(i)], { type: 'image/png' }),
      `render_${String(i).padStart(3, '0')}.png`,
    );
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

/** Busy time by thread and by complete trace event name (their durations, children subtracted), the top ones. */
function traceLines(trace) {
  const events = (trace.traceEvents ?? trace).filter((e) => e.ph === 'X' && e.dur > 0);
  const threads = new Map();
  const names = new Map(
    (trace.traceEvents ?? trace)
      .filter((e) => e.ph === 'M' && e.name === 'thread_name')
      .map((e) => [`${e.pid}:${e.tid}`, e.args.name]),
  );
  for (const e of events) {
    const k = `${e.pid}:${e.tid}`;
    if (!threads.has(k)) threads.set(k, []);
    threads.get(k).push(e);
  }
  const lines = [];
  const rows = [];
  for (const [k, evs] of threads) {
    evs.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
    const self = new Map();
    const stack = [];
    for (const e of evs) {
      while (stack.length && stack[stack.length - 1].ts + stack[stack.length - 1].dur <= e.ts) stack.pop();
      const parent = stack[stack.length - 1];
      if (parent) self.set(parent.name, (self.get(parent.name) ?? 0) - Math.min(e.dur, parent.ts + parent.dur - e.ts));
      self.set(e.name, (self.get(e.name) ?? 0) + e.dur);
      stack.push(e);
    }
    const busy = [...self.values()].reduce((a, b) => a + b, 0);
    rows.push({ thread: names.get(k) ?? k, busy, self });
  }
  rows.sort((a, b) => b.busy - a.busy);
  for (const r of rows.slice(0, 6)) {
    const top = [...r.self].sort((a, b) => b[1] - a[1]).slice(0, 8);
    lines.push(
      `${r.thread}: ${(r.busy / 1000).toFixed(1)} ms | ${top.map(([n, t]) => `${n} ${(t / 1000).toFixed(1)}`).join(' | ')}`,
    );
  }
  return lines;
}

/**
 * In the page: resolves at the first frame where `count` images are decoded, with two times in ms since navigation
 * start: `fetched`, the last thumbnail's Resource Timing responseEnd (its last byte received: the issue's "loads, all
 * thumbnails fetched"), and `shown`, that frame (every thumbnail also decoded and laid out by the browser).
 */
function untilShown({ sel, count }) {
  return new Promise((resolve) => {
    const check = () => {
      const imgs = [...document.querySelectorAll(sel)];
      if (imgs.length >= count && imgs.every((i) => i.complete && i.naturalWidth > 0)) {
        const res = performance.getEntriesByType('resource');
        const thumbs = res.filter((e) => /\/thumbnail(\?|$)|\/t\/\d+\.webp$/.test(e.name));
        const end = (xs) => Math.round(Math.max(-1, ...xs.map((e) => e.responseEnd)));
        const start = (xs) => Math.round(Math.min(1e9, ...xs.map((e) => e.startTime)));
        // Where the time went, in ms after navigation start: the script loaded, GraphQL answered, thumbnails asked and
        // got. ttfb: the median of the thumbnails' request-to-first-byte (the server's answer time, queueing included).
        const ttfb =
          thumbs.map((e) => e.responseStart - e.requestStart).sort((a, b) => a - b)[Math.floor(thumbs.length / 2)] ??
          -1;
        const access = res
          .filter((e) => /\/thumbnail-access$/.test(e.name))
          .map((e) => `${Math.round(e.startTime)}-${Math.round(e.responseEnd)}`);
        // Every other request of the load (the page's later GraphQL calls, the favicon, styles), by path.
        const others = res
          .filter((e) => !thumbs.includes(e) && !/\/thumbnail-access$|\/graphql$|\.js$/.test(e.name))
          .map((e) => `${new URL(e.name).pathname} ${Math.round(e.startTime)}-${Math.round(e.responseEnd)}`);
        const marks = ['ui:run', 'ui:first-page', 'ui:tiles']
          .map((m) => performance.getEntriesByName(m)[0])
          .filter(Boolean);
        // How the thumbnails' span was spent: the mean time a request waited in the browser (asked → sent), the mean
        // time it was on the wire (sent → last byte), and how many were on the wire at once on average.
        const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : -1);
        const wire = thumbs.map((e) => e.responseEnd - e.requestStart);
        const span = end(thumbs) - start(thumbs);
        const flow = `queued ${Math.round(mean(thumbs.map((e) => e.requestStart - e.startTime)))}, on the wire ${mean(wire).toFixed(1)}, ${(wire.reduce((a, b) => a + b, 0) / Math.max(1, span)).toFixed(1)} at once`;
        const nav = performance.getEntriesByType('navigation')[0];
        const phases =
          `page ${Math.round(nav?.responseStart ?? -1)}-${Math.round(nav?.responseEnd ?? -1)}, script ${end(res.filter((e) => /\.js$/.test(e.name)))}, graphql ${res
            .filter((e) => /\/graphql$/.test(e.name))
            .map((e) => `${Math.round(e.startTime)}-${Math.round(e.responseEnd)}`)
            .join('/')}` +
          `${access.length ? `, access ${access.join('/')}` : ''}` +
          `${marks.map((m) => `, ${m.name.slice(3)} ${Math.round(m.startTime)}`).join('')}, thumbnails ${start(thumbs)}-${end(thumbs)} (${thumbs.length} requests, ttfb ${Math.round(ttfb)}, ${flow})${others.length ? `; also ${others.join(', ')}` : ''}`;
        resolve({
          ms: performance.now(),
          fetched: end(thumbs),
          thumbs: thumbs.length,
          phases,
          cached: thumbs.filter((e) => e.transferSize === 0).length,
        });
      } else requestAnimationFrame(check);
    };
    check();
  });
}

/**
 * CPU time (user + system, µs) of every process that takes part in a load, by pid: Chromium's (by name), PostgreSQL's
 * and the pids of `roles` (the services, the static server). The machine has two cores, so what a page costs the
 * browser and the service in CPU, more than its wall time, is what another page's load competes with.
 */
function cpuOf(roles) {
  const out = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const pid = Number(d);
    let role = roles.get(pid);
    if (!role) {
      let comm;
      try {
        comm = fs.readFileSync(`/proc/${d}/comm`, 'utf8').trim();
      } catch {
        continue;
      }
      role = /^chrom/.test(comm) ? 'browser' : comm === 'postgres' ? 'postgres' : undefined;
    }
    if (!role) continue;
    const us = cpuMicros(pid);
    if (Number.isFinite(us)) out.set(pid, { role, us });
  }
  return out;
}

/** CPU ms by role between two cpuOf snapshots (a process that started in between counts from zero). */
function cpuSpent(before, after) {
  const by = {};
  for (const [pid, { role, us }] of after) by[role] = (by[role] ?? 0) + (us - (before.get(pid)?.us ?? 0)) / 1000;
  return by;
}

/** In the page, when a load takes too long: what it has got so far (for the log). */
function stateOf({ sel }) {
  const imgs = [...document.querySelectorAll(sel)];
  const res = performance.getEntriesByType('resource');
  return {
    at: Math.round(performance.now()),
    readyState: document.readyState,
    visibility: document.visibilityState,
    imgs: imgs.length,
    complete: imgs.filter((i) => i.complete).length,
    decoded: imgs.filter((i) => i.naturalWidth > 0).length,
    resources: res.length,
    last: res.slice(-3).map((e) => `${e.name.replace(/\?.*$/, '')} ${Math.round(e.responseEnd)}`),
    body: document.body?.innerText.slice(0, 200),
  };
}

/** A Chromium CPU profile as text: busy time per 50 ms from its start, and the functions with the most self time. */
function profileLines(profile, untilMs) {
  const byId = new Map(profile.nodes.map((x) => [x.id, x]));
  const what = (cf) => {
    if (cf.functionName.startsWith('(')) return cf.functionName;
    const file = cf.url.replace(/^.*\//, '').replace(/\?.*$/, '') || '(inline)';
    return `${cf.functionName || '(anonymous)'} ${file}:${cf.lineNumber + 1}:${cf.columnNumber + 1}`;
  };
  const buckets = new Map();
  const self = new Map();
  let t = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += (profile.timeDeltas[i] ?? 0) / 1000;
    const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    if (t > untilMs + 50) break;
    const name = what(byId.get(profile.samples[i]).callFrame);
    if (name === '(idle)') continue;
    const b = Math.floor(t / 50);
    const m = buckets.get(b) ?? new Map();
    m.set(name, (m.get(name) ?? 0) + dt);
    buckets.set(b, m);
    self.set(name, (self.get(name) ?? 0) + dt);
  }
  const lines = [];
  for (const [b, m] of [...buckets.entries()].sort((x, y) => x[0] - y[0])) {
    const busy = [...m.values()].reduce((x, y) => x + y, 0);
    const top = [...m.entries()]
      .sort((x, y) => y[1] - x[1])
      .slice(0, 3)
      .map(([k, ms]) => `${k} ${ms.toFixed(1)}`);
    lines.push(`${String(b * 50).padStart(5)} ms: busy ${busy.toFixed(1).padStart(5)} ms  ${top.join(' | ')}`);
  }
  const total = [...self.values()].reduce((x, y) => x + y, 0);
  lines.push(`self time, ${total.toFixed(0)} ms busy in all:`);
  for (const [k, ms] of [...self.entries()].sort((x, y) => y[1] - x[1]).slice(0, 20))
    lines.push(`${ms.toFixed(1).padStart(7)} ms  ${k}`);
  return lines;
}

async function run(args) {
  const { chromium } = require('playwright-core');
  // 11 by default: one load here takes anything from 0.25 to 1 s, the static page's as much as the service's (two
  // cores shared by Chromium's processes, the servers and PostgreSQL), and the median of 5 per-round ratios moved
  // between 1.1 and 1.5 from one run to the next of the same builds.
  const rounds = args.rounds ?? (args.smoke ? 1 : 11);
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
    if (args.opts.dist)
      other = await spawnService({
        dataDir: stack.dataDir,
        databaseUrl: stack.databaseUrl,
        main: path.resolve(String(args.opts.dist), 'src', 'main.js'),
      });
    const svcUrl = (other ?? stack.svc).url;
    if (args.opts.also)
      also = await spawnService({
        dataDir: stack.dataDir,
        databaseUrl: stack.databaseUrl,
        main: path.resolve(String(args.opts.also), 'src', 'main.js'),
      });
    // A build measured beside this one must serve its own page: main's build before 2026-11-23 looked for dist/ui by
    // walking up from its directory, so a copy inside a checkout (`.ab-main`) served that checkout's dist/ui.
    for (const [dist, svc] of [
      [args.opts.dist, other],
      [args.opts.also, also],
    ]) {
      if (!svc) continue;
      const want = JSON.parse(fs.readFileSync(path.resolve(String(dist), 'ui', 'manifest.json'), 'utf8')).script;
      const html = await (await fetch(`${svc.url}/ui`)).text();
      if (!html.includes(want))
        throw new Error(
          `${dist}: its service does not serve its own page (${want}); copy the build to a directory named dist (e.g. .ab-x/dist)`,
        );
    }
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-background-networking',
        '--disable-gpu',
        '--disable-component-update',
        '--no-first-run',
      ],
    });
    const targets = {
      service: { url: `${svcUrl}/ui?pageSize=${TILES}`, sel: '.tile img' },
      baseline: { url: `${baseline.url}/page`, sel: 'img.thumb' },
      // The static page that must ask for its list first (one round trip before the first image, no application).
      listed: { url: `${baseline.url}/listed`, sel: 'img.thumb' },
      ...(also ? { also: { url: `${also.url}/ui?pageSize=${TILES}`, sel: '.tile img' } } : {}),
    };
    const newContext = async () => {
      const context = await browser.newContext({ viewport: { width: 1360, height: 860 } });
      await context.addInitScript((key) => sessionStorage.setItem('assetBrowser.apiKey', key), KEY);
      return context;
    };
    // A load that has not shown every thumbnail after this long is reported with what it has got, not waited on.
    const LIMIT_MS = 60_000;
    const shown = async (context, t, name) => {
      const page = context.pages()[0] ?? (await context.newPage());
      if (!page.__errors) {
        const errors = (page.__errors = []);
        page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
        page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
        page.on('requestfailed', (r) =>
          errors.push(`failed: ${r.url().replace(/\?.*$/, '')} ${r.failure()?.errorText}`),
        );
      }
      await page.goto(t.url, { waitUntil: 'commit', timeout: LIMIT_MS });
      let timer;
      const late = new Promise((resolve) => (timer = setTimeout(() => resolve('late'), LIMIT_MS)));
      const got = await Promise.race([page.evaluate(untilShown, { sel: t.sel, count: TILES }), late]);
      clearTimeout(timer);
      if (got === 'late') {
        const state = await Promise.race([
          page.evaluate(stateOf, { sel: t.sel }),
          sleep(5000).then(() => 'the page does not answer'),
        ]);
        throw new Error(
          `${name}: not every thumbnail shown after ${LIMIT_MS} ms: ${JSON.stringify(state)}; ${page.__errors.slice(0, 10).join('; ') || 'no page errors'}`,
        );
      }
      return got;
    };
    // Warm-up (the browser's own first start, the service's first GraphQL request), not counted.
    for (const [name, t] of Object.entries(targets)) {
      const c = await newContext();
      await shown(c, t, name);
      await c.close();
    }
    const blank = () => ({ fetched: [], shown: [], reloadFetched: [], reload: [], phases: [], cpu: [] });
    // Who is who in the CPU figures: the pages' servers (PostgreSQL and Chromium are known by name).
    const roles = new Map([
      [(other ?? stack.svc).pid, 'service'],
      [baseline.pid, 'static server'],
      ...(also ? [[also.pid, 'service']] : []),
      [process.pid, 'driver'],
    ]);
    const res = Object.fromEntries(Object.keys(targets).map((k) => [k, blank()]));
    const cached = [];
    const names = Object.keys(targets);
    const label = {
      service: 'this build',
      baseline: 'static page',
      listed: 'static page, list first',
      also: String(args.opts.also),
    };
    for (let r = 0; r < rounds; r++) {
      // Interleaved, the order turned each round, so no target always follows the browser's work on another.
      for (let i = 0; i < names.length; i++) {
        const name = names[(i + r) % names.length];
        const c = await newContext();
        const before = cpuOf(roles);
        const first = await shown(c, targets[name], name);
        first.cpu = cpuSpent(before, cpuOf(roles));
        const again = await shown(c, targets[name], name);
        await c.close();
        if (first.thumbs < TILES)
          throw new Error(`${name}: only ${first.thumbs} thumbnail requests in the page's Resource Timing`);
        res[name].fetched.push(first.fetched);
        res[name].shown.push(first.ms);
        res[name].reloadFetched.push(again.fetched);
        res[name].reload.push(again.ms);
        res[name].phases.push(first.phases);
        res[name].cpu.push(first.cpu);
        if (name === 'service') cached.push(again.cached);
      }
      log(
        `  round ${r + 1}, first load, fetched / shown (ms after navigation): ` +
          names.map((n) => `${label[n]} ${res[n].fetched[r]} / ${res[n].shown[r].toFixed(0)}`).join('; ') +
          `\n    reload: ` +
          names
            .map(
              (n) =>
                `${label[n]} ${res[n].reloadFetched[r] < 0 ? '(memory cache)' : res[n].reloadFetched[r]} / ${res[n].reload[r].toFixed(0)}`,
            )
            .join('; ') +
          ` (this build: ${cached[r]} thumbnails from the cache)`,
      );
      for (const n of names)
        log(
          `    ${label[n]}, first load: ${res[n].phases[r]}; CPU ms ${Object.entries(res[n].cpu[r])
            .filter(([, ms]) => ms > 0)
            .map(([k, ms]) => `${k} ${Math.round(ms)}`)
            .join(', ')}`,
        );
    }
    // static/service per round, then the median (1 = as fast as the static page)
    const ratio = (n, k) => median(res[n][k].map((s, i) => res.baseline[k][i] / s));
    const summary = (n) => ({
      fetched_ms_median: Math.round(median(res[n].fetched)),
      fetched_ms: res[n].fetched,
      shown_ms_median: Math.round(median(res[n].shown)),
      shown_ms: res[n].shown.map(Math.round),
      // -1: no thumbnail in the reload's Resource Timing (all from the renderer's memory cache)
      reload_fetched_ms_median: Math.round(median(res[n].reloadFetched)),
      reload_shown_ms_median: Math.round(median(res[n].reload)),
      // CPU of a first load, by process (medians of the rounds): the browser, the page's server, PostgreSQL
      cpu_ms_median: Object.fromEntries(
        [...new Set(res[n].cpu.flatMap((c) => Object.keys(c)))].map((k) => [
          k,
          Math.round(median(res[n].cpu.map((c) => c[k] ?? 0))),
        ]),
      ),
      ...(n === 'baseline'
        ? {}
        : {
            fetched_ratio: r3(ratio(n, 'fetched')),
            shown_ratio: r3(ratio(n, 'shown')),
            reload_shown_ratio: r3(ratio(n, 'reload')),
          }),
    });
    // --prof: one more first load of this build's page under Chromium's JavaScript sampling profiler (CDP): where the
    // renderer's main thread spends the time from navigation to the last thumbnail shown, per 50 ms and per function.
    if (args.opts.prof) {
      const c = await newContext();
      const page = await c.newPage();
      const cdp = await c.newCDPSession(page);
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 100 });
      await cdp.send('Profiler.start');
      const got = await shown(c, targets.service, 'service');
      const { profile } = await cdp.send('Profiler.stop');
      await c.close();
      log(`  profile of one first load (shown at ${got.ms.toFixed(0)} ms; ${got.phases}):`);
      for (const line of profileLines(profile, got.ms)) log(`    ${line}`);
    }
    // --trace: one more first load of each page under a Chromium trace: where the renderer's main thread and the
    // other threads spend the time from navigation to the last thumbnail shown, by trace event (style, layout, paint,
    // script, image decode...). Self time per top-level event name on each thread, the largest first.
    if (args.opts.trace) {
      for (const [name, t] of Object.entries(targets)) {
        const c = await newContext();
        const page = await c.newPage();
        await browser.startTracing(page, {
          categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink', 'v8', 'toplevel'],
        });
        const got = await shown(c, t, name);
        const raw = (await browser.stopTracing()).toString('utf8');
        // GRID_TRACE_DIR: each page's raw trace kept too (chrome://tracing or Perfetto opens it).
        if (process.env.GRID_TRACE_DIR) fs.writeFileSync(path.join(process.env.GRID_TRACE_DIR, `${name}.json`), raw);
        const trace = JSON.parse(raw);
        await c.close();
        log(`  trace of one first load, ${label[name] ?? name} (shown at ${got.ms.toFixed(0)} ms):`);
        for (const line of traceLines(trace)) log(`    ${line}`);
      }
    }
    printResult('grid', {
      build: String(args.opts.dist ?? 'dist'),
      tiles: TILES,
      thumbnail_bytes_mean: Math.round(thumbBytes),
      rounds,
      service: summary('service'),
      static_page: summary('baseline'),
      // its fetched_ratio: static page / list-first page, what the one round trip costs here
      static_list_first: summary('listed'),
      // this build's time / the list-first static page's, per round, then the median
      fetched_vs_list_first: r3(median(res.service.fetched.map((x, i) => x / res.listed.fetched[i]))),
      ...(also
        ? {
            also: String(args.opts.also),
            also_build: summary('also'),
            // this build's time / the other build's, per round, then the median (< 1: this build is faster)
            fetched_vs_also: r3(median(res.service.fetched.map((x, i) => x / res.also.fetched[i]))),
            shown_vs_also: r3(median(res.service.shown.map((x, i) => x / res.also.shown[i]))),
          }
        : {}),
      target_ms: 1000,
      // the issue's words: "loads (all thumbnails fetched)"
      met_fetched: median(res.service.fetched) < 1000,
      met_shown: median(res.service.shown) < 1000,
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
