'use strict';
// Figure 1: multipart upload ingest over loopback (hash + write + fsync + commit) against `dd bs=1M conv=fsync` of
// the same size on the same disk, interleaved A B A B; plus the service's peak RSS (VmHWM) during the largest upload.
// --sizes=<MiB>[,<MiB>…] replaces the default 1 GiB and 4 GiB, e.g. a 20 GiB checkpoint: `npm run bench -- upload
// --rounds 1 --sizes=20480` (dd's file and the upload each need the space once: ~45 GB free for that one).
const {
  MiB,
  GiB,
  startStack,
  uploadMultipart,
  requestJson,
  ddWrite,
  memoryOf,
  resetPeak,
  median,
  r2,
  r3,
  mbps,
  log,
  printResult,
} = require('../lib/common.cjs');

async function run(args) {
  const sizes = args.smoke
    ? [4 * MiB]
    : args.opts.sizes
      ? String(args.opts.sizes)
          .split(',')
          .map((m) => Number(m) * MiB)
      : [GiB, 4 * GiB];
  if (sizes.some((s) => !Number.isSafeInteger(s) || s <= 0)) throw new Error(`--sizes: MiB, comma-separated`);
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const stack = await startStack({ prefix: 'upload', env: { CONTENT_GC_GRACE_SECONDS: '0' } });
  const figures = [];
  try {
    let peakReset = false;
    for (const size of sizes) {
      if (size === sizes[sizes.length - 1]) peakReset = resetPeak(stack.svc.pid);
      const ratios = [];
      const up = [];
      const dd = [];
      for (let i = 0; i < rounds; i++) {
        const base = ddWrite(stack.dataDir, size);
        const res = await uploadMultipart(stack.svc.url, size);
        if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${JSON.stringify(res.body)}`);
        if (res.body.size !== size) throw new Error(`upload stored ${res.body.size} bytes, sent ${size}`);
        const got = mbps(size, res.seconds);
        up.push(got);
        dd.push(base.mbps);
        ratios.push(got / base.mbps);
        log(
          `  ${size / MiB} MiB round ${i + 1}: dd ${base.mbps.toFixed(0)} MB/s, upload ${got.toFixed(0)} MB/s, ratio ${(got / base.mbps).toFixed(3)}`,
        );
        // Free the disk for the next round (grace 0: the GC job removes the blob).
        await requestJson(stack.svc.url, 'DELETE', `/api/assets/${res.body.id}`);
      }
      figures.push({
        size_mib: size / MiB,
        rounds,
        upload_mbps_median: r2(median(up)),
        dd_mbps_median: r2(median(dd)),
        ratio_median: r3(median(ratios)),
        ratios: ratios.map(r3),
        target: 0.85,
        met: median(ratios) >= 0.85,
      });
    }
    const mem = memoryOf(stack.svc.pid);
    const peakMb = mem.hwm / 1e6;
    printResult('upload', {
      figures,
      peak_rss_mb: r2(peakMb),
      peak_rss_during: `${sizes[sizes.length - 1] / MiB} MiB uploads (VmHWM of the service process${peakReset ? ', reset before them' : ', since start'})`,
      rss_target_mb: 300,
      rss_met: peakMb < 300,
    });
  } finally {
    await stack.stop();
  }
}

module.exports = { run };
