'use strict';
// The service's resident memory (RSS, /proc, sampled every 50 ms) on the disk store: idle once ready, then through
// a multipart upload and a tus upload (64 MiB PATCHes) of BENCH_MEMORY_MIB MiB each (default 1024), each started
// once the previous blob is removed (deleteAndSettle). `--also=<dist>` runs another build (e.g. `.ab-main`) in the
// same rounds, on its own database, the order turning each round, and prints this build's figures over its.
//   npm run bench -- memory [--rounds 3] [--also=.ab-main]
// What the figures are made of (BENCHMARKS.md, "Fifth stop: the service's resident memory"): the code and heap
// of what the process loads at start, then V8's young generation, which any long upload grows to its maximum.
const path = require('node:path');
const {
  MiB,
  startStack,
  uploadMultipart,
  memoryOf,
  median,
  r2,
  r3,
  log,
  printResult,
  sleep,
} = require('../lib/common.cjs');
const { uploadTus, deleteAndSettle } = require('../lib/tus-client.cjs');

/** One fresh database and service of `main`: RSS idle, peak during the multipart upload, then during the tus upload. */
async function measure(main, size, label) {
  const stack = await startStack({
    prefix: `memory-${label}`,
    main,
    env: { CONTENT_GC_GRACE_SECONDS: '0', MAX_UPLOAD_BYTES: String(size * 2) },
  });
  const { svc, dataDir } = stack;
  try {
    await sleep(2000);
    const idle = memoryOf(svc.pid).rss;
    let peak = 0;
    const timer = setInterval(() => (peak = Math.max(peak, memoryOf(svc.pid).rss)), 50);
    try {
      peak = memoryOf(svc.pid).rss;
      const m = await uploadMultipart(svc.url, size);
      if (m.status !== 201) throw new Error(`multipart upload answered ${m.status}`);
      await deleteAndSettle(svc.url, dataDir, m.body.id);
      const multipart = peak;
      peak = memoryOf(svc.pid).rss;
      const t = await uploadTus(svc.url, size, 64 * MiB);
      await deleteAndSettle(svc.url, dataDir, t.assetId);
      return { idle, multipart, tus: peak };
    } finally {
      clearInterval(timer);
    }
  } finally {
    await stack.stop();
  }
}

async function run(args) {
  const size = (args.smoke ? 16 : Number(process.env.BENCH_MEMORY_MIB ?? 1024)) * MiB;
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const builds = [['this', undefined]];
  if (args.opts.also) builds.push(['also', path.resolve(String(args.opts.also), 'src', 'main.js')]);
  const res = Object.fromEntries(builds.map(([k]) => [k, { idle: [], multipart: [], tus: [] }]));
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 ? [...builds].reverse() : builds;
    for (const [k, main] of order) {
      const m = await measure(main, size, k);
      for (const f of ['idle', 'multipart', 'tus']) res[k][f].push(m[f] / 1e6);
      log(
        `  round ${i + 1} ${k === 'this' ? 'this build' : args.opts.also}: RSS idle ${(m.idle / 1e6).toFixed(0)} MB, peak during multipart ${(m.multipart / 1e6).toFixed(0)} MB, during tus ${(m.tus / 1e6).toFixed(0)} MB`,
      );
    }
  }
  const summary = (k) => ({
    idle_mb: r2(median(res[k].idle)),
    multipart_peak_mb: r2(median(res[k].multipart)),
    tus_peak_mb: r2(median(res[k].tus)),
  });
  const ratio = (f) => r3(median(res.this[f].map((x, i) => x / res.also[f][i])));
  printResult('memory', {
    size_mib: size / MiB,
    rounds,
    this_build: summary('this'),
    ...(args.opts.also
      ? {
          also: String(args.opts.also),
          also_build: summary('also'),
          this_over_also: { idle: ratio('idle'), multipart: ratio('multipart'), tus: ratio('tus') },
        }
      : {}),
  });
}

module.exports = { run };
