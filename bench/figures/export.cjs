'use strict';
// Bulk export: POST /api/assets/export of N MiB of assets (stored ZIP written into the disk store, fsynced) until its
// task completes, against `cat` of the same blob files into one file on the same disk followed by fsync, interleaved
// A B A B. Size: BENCH_EXPORT_MIB (default 256; BENCHMARKS.md's figure uses BENCH_EXPORT_MIB=4096), split over
// BENCH_EXPORT_ASSETS assets (default 8). Peak RSS of the service process during the exports (VmHWM, reset before
// each export where the kernel allows it) is reported too.
// BENCH_EXPORT_BUILDS=dist,.ab-old (comma-separated dist folders, each under a checkout so node_modules resolves)
// exports the same blobs with each build in turn, same run, same database and disk: each round runs cat and then every
// build (a fresh service process each, on the data of the first), and each build gets its own ratio to cat.
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const {
  MiB,
  startStack,
  spawnService,
  requestJson,
  memoryOf,
  resetPeak,
  median,
  r2,
  r3,
  mbps,
  now,
  sleep,
  log,
  printResult,
} = require('../lib/common.cjs');
const { uploadTus } = require('../lib/tus-client.cjs');

async function exportOnce(baseUrl, ids) {
  const t0 = now();
  const started = await requestJson(baseUrl, 'POST', '/api/assets/export', {
    asset_ids: ids,
    naming_strategy: 'asset_id',
  });
  if (started.status !== 202) throw new Error(`export answered ${started.status}: ${JSON.stringify(started.body)}`);
  for (;;) {
    const t = await requestJson(baseUrl, 'GET', `/api/tasks/${started.body.task_id}`);
    if (t.body.status === 'completed') return { seconds: now() - t0, result: t.body.result };
    if (t.body.status === 'failed') throw new Error(`export failed: ${t.body.error_message}`);
    await sleep(20);
  }
}

/** `cat` of the blobs into one file, then fsync of that file: the disk's sequential copy speed. */
function catOnce(dir, files) {
  const out = path.join(dir, 'cat-baseline.bin');
  const t0 = now();
  const r = spawnSync('sh', ['-c', 'out="$1"; shift; cat "$@" > "$out"', 'sh', out, ...files], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cat failed: ${r.stderr}`);
  const fd = fs.openSync(out, 'r+');
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  const seconds = now() - t0;
  fs.rmSync(out, { force: true });
  return { seconds };
}

async function run(args) {
  const total = (args.smoke ? 8 : Number(process.env.BENCH_EXPORT_MIB ?? 256)) * MiB;
  const count = args.smoke ? 4 : Number(process.env.BENCH_EXPORT_ASSETS ?? 8);
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const each = Math.floor(total / count);
  const stack = await startStack({ prefix: 'export', env: { MAX_UPLOAD_BYTES: String(each * 2) } });
  try {
    const ids = [];
    const files = [];
    for (let i = 0; i < count; i++) {
      // Through tus (64 MiB PATCHes): each asset is new content, and the setup is not timed.
      const { assetId } = await uploadTus(stack.svc.url, each, 64 * MiB);
      const asset = await requestJson(stack.svc.url, 'GET', `/api/assets/${assetId}`);
      ids.push(assetId);
      const hex = asset.body.asset_hash.slice('blake3:'.length);
      files.push(path.join(stack.dataDir, 'blobs', hex.slice(0, 2), hex.slice(2, 4), hex));
    }
    // A fresh service process exports this first (untimed), so job workers that start after /readyz are running.
    const warmUp = [(await uploadTus(stack.svc.url, 1024, 64 * MiB)).assetId];
    const bytes = each * count;
    const builds = (process.env.BENCH_EXPORT_BUILDS ?? '').split(',').filter(Boolean);
    const archives = path.join(stack.dataDir, 'blobs', '.objects', 'exports');
    /** One export by the service at `svc`; its archive is removed afterwards (4 GiB a round adds up). */
    const exportWith = async (svc) => {
      const reset = resetPeak(svc.pid);
      const e = await exportOnce(svc.url, ids);
      const peak = memoryOf(svc.pid).hwm;
      fs.rmSync(path.join(archives, e.result.export_name), { force: true });
      return { mbps: mbps(bytes, e.seconds), peakRss: peak, peakIsOfExport: reset };
    };
    const cat = [];
    const runs = new Map(
      (builds.length ? builds : ['dist']).map((b) => [b, { mbps: [], ratios: [], peakRss: [], peakIsOfExport: true }]),
    );
    if (builds.length) await stack.svc.stop();
    for (let i = 0; i < rounds; i++) {
      const c = catOnce(stack.dataDir, files);
      const b = mbps(bytes, c.seconds);
      cat.push(b);
      const line = [`cat+fsync ${b.toFixed(0)} MB/s`];
      // Builds take turns in the order A B, then B A, so none always runs right after cat.
      for (const [build, r] of i % 2 ? [...runs].reverse() : [...runs]) {
        const svc = builds.length
          ? await spawnService({
              dataDir: stack.dataDir,
              databaseUrl: stack.databaseUrl,
              env: { MAX_UPLOAD_BYTES: String(each * 2) },
              main: path.resolve(build, 'src', 'main.js'),
            })
          : stack.svc;
        try {
          if (builds.length) await exportOnce(svc.url, warmUp);
          const e = await exportWith(svc);
          r.mbps.push(e.mbps);
          r.ratios.push(e.mbps / b);
          r.peakRss.push(e.peakRss);
          r.peakIsOfExport &&= e.peakIsOfExport;
          line.push(
            `${build} ${e.mbps.toFixed(0)} MB/s (ratio ${(e.mbps / b).toFixed(3)}, peak RSS ${(e.peakRss / MiB).toFixed(0)} MiB)`,
          );
        } finally {
          if (builds.length) await svc.stop();
        }
      }
      log(`  ${bytes / MiB} MiB in ${count} assets, round ${i + 1}: ${line.join(', ')}`);
    }
    const summary = (r) => ({
      export_mbps_median: r2(median(r.mbps)),
      ratio_median: r3(median(r.ratios)),
      ratios: r.ratios.map(r3),
      peak_rss_mib_max: r2(Math.max(...r.peakRss) / MiB),
      // false: the kernel did not let the peak be reset, so it may include the setup's uploads.
      peak_rss_is_of_export: r.peakIsOfExport,
    });
    const first = runs.values().next().value;
    printResult('export', {
      size_mib: r2(bytes / MiB),
      assets: count,
      rounds,
      cat_fsync_mbps_median: r2(median(cat)),
      ...summary(first),
      ...(builds.length ? { builds: Object.fromEntries([...runs].map(([b, r]) => [b, summary(r)])) } : {}),
      target: 0.8,
      met: median(first.ratios) >= 0.8,
    });
  } finally {
    await stack.stop();
  }
}

module.exports = { run };
