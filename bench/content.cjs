'use strict';
// Serving content: GET /api/assets/{id}/content of a 1 GiB asset (the blob in the page cache after the first
// read) with `curl -o /dev/null`, against a bare node:http server sending the same file with fs.createReadStream
// (bench/lib/blob-server.cjs), interleaved A B A B. A second service process on the same database and data dir
// runs with ASSET_SERVICE_YOUNG_GC=0, so the same build is measured with and without the scavenges of young-gc.ts
// (BENCHMARKS.md, change 9). The CPU time each service process spent per GiB comes from /proc.
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { MiB, GiB, KEY, startStack, spawnService, spawnHelper, uploadMultipart, cpuMicros, now, median, r2, r3, log, printResult } = require('./lib/common.cjs');

function curl(url, headers = []) {
  const t0 = now();
  const r = spawnSync('curl', ['-sS', '--fail', '-o', '/dev/null', '-w', '%{size_download}', ...headers.flatMap((h) => ['-H', h]), url], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`curl failed: ${r.stderr}`);
  return { seconds: now() - t0, bytes: Number(r.stdout) };
}

function timed(svc, url, size) {
  const before = cpuMicros(svc.pid);
  const r = curl(url, [`x-api-key: ${KEY}`]);
  if (r.bytes !== size) throw new Error(`got ${r.bytes} of ${size} bytes from ${url}`);
  return { ...r, cpuSecondsPerGiB: ((cpuMicros(svc.pid) - before) / 1e6) * (GiB / size) };
}

async function run(args) {
  const size = args.smoke ? 4 * MiB : GiB;
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const stack = await startStack({ prefix: 'content' });
  let off;
  let base;
  try {
    const up = await uploadMultipart(stack.svc.url, size, { fileName: 'model.safetensors' });
    if (up.status !== 201) throw new Error(`upload answered ${up.status}`);
    const hex = up.body.asset_hash.slice('blake3:'.length);
    const file = path.join(stack.dataDir, 'blobs', hex.slice(0, 2), hex.slice(2, 4), hex);
    off = await spawnService({ dataDir: stack.dataDir, databaseUrl: stack.databaseUrl, env: { ASSET_SERVICE_YOUNG_GC: '0' } });
    base = await spawnHelper('blob-server.cjs', [], { FILE: file });
    const route = `/api/assets/${up.body.id}/content`;
    // Warm: the page cache, the JIT of all three.
    curl(stack.svc.url + route, [`x-api-key: ${KEY}`]);
    curl(off.url + route, [`x-api-key: ${KEY}`]);
    curl(base.url);
    const s = [];
    const o = [];
    const b = [];
    for (let i = 0; i < rounds; i++) {
      s.push(timed(stack.svc, stack.svc.url + route, size));
      o.push(timed(off, off.url + route, size));
      const c = curl(base.url);
      if (c.bytes !== size) throw new Error(`baseline sent ${c.bytes} of ${size} bytes`);
      b.push(c);
      const rate = (x) => `${(size / MiB / x.seconds).toFixed(0)} MiB/s`;
      log(
        `  round ${i + 1}: service ${rate(s[i])} (${s[i].cpuSecondsPerGiB.toFixed(2)} s CPU/GiB); young GC off ${rate(o[i])} ` +
          `(${o[i].cpuSecondsPerGiB.toFixed(2)} s CPU/GiB); bare node:http ${rate(b[i])}`,
      );
    }
    const mibps = (xs) => r2(median(xs.map((x) => size / MiB / x.seconds)));
    printResult('content', {
      size_bytes: size,
      rounds,
      service_mib_s: mibps(s),
      young_gc_off_mib_s: mibps(o),
      bare_mib_s: mibps(b),
      ratio_to_bare: r3(median(s.map((x, i) => b[i].seconds / x.seconds))),
      ratios_to_bare: s.map((x, i) => r3(b[i].seconds / x.seconds)),
      ratio_to_young_gc_off: r3(median(s.map((x, i) => o[i].seconds / x.seconds))),
      service_cpu_s_per_gib: r2(median(s.map((x) => x.cpuSecondsPerGiB))),
      young_gc_off_cpu_s_per_gib: r2(median(o.map((x) => x.cpuSecondsPerGiB))),
    });
  } finally {
    await base?.stop();
    await off?.stop();
    await stack.stop();
  }
}

module.exports = { run };
