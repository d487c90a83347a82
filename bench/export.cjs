'use strict';
// Bulk export: POST /api/assets/export of N MiB of assets (stored ZIP written into the disk store, fsynced) until its
// task completes, against `cat` of the same blob files into one file on the same disk followed by fsync, interleaved
// A B A B. Size: BENCH_EXPORT_MIB (default 256; BENCHMARKS.md's figure uses BENCH_EXPORT_MIB=4096), split over
// BENCH_EXPORT_ASSETS assets (default 8).
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { MiB, startStack, requestJson, median, r2, r3, mbps, now, sleep, log, printResult } = require('./lib/common.cjs');
const { uploadTus } = require('./lib/tus-client.cjs');

async function exportOnce(baseUrl, ids) {
  const t0 = now();
  const started = await requestJson(baseUrl, 'POST', '/api/assets/export', { asset_ids: ids, naming_strategy: 'asset_id' });
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
    const bytes = each * count;
    const exp = [];
    const cat = [];
    const ratios = [];
    for (let i = 0; i < rounds; i++) {
      const c = catOnce(stack.dataDir, files);
      const e = await exportOnce(stack.svc.url, ids);
      const a = mbps(bytes, e.seconds);
      const b = mbps(bytes, c.seconds);
      exp.push(a);
      cat.push(b);
      ratios.push(a / b);
      log(`  ${bytes / MiB} MiB in ${count} assets, round ${i + 1}: cat+fsync ${b.toFixed(0)} MB/s, export ${a.toFixed(0)} MB/s, ratio ${(a / b).toFixed(3)}`);
    }
    printResult('export', {
      size_mib: r2(bytes / MiB),
      assets: count,
      rounds,
      export_mbps_median: r2(median(exp)),
      cat_fsync_mbps_median: r2(median(cat)),
      ratio_median: r3(median(ratios)),
      ratios: ratios.map(r3),
      target: 0.8,
      met: median(ratios) >= 0.8,
    });
  } finally {
    await stack.stop();
  }
}

module.exports = { run };
