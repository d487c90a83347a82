'use strict';
// Figure 2. (a) In-memory hashing throughput, 64 KiB chunks (what the HTTP parser hands the service): BLAKE3 +
// SHA-256 in one pass (DualHasher) against native BLAKE3 alone and SHA-256 alone, interleaved.
// (b) Whether hashing on a worker thread raises ingest throughput on this machine: the same stripped ingest server
// (the service's multipart parser → hash → write with fsync) with the hashes inline on the request thread
// (DualHasher + FsBlobStore.writeTemp) vs the service's worker path (FsBlobStore.writeTempHashed: chunks copied into
// pooled batch buffers transferred to a worker thread that runs SHA-256 and the writes, and back; BLAKE3 on the
// request thread), uploads interleaved, single
// stream and 4 concurrent streams. For the single stream, the same server with no hashing at all and
// `dd bs=1M conv=fsync` of the same size are in the interleave too, to show what the hashes cost against dd.
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

const startIngestServer = (mode, dir) => spawnHelper('ingest-server.cjs', [mode, dir]);

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

  // (b) inline vs worker-thread hashing in an ingest pipeline, A B A B
  const size = args.smoke ? 8 * MiB : GiB;
  const dir = benchTmp('hashing');
  const forgetDir = onCleanup(() => rmrf(dir));
  const inline = await startIngestServer('inline', path.join(dir, 'inline'));
  const worker = await startIngestServer('worker', path.join(dir, 'worker'));
  const none = await startIngestServer('none', path.join(dir, 'none'));
  const ingest = {};
  try {
    for (const streams of [1, 4]) {
      const each = streams === 1 ? size : size / 4;
      const a = [];
      const b = [];
      const n = [];
      const d = [];
      for (let i = 0; i < Math.max(1, Math.min(rounds, 3)); i++) {
        a.push(await ingestRound(inline.url, streams, each));
        b.push(await ingestRound(worker.url, streams, each));
        if (streams === 1) {
          n.push(await ingestRound(none.url, streams, each));
          d.push(ddWrite(dir, each).mbps);
        }
        log(
          `  ingest x${streams} round ${i + 1}: inline ${a[i].toFixed(0)} MB/s, worker ${b[i].toFixed(0)} MB/s` +
            (streams === 1 ? `, no hashing ${n[i].toFixed(0)} MB/s, dd ${d[i].toFixed(0)} MB/s` : ''),
        );
      }
      ingest[`streams_${streams}`] = {
        bytes_per_stream: each,
        inline_mbps: r2(median(a)),
        worker_mbps: r2(median(b)),
        worker_vs_inline: r3(median(b.map((x, i) => x / a[i]))),
        ...(streams === 1
          ? {
              no_hashing_mbps: r2(median(n)),
              dd_mbps: r2(median(d)),
              inline_vs_dd: r3(median(a.map((x, i) => x / d[i]))),
              worker_vs_dd: r3(median(b.map((x, i) => x / d[i]))),
              no_hashing_vs_dd: r3(median(n.map((x, i) => x / d[i]))),
            }
          : {}),
      };
    }
  } finally {
    await inline.stop();
    await worker.stop();
    await none.stop();
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
