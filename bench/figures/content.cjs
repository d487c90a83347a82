'use strict';
// Serving content: GET /api/assets/{id}/content of a 1 GiB asset (the blob in the page cache after the first read)
// with `curl -o /dev/null`, against a bare node:http server sending the same file with fs.createReadStream
// (bench/lib/blob-server.cjs), interleaved A B A B; twice: on a fresh service process, then after 15 s of metadata
// load on the same process (64 connections of GET /api/assets/{id}, which grows and ages the heap: the case where
// per-chunk buffers used to cost full mark-compacts). The CPU time the service spent per GiB comes from /proc.
// bench/ab.cjs's `content` kind runs the same phases for two builds.
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const {
  MiB,
  GiB,
  KEY,
  startStack,
  spawnHelper,
  uploadMultipart,
  cannon,
  cpuMicros,
  now,
  median,
  r2,
  r3,
  log,
  printResult,
} = require('../lib/common.cjs');

const BURST_SECONDS = 15;

function curl(url, headers = []) {
  const t0 = now();
  const r = spawnSync(
    'curl',
    ['-sS', '--fail', '-o', '/dev/null', '-w', '%{size_download}', ...headers.flatMap((h) => ['-H', h]), url],
    {
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`curl failed: ${r.stderr}`);
  return { seconds: now() - t0, bytes: Number(r.stdout) };
}

/** One GET of the content through a service process: seconds and its CPU seconds per GiB. */
function timed(svc, route, size) {
  const before = cpuMicros(svc.pid);
  const r = curl(svc.url + route, [`x-api-key: ${KEY}`]);
  if (r.bytes !== size) throw new Error(`got ${r.bytes} of ${size} bytes from ${svc.url}${route}`);
  return { ...r, cpuSecondsPerGiB: ((cpuMicros(svc.pid) - before) / 1e6) * (GiB / size) };
}

/** The 1 GiB (4 MiB in smoke runs) asset, 50 small ones for the metadata burst, the bare server on the same blob. */
async function seedContent(svcUrl, dataDir, smoke) {
  const size = smoke ? 4 * MiB : GiB;
  const up = await uploadMultipart(svcUrl, size, { fileName: 'model.safetensors' });
  if (up.status !== 201) throw new Error(`upload answered ${up.status}`);
  const hex = up.body.asset_hash.slice('blake3:'.length);
  const file = path.join(dataDir, 'blobs', hex.slice(0, 2), hex.slice(2, 4), hex);
  const ids = [];
  for (let i = 0; i < (smoke ? 5 : 50); i++)
    ids.push((await uploadMultipart(svcUrl, 1024 + i, { fileName: `m${i}.bin` })).body.id);
  const bare = await spawnHelper('blob-server.cjs', [], { FILE: file });
  return { size, route: `/api/assets/${up.body.id}/content`, ids, bare };
}

/** 64 connections of GET /api/assets/{id} for `seconds` against one service process. */
async function metadataBurst(svc, ids, seconds) {
  let i = 0;
  const r = await cannon({
    url: svc.url,
    headers: { 'x-api-key': KEY },
    duration: seconds,
    connections: 64,
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/api/assets/${ids[i++ % ids.length]}` }) }],
  });
  if (!r.ok) throw new Error(`metadata burst: non-2xx or errors: ${JSON.stringify(r)}`);
  return r;
}

/**
 * Rounds of: each service in `services` (name → process), then the bare server, the order of the services alternating
 * per round. Returns per name the list of { seconds, cpuSecondsPerGiB }, and `bare`.
 */
function interleaved(services, seed, rounds, label) {
  const out = { bare: [] };
  const names = Object.keys(services);
  for (const n of names) out[n] = [];
  const rate = (x) => `${(seed.size / MiB / x.seconds).toFixed(0)} MiB/s`;
  for (let i = 0; i < rounds; i++) {
    const line = [];
    for (const n of i % 2 ? [...names].reverse() : names) {
      out[n].push(timed(services[n], seed.route, seed.size));
      line.push(`${n} ${rate(out[n][i])} (${out[n][i].cpuSecondsPerGiB.toFixed(2)} s CPU/GiB)`);
    }
    const c = curl(seed.bare.url);
    if (c.bytes !== seed.size) throw new Error(`baseline sent ${c.bytes} of ${seed.size} bytes`);
    out.bare.push(c);
    log(`  ${label} round ${i + 1}: ${line.join('; ')}; bare node:http ${rate(c)}`);
  }
  return out;
}

/** Medians of one service's rounds against the bare server's rounds of the same run. */
function summary(size, xs, bare) {
  return {
    mib_s: r2(median(xs.map((x) => size / MiB / x.seconds))),
    ratio_to_bare: r3(median(xs.map((x, i) => bare[i].seconds / x.seconds))),
    ratios_to_bare: xs.map((x, i) => r3(bare[i].seconds / x.seconds)),
    cpu_s_per_gib: r2(median(xs.map((x) => x.cpuSecondsPerGiB))),
  };
}

async function run(args) {
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const stack = await startStack({ prefix: 'content' });
  let seed;
  try {
    seed = await seedContent(stack.svc.url, stack.dataDir, args.smoke);
    // Warm: the page cache, the JIT of the bare server (the service's own JIT warms in the first round).
    curl(seed.bare.url);
    const fresh = interleaved({ service: stack.svc }, seed, rounds, 'fresh');
    log(`  metadata burst: ${BURST_SECONDS} s`);
    const burst = await metadataBurst(stack.svc, seed.ids, args.smoke ? 1 : BURST_SECONDS);
    const after = interleaved({ service: stack.svc }, seed, rounds, 'after burst');
    const bare = (xs) => r2(median(xs.map((x) => seed.size / MiB / x.seconds)));
    const fs = summary(seed.size, fresh.service, fresh.bare);
    const as = summary(seed.size, after.service, after.bare);
    printResult('content', {
      size_bytes: seed.size,
      rounds,
      fresh: { ...fs, bare_mib_s: bare(fresh.bare) },
      after_metadata_burst: {
        ...as,
        bare_mib_s: bare(after.bare),
        burst_seconds: args.smoke ? 1 : BURST_SECONDS,
        burst_rps: Math.round(burst.rps),
      },
      target: 1.0,
      met: fs.ratio_to_bare >= 1 && as.ratio_to_bare >= 1,
    });
  } finally {
    await seed?.bare.stop();
    await stack.stop();
  }
}

module.exports = { run, seedContent, metadataBurst, interleaved, summary, BURST_SECONDS };
