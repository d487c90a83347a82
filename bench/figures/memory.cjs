'use strict';
// The service's resident memory (RSS, /proc) on the disk store through the sequence issue 32 bounds: idle once
// ready; after `npm run bench -- metadata`'s load (64 connections of GET /api/assets/{id}, then of HEAD
// /api/assets/hash/{hash}, BENCH_MEMORY_LOAD_S seconds each, default 30); then during and after a multipart upload
// of BENCH_MEMORY_MIB MiB (default 4096) and a tus upload of the same size (64 MiB PATCHes), each started once the
// previous blob is removed (deleteAndSettle). After each phase it prints RSS and what V8 says it holds (the heap's
// spaces and external memory, from /metrics), so a growth names its owner. Target: ≤ 300 MB after every phase.
// This build runs with its start path's node flags (V8's heap bounds, bench/lib/common.cjs SERVICE_NODE_FLAGS).
// `--also=<dist>` runs another build (e.g. one from before those flags) in the same rounds, on its own database, the
// order turning each round, with `--also-flags` (default none: node's own heap sizing), and prints this build's
// figures over its.
//   npm run bench -- memory [--rounds 1] [--also=<dist>]
const path = require('node:path');
const {
  MiB,
  KEY,
  SERVICE_NODE_FLAGS,
  startStack,
  uploadMultipart,
  cannon,
  memoryOf,
  median,
  r2,
  r3,
  log,
  printResult,
  sleep,
} = require('../lib/common.cjs');
const { uploadTus, deleteAndSettle } = require('../lib/tus-client.cjs');
const { teachAutocannonHead, skipHeadBodies } = require('./metadata.cjs');

const TARGET_MB = 300;
const PHASES = ['idle', 'after_get', 'after_head', 'multipart_peak', 'after_multipart', 'tus_peak', 'after_tus'];

/** V8's own account (MB): old space, young generation, code and external (Buffers) from prom-client's gauges. */
async function heapOf(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const gauge = (name, space) => {
    const re = new RegExp(`^${name}\\{space="${space}"\\} (\\S+)`, 'm');
    return Number((re.exec(text) ?? [])[1] ?? NaN) / 1e6;
  };
  const plain = (name) => Number((new RegExp(`^${name} (\\S+)`, 'm').exec(text) ?? [])[1] ?? NaN) / 1e6;
  return {
    old: r2(gauge('nodejs_heap_space_size_total_bytes', 'old')),
    new: r2(gauge('nodejs_heap_space_size_total_bytes', 'new')),
    code: r2(gauge('nodejs_heap_space_size_total_bytes', 'code')),
    heap_used: r2(plain('nodejs_heap_size_used_bytes')),
    external: r2(plain('nodejs_external_memory_bytes')),
  };
}

/** 64 connections cycling through `paths` for `seconds`; fails on any non-2xx. */
async function load(url, method, paths, seconds) {
  let i = 0;
  const request = { method, setupRequest: (r) => ({ ...r, path: paths[i++ % paths.length] }) };
  const r = await cannon({ url, method, headers: { 'x-api-key': KEY }, requests: [request], duration: seconds });
  if (!r.ok) throw new Error(`${method} load: non-2xx or errors ${JSON.stringify(r)}`);
  return r.rps;
}

/** The peak RSS of `pid` while `fn` runs (sampled every 50 ms) and fn's result. */
async function peakDuring(pid, fn) {
  let peak = memoryOf(pid).rss;
  const timer = setInterval(() => (peak = Math.max(peak, memoryOf(pid).rss)), 50);
  try {
    const result = await fn();
    return { peak: Math.max(peak, memoryOf(pid).rss), result };
  } finally {
    clearInterval(timer);
  }
}

