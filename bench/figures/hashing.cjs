'use strict';
// Figure 2. (a) In-memory hashing throughput, 64 KiB chunks (what the HTTP parser hands the service): BLAKE3 +
// SHA-256 in one pass (DualHasher) against native BLAKE3 alone and SHA-256 alone, interleaved.
// (b) Whether hashing on a worker thread raises ingest throughput on this machine: the same stripped ingest server
// (the service's multipart reading → hash → write with fsync) with the hashes inline on the request thread
// (DualHasher + FsBlobStore.writeTemp) vs the service's worker path (FsBlobStore.writeTempHashed: the writes on the
// request thread, the chunks copied into batch slots a worker thread reads for BLAKE3 and SHA-256), uploads
// interleaved, single stream and 4 concurrent streams. For the single stream, the same server with no hashing at all
// and `dd bs=1M conv=fsync` of the same size are in the interleave too, to show what the hashes cost against dd.
// Per mode also the whole machine's busy CPU per GiB (/proc/stat: the client and the kernel's writeback included)
// and the speed at which that CPU would fill every core (`cpu_ceiling_mbps`): on a machine with few cores a fast
// disk leaves the CPU as the bound, and the ceiling says how far any mode could go.
// BENCH_B3_ON_CALLER=1 adds the worker path with BLAKE3 on the request thread (the service's until 2026-12-03);
// BENCH_BUSBOY=1 plain busboy's servers.
const fs = require('node:fs');
const os = require('node:os');
const crypto = require('node:crypto');
const path = require('node:path');
const {
  DIST,
  MiB,
  GiB,
  ddWrite,
  benchTmp,
  rmrf,
  now,
  median,
  r2,
  r3,
  mbps,
  uploadMultipart,
  spawnHelper,
  cpuMicros,
  onCleanup,
  log,
  printResult,
} = require('../lib/common.cjs');

function hashThroughput(kind, data, total, chunk) {
  const { DualHasher } = require(path.join(DIST, 'domain', 'content', 'hashing.js'));
  const { Blake3Hasher } = require('@napi-rs/blake-hash');
  let update;
  let finish;
  if (kind === 'both') {
    const h = new DualHasher();
    update = (c) => h.update(c);
    finish = () => h.digest();
  } else if (kind === 'blake3') {
    const h = new Blake3Hasher();
    update = (c) => h.update(c);
    finish = () => h.digest('hex');
  } else {
    const h = crypto.createHash('sha256');
    update = (c) => h.update(c);
    finish = () => h.digest('hex');
  }
  const t0 = now();
  let done = 0;
  let off = 0;
  while (done < total) {
    if (off + chunk > data.length) off = 0;
    update(data.subarray(off, off + chunk));
    off += chunk;
    done += chunk;
  }
  finish();
  return mbps(total, now() - t0);
}

/** CPU-seconds all of the machine's cores have been busy (user, system, interrupts: /proc/stat), client included. */
function machineBusySeconds() {
  const [, ...f] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = f;
  return (user + nice + system + irq + softirq + steal) / 100;
}

const startIngestServer = (mode, dir, parser) => spawnHelper('ingest-server.cjs', [mode, dir, parser]);

async function ingestRound(url, streams, size) {
  const t0 = now();
  const res = await Promise.all(Array.from({ length: streams }, () => uploadMultipart(url, size)));
  for (const r of res) if (r.status !== 201) throw new Error(`ingest server answered ${r.status}: ${r.body}`);
  return mbps(streams * size, now() - t0);
}

