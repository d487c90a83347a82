'use strict';
// Figure 3: 8 clients uploading 256 MiB each at once (aggregate MB/s) against one client uploading 256 MiB alone,
// on the same service, interleaved A B A B. Also the service's peak RSS during the concurrent rounds.
const {
  MiB,
  startStack,
  uploadMultipart,
  requestJson,
  memoryOf,
  resetPeak,
  median,
  now,
  r2,
  r3,
  mbps,
  log,
  printResult,
} = require('../lib/common.cjs');

async function uploadAll(url, clients, size) {
  const t0 = now();
  const res = await Promise.all(
    Array.from({ length: clients }, (_, i) => uploadMultipart(url, size, { fileName: `c${i}.bin` })),
  );
  const seconds = now() - t0;
  for (const r of res) if (r.status !== 201) throw new Error(`upload answered ${r.status}: ${JSON.stringify(r.body)}`);
  // Free the disk for the next round (grace 0: the GC job removes the blobs).
  for (const r of res) await requestJson(url, 'DELETE', `/api/assets/${r.body.id}`);
  return mbps(clients * size, seconds);
}

async function run(args) {
  const clients = 8;
  const size = args.smoke ? 2 * MiB : 256 * MiB;
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const stack = await startStack({ prefix: 'concurrent', env: { CONTENT_GC_GRACE_SECONDS: '0' } });
  try {
    const single = [];
    const multi = [];
    resetPeak(stack.svc.pid);
    for (let i = 0; i < rounds; i++) {
      single.push(await uploadAll(stack.svc.url, 1, size));
      multi.push(await uploadAll(stack.svc.url, clients, size));
      log(
        `  round ${i + 1}: single ${single[i].toFixed(0)} MB/s, ${clients} concurrent ${multi[i].toFixed(0)} MB/s aggregate`,
      );
    }
    const ratio = median(multi.map((m, i) => m / single[i]));
    printResult('concurrent', {
      clients,
      bytes_per_client: size,
      rounds,
      single_mbps: r2(median(single)),
      aggregate_mbps: r2(median(multi)),
      ratio_median: r3(ratio),
      ratios: multi.map((m, i) => r3(m / single[i])),
      peak_rss_mb: r2(memoryOf(stack.svc.pid).hwm / 1e6),
      target: 0.9,
      met: ratio >= 0.9,
    });
  } finally {
    await stack.stop();
  }
}

module.exports = { run };
