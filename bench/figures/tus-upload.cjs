'use strict';
// Resumable uploads: a tus upload of N MiB in 64 MiB PATCHes (POST /api/uploads, then PATCH /api/uploads/{id})
// against the multipart upload (POST /api/assets) of the same size, interleaved A B A B in the same run; plus the
// service's peak RSS (VmHWM) during the tus uploads, and the service's CPU time per GiB for each method. Size:
// BENCH_TUS_MIB (default 256; BENCHMARKS.md's figure uses BENCH_TUS_MIB=4096), PATCH size: BENCH_TUS_PATCH_MIB
// (default 64). `patch_tail_ms`: how long each PATCH's client waits from its last byte sent to the answer (the
// service's per-PATCH cost: the fsync of what the background syncs had not yet written, the statements, the answer).
// Each upload starts once the blob of the one before it is removed and the disk synced (deleteAndSettle;
// BENCH_TUS_SETTLE=0 deletes and goes on at once, as before 2026-11-23, when the previous round's removal ran inside
// the next upload).
const {
  MiB,
  percentile,
  startStack,
  uploadMultipart,
  memoryOf,
  resetPeak,
  cpuMicros,
  median,
  r2,
  r3,
  mbps,
  log,
  printResult,
} = require('../lib/common.cjs');
const { uploadTus, deleteAndSettle } = require('../lib/tus-client.cjs');

async function run(args) {
  const size = (args.smoke ? 8 : Number(process.env.BENCH_TUS_MIB ?? 256)) * MiB;
  const patchSize = (args.smoke ? 2 : Number(process.env.BENCH_TUS_PATCH_MIB ?? 64)) * MiB;
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const stack = await startStack({
    prefix: 'tus',
    env: { CONTENT_GC_GRACE_SECONDS: '0', MAX_UPLOAD_BYTES: String(size * 2) },
  });
  try {
    const tus = [];
    const multi = [];
    const ratios = [];
    const cpuTus = [];
    const cpuMulti = [];
    const tails = [];
    let peakReset = false;
    let peakHwm = 0;
    const settle = process.env.BENCH_TUS_SETTLE !== '0';
    const cleanup = (id) => deleteAndSettle(stack.svc.url, stack.dataDir, id);
    for (let i = 0; i < rounds; i++) {
      const c0 = cpuMicros(stack.svc.pid);
      const m = await uploadMultipart(stack.svc.url, size);
      const c1 = cpuMicros(stack.svc.pid);
      if (m.status !== 201) throw new Error(`multipart upload answered ${m.status}: ${JSON.stringify(m.body)}`);
      await cleanup(m.body.id);
      peakReset = resetPeak(stack.svc.pid);
      const c2 = cpuMicros(stack.svc.pid);
      const t = await uploadTus(stack.svc.url, size, patchSize);
      // The last PATCH's wait includes making the asset (as multipart's includes it): not a per-PATCH cost.
      tails.push(...t.tails.slice(0, -1));
      cpuTus.push((cpuMicros(stack.svc.pid) - c2) / 1e6 / (size / 1024 / MiB));
      cpuMulti.push((c1 - c0) / 1e6 / (size / 1024 / MiB));
      peakHwm = Math.max(peakHwm, memoryOf(stack.svc.pid).hwm);
      await cleanup(t.assetId);
      const a = mbps(size, t.seconds);
      const b = mbps(size, m.seconds);
      tus.push(a);
      multi.push(b);
      ratios.push(a / b);
      log(
        `  ${size / MiB} MiB round ${i + 1}: multipart ${b.toFixed(0)} MB/s, tus ${a.toFixed(0)} MB/s (${patchSize / MiB} MiB PATCHes), ratio ${(a / b).toFixed(3)}; PATCH tail p50 ${(median(t.tails.slice(0, -1)) * 1000).toFixed(1)} ms; ` +
          `service CPU s/GiB: multipart ${cpuMulti[i].toFixed(2)}, tus ${cpuTus[i].toFixed(2)}`,
      );
    }
    const peakMb = peakHwm / 1e6;
    printResult('tus-upload', {
      size_mib: size / MiB,
      patch_mib: patchSize / MiB,
      rounds,
      tus_mbps_median: r2(median(tus)),
      multipart_mbps_median: r2(median(multi)),
      ratio_median: r3(median(ratios)),
      ratios: ratios.map(r3),
      patch_tail_ms: {
        p50: r2(median(tails) * 1000),
        p90: r2(percentile(tails, 90) * 1000),
        max: r2(Math.max(...tails) * 1000),
      },
      service_cpu_s_per_gib: { multipart: r2(median(cpuMulti)), tus: r2(median(cpuTus)) },
      target: 0.85,
      met: median(ratios) >= 0.85,
      peak_rss_mb: r2(peakMb),
      peak_rss_during: `tus uploads (VmHWM of the service process${peakReset ? ', reset before each' : ', since start'})`,
      rss_target_mb: 300,
      rss_met: peakMb < 300,
      settled_between_uploads: settle,
    });
  } finally {
    await stack.stop();
  }
}

module.exports = { run };