async function run(args) {
  const rounds = args.rounds ?? (args.smoke ? 1 : 5);
  const total = args.smoke ? 32 * MiB : GiB;
  const data = crypto.randomBytes(16 * MiB);
  const chunk = 64 * 1024;

  // (a) pure hashing
  const speeds = { both: [], blake3: [], sha256: [] };
  hashThroughput('both', data, 16 * MiB, chunk); // warm-up (loads the addon, JITs the loop)
  for (let i = 0; i < rounds; i++) {
    for (const k of ['both', 'blake3', 'sha256']) speeds[k].push(hashThroughput(k, data, total, chunk));
    log(
      `  hash round ${i + 1}: both ${speeds.both[i].toFixed(0)}, blake3 ${speeds.blake3[i].toFixed(0)}, sha256 ${speeds.sha256[i].toFixed(0)} MB/s`,
    );
  }
  const ideal = speeds.blake3.map((b, i) => 1 / (1 / b + 1 / speeds.sha256[i]));
  const hashing = {
    bytes_per_round: total,
    chunk_bytes: chunk,
    both_mbps: r2(median(speeds.both)),
    blake3_mbps: r2(median(speeds.blake3)),
    sha256_mbps: r2(median(speeds.sha256)),
    ratio_vs_blake3: r3(median(speeds.both.map((b, i) => b / speeds.blake3[i]))),
    ratio_vs_sha256: r3(median(speeds.both.map((b, i) => b / speeds.sha256[i]))),
    // One pass costs what the two passes cost (the work is the sum), so 1.0 here means no overhead from combining.
    ratio_vs_sequential_sum: r3(median(speeds.both.map((b, i) => b / ideal[i]))),
  };

  // (b) inline vs worker-thread hashing in an ingest pipeline, and the no-hashing ceiling, interleaved, behind the
  // service's multipart reading (parseMultipartUpload on @fastify/busboy).
  // CPU per GiB is the ingest server's (user + system, from /proc).
  const size = args.smoke ? 8 * MiB : GiB;
  const dir = benchTmp('hashing');
  const forgetDir = onCleanup(() => rmrf(dir));
  const servers = {};
  // BENCH_BUSBOY=1 adds the same servers with plain busboy (graphql-upload-minimal's) in the interleave.
  const parsers = process.env.BENCH_BUSBOY ? ['service', 'busboy'] : ['service'];
  for (const parser of parsers)
    for (const mode of ['inline', 'worker', ...(process.env.BENCH_B3_ON_CALLER ? ['worker-b3-caller'] : []), 'none'])
      servers[`${mode}_${parser}`] = await startIngestServer(mode, path.join(dir, `${mode}-${parser}`), parser);
  const ingest = {};
  try {
    for (const streams of [1, 4]) {
      const each = streams === 1 ? size : size / 4;
      const speed = Object.fromEntries(Object.keys(servers).map((k) => [k, []]));
      const cpu = Object.fromEntries(Object.keys(servers).map((k) => [k, []]));
      const machine = Object.fromEntries(Object.keys(servers).map((k) => [k, []]));
      const d = [];
      for (let i = 0; i < Math.max(1, Math.min(rounds, 3)); i++) {
        for (const [k, s] of Object.entries(servers)) {
          const c0 = cpuMicros(s.pid);
          const m0 = machineBusySeconds();
          speed[k].push(await ingestRound(s.url, streams, each));
          cpu[k].push((cpuMicros(s.pid) - c0) / 1e6 / ((streams * each) / GiB));
          machine[k].push((machineBusySeconds() - m0) / ((streams * each) / GiB));
        }
        if (streams === 1) d.push(ddWrite(dir, each).mbps);
        log(
          `  ingest x${streams} round ${i + 1}: ` +
            Object.keys(servers)
              .map((k) => `${k} ${speed[k][i].toFixed(0)} MB/s (${cpu[k][i].toFixed(2)} CPU-s/GiB)`)
              .join(', ') +
            (streams === 1 ? `, dd ${d[i].toFixed(0)} MB/s` : ''),
        );
      }
      const ratio = (a, b) => r3(median(speed[a].map((x, i) => x / speed[b][i])));
      ingest[`streams_${streams}`] = {
        bytes_per_stream: each,
        ...Object.fromEntries(Object.keys(servers).map((k) => [`${k}_mbps`, r2(median(speed[k]))])),
        ...Object.fromEntries(Object.keys(servers).map((k) => [`${k}_cpu_s_per_gib`, r2(median(cpu[k]))])),
        // The whole machine's busy CPU per GiB (this client, the kernel's writeback and interrupts included), and the
        // speed at which that would take every core: how close a mode is to being bound by the CPU alone.
        ...Object.fromEntries(Object.keys(servers).map((k) => [`${k}_machine_cpu_s_per_gib`, r2(median(machine[k]))])),
        ...Object.fromEntries(
          Object.keys(servers).map((k) => [
            `${k}_cpu_ceiling_mbps`,
            r2((os.availableParallelism() * GiB) / 1e6 / median(machine[k])),
          ]),
        ),
        // The figure: the service's path (worker, its parser) against the same path with no hashing.
        worker_vs_no_hashing: ratio('worker_service', 'none_service'),
        worker_vs_inline: ratio('worker_service', 'inline_service'),
        ...(parsers.length > 1
          ? {
              busboy_vs_service_worker: ratio('worker_busboy', 'worker_service'),
              busboy_vs_service_no_hashing: ratio('none_busboy', 'none_service'),
            }
          : {}),
        ...(streams === 1
          ? {
              dd_mbps: r2(median(d)),
              worker_vs_dd: r3(median(speed.worker_service.map((x, i) => x / d[i]))),
              no_hashing_vs_dd: r3(median(speed.none_service.map((x, i) => x / d[i]))),
            }
          : {}),
      };
    }
  } finally {
    for (const s of Object.values(servers)) await s.stop();
    rmrf(dir);
    forgetDir();
  }
  const gain = Math.min(ingest.streams_1.worker_vs_inline, ingest.streams_4.worker_vs_inline);
  printResult('hashing', {
    hashing,
    ingest,
    faster: gain > 1.05 ? 'worker' : 'inline',
  });
}

module.exports = { run };