/** One fresh database and service of `main` through the whole sequence; RSS (bytes) after each phase. */
async function measure(main, startFlags, { size, seconds, assets }, label) {
  const stack = await startStack({
    prefix: `memory-${label}`,
    main,
    startFlags,
    env: { CONTENT_GC_GRACE_SECONDS: '0', MAX_UPLOAD_BYTES: String(size * 2) },
  });
  const { svc, dataDir } = stack;
  const rss = {};
  const heap = {};
  const note = async (phase, value = memoryOf(svc.pid).rss) => {
    rss[phase] = value;
    heap[phase] = await heapOf(svc.url);
    log(`    ${label} ${phase}: RSS ${(value / 1e6).toFixed(0)} MB; V8 (MB) ${JSON.stringify(heap[phase])}`);
  };
  try {
    const ids = [];
    const hashes = [];
    for (let i = 0; i < assets; i++) {
      const r = await uploadMultipart(svc.url, 1024 + i, { fileName: `m${i}.bin`, tags: 'bench,metadata' });
      if (r.status !== 201) throw new Error(`seed upload answered ${r.status}`);
      ids.push(r.body.id);
      hashes.push(r.body.asset_hash);
    }
    await sleep(1000);
    await note('idle');
    await load(
      svc.url,
      'GET',
      ids.map((id) => `/api/assets/${id}`),
      seconds,
    );
    await note('after_get');
    teachAutocannonHead();
    skipHeadBodies(true);
    try {
      await load(
        svc.url,
        'HEAD',
        hashes.map((h) => `/api/assets/hash/${h}`),
        seconds,
      );
    } finally {
      skipHeadBodies(false);
    }
    await note('after_head');
    const m = await peakDuring(svc.pid, () => uploadMultipart(svc.url, size));
    if (m.result.status !== 201) throw new Error(`multipart upload answered ${m.result.status}`);
    await deleteAndSettle(svc.url, dataDir, m.result.body.id);
    await note('multipart_peak', m.peak);
    await note('after_multipart');
    const t = await peakDuring(svc.pid, () => uploadTus(svc.url, size, 64 * MiB));
    await deleteAndSettle(svc.url, dataDir, t.result.assetId);
    await note('tus_peak', t.peak);
    await note('after_tus');
    return { rss, heap };
  } finally {
    await stack.stop();
  }
}

async function run(args) {
  const size = (args.smoke ? 16 : Number(process.env.BENCH_MEMORY_MIB ?? 4096)) * MiB;
  const seconds = args.smoke ? 1 : Number(process.env.BENCH_MEMORY_LOAD_S ?? 30);
  const rounds = args.rounds ?? 1;
  const opts = { size, seconds, assets: args.smoke ? 5 : 50 };
  const alsoFlags = String(args.opts['also-flags'] ?? '')
    .split(/\s+/)
    .filter(Boolean);
  const builds = [['this', undefined, SERVICE_NODE_FLAGS]];
  if (args.opts.also) builds.push(['also', path.resolve(String(args.opts.also), 'src', 'main.js'), alsoFlags]);
  const res = Object.fromEntries(builds.map(([k]) => [k, Object.fromEntries(PHASES.map((p) => [p, []]))]));
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 ? [...builds].reverse() : builds;
    for (const [k, main, flags] of order) {
      log(
        `  round ${i + 1} ${k === 'this' ? 'this build' : args.opts.also} (node ${flags.join(' ') || 'without flags'}):`,
      );
      const m = await measure(main, flags, opts, k);
      for (const p of PHASES) res[k][p].push(m.rss[p] / 1e6);
    }
  }
  const summary = (k) => Object.fromEntries(PHASES.map((p) => [`${p}_mb`, r2(median(res[k][p]))]));
  const worst = (k) => Math.max(...PHASES.filter((p) => !p.endsWith('_peak')).flatMap((p) => res[k][p]));
  const ratio = (p) => r3(median(res.this[p].map((x, i) => x / res.also[p][i])));
  printResult('memory', {
    size_mib: size / MiB,
    load_seconds: seconds,
    rounds,
    node_flags: SERVICE_NODE_FLAGS.join(' '),
    this_build: summary('this'),
    target_mb: TARGET_MB,
    met: worst('this') <= TARGET_MB,
    ...(args.opts.also
      ? {
          also: String(args.opts.also),
          also_node_flags: alsoFlags.join(' '),
          also_build: summary('also'),
          this_over_also: Object.fromEntries(PHASES.map((p) => [p, ratio(p)])),
        }
      : {}),
  });
}

module.exports = { run };
