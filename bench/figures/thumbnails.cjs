'use strict';
// Thumbnail generation throughput: N generated 1024x1024 PNGs stored through an API-only service, then made into
// thumbnails by a service with workers (its start, job queue, blob reads and writes and database rows included),
// against `sharp` alone in this process making the same thumbnails from the same files, interleaved A B A B.
//
// A fair comparison: the baseline takes its libvips settings and its pipeline from the service's own module
// (configureSharp: sharp.concurrency(1), one libvips thread, and sharp.cache(false), no operation cache;
// sharpInputOptions: the pixel limit, sequential read, failOn 'error'; thumbnailPipeline: rotate, 512 px inside, WebP
// quality 80 effort 2), and both give libvips the file's path (the disk store's localFiles capability), so
// both do the same image work on one libvips thread. The differences are what the service adds: the job queue,
// storing the thumbnail durably (fsync) and its database rows, and its own start (timed from the spawn; each round
// prints its phases: spawn to /readyz, spawn to the first thumbnail's row, and the steady rate after that).
const fs = require('node:fs');
const path = require('node:path');
const { Client } = require('pg');
const sharp = require('sharp');
const {
  configureSharp,
  sharpInputOptions,
  thumbnailPipeline,
} = require('../../dist/src/domain/thumbnails/thumbnail.service.js');
const {
  KEY,
  benchTmp,
  rmrf,
  now,
  startStack,
  spawnService,
  median,
  r2,
  r3,
  log,
  printResult,
  sleep,
} = require('../lib/common.cjs');

async function makeImages(dir, count) {
  const files = [];
  const base = await sharp({
    create: {
      width: 1024,
      height: 1024,
      channels: 3,
      background: '#808080',
      noise: { type: 'gaussian', mean: 128, sigma: 40 },
    },
  })
    .raw()
    .toBuffer();
  for (let i = 0; i < count; i++) {
    // A different first row per image: distinct content, the same decoding work.
    base.writeUInt32LE(i, 0);
    const file = path.join(dir, `img-${i}.png`);
    await sharp(base, { raw: { width: 1024, height: 1024, channels: 3 } })
      .png({ compressionLevel: 1 })
      .toFile(file);
    files.push(file);
  }
  return files;
}

async function sharpAlone(files) {
  configureSharp(sharp);
  const t0 = now();
  for (const f of files) await thumbnailPipeline(sharp(f, sharpInputOptions(100_000_000))).toBuffer();
  return now() - t0;
}

/** Uploads the files through the API-only service (no workers: nothing is generated yet). */
async function uploadAll(stack, files) {
  for (const f of files) {
    const form = new FormData();
    form.append('tags', 'bench');
    form.append('file', new Blob([fs.readFileSync(f)]), path.basename(f));
    const res = await fetch(`${stack.svc.url}/api/assets`, {
      method: 'POST',
      headers: { 'x-api-key': KEY },
      body: form,
    });
    const body = await res.json();
    if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${JSON.stringify(body)}`);
  }
}

/**
 * Removes every thumbnail (rows, flags, files, queued jobs), then starts a service with workers on the same database
 * and data: its start-up backfill queues a job per image and its worker makes them. Timed from the spawn to the last
 * thumbnail recorded, so process start-up counts against the service.
 */
async function throughService(stack, db, count, nodeArgs = [], main = undefined) {
  await db.query('DELETE FROM thumbnail');
  await db.query('UPDATE asset SET has_thumbnail = false');
  await db.query(`DELETE FROM pgboss.job WHERE name LIKE 'thumbnail.%'`);
  for (const file of walk(path.join(stack.dataDir, 'blobs'))) if (file.endsWith('.thumbnail.webp')) fs.rmSync(file);
  const t0 = now();
  const spawnedAt = Date.now();
  const worker = await spawnService({
    dataDir: stack.dataDir,
    databaseUrl: stack.databaseUrl,
    env: { CONTENT_GC_GRACE_SECONDS: '0' },
    nodeArgs,
    main,
  });
  try {
    for (;;) {
      const { rows } = await db.query(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE status <> 'ready')::int AS failed FROM thumbnail`,
      );
      if (rows[0].failed > 0) throw new Error(`${rows[0].failed} thumbnails failed`);
      if (rows[0].n >= count) break;
      await sleep(20);
    }
    const seconds = now() - t0;
    // Where the time went: the process's start (spawn to /readyz), the wait for the first thumbnail's row, and the
    // steady rate from the first row to the last (`created_at`: the start of each row's transaction).
    const { rows } = await db.query(
      `SELECT extract(epoch FROM min(created_at))::float8 * 1000 AS first, extract(epoch FROM max(created_at))::float8 * 1000 AS last FROM thumbnail`,
    );
    const phases = {
      ready_s: r2(worker.readySeconds),
      first_s: r2((rows[0].first - spawnedAt) / 1000),
      steady_per_s: r2((count - 1) / ((rows[0].last - rows[0].first) / 1000)),
    };
    return { seconds, phases };
  } finally {
    await worker.stop();
  }
}

function* walk(dir) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) yield* walk(path.join(dir, e.name));
    else yield path.join(dir, e.name);
  }
}

async function run(args) {
  const count = args.smoke ? 5 : Number(process.env.BENCH_THUMBNAILS ?? 1000);
  const rounds = args.rounds ?? (args.smoke ? 1 : 2);
  const dir = benchTmp('thumbs');
  const stack = await startStack({ prefix: 'thumbnails', env: { ROLE: 'api' } });
  const db = new Client({ connectionString: stack.databaseUrl });
  await db.connect();
  try {
    log(`  generating ${count} PNGs of 1024x1024`);
    const files = await makeImages(dir, count);
    const bytes = files.reduce((n, f) => n + fs.statSync(f).size, 0);
    await uploadAll(stack, files);
    const ratios = [];
    const svcRates = [];
    const aloneRates = [];
    // --also=<dir>: another build (e.g. `.ab-old`, or a copy of dist before a change) measured in the same rounds.
    const also = args.opts.also ? path.resolve(String(args.opts.also), 'src', 'main.js') : undefined;
    const alsoRatios = [];
    for (let i = 0; i < rounds; i++) {
      const alone = await sharpAlone(files);
      // --cpu-prof=<dir>: the worker service writes a V8 CPU profile there (one per round).
      const { seconds: svc, phases } = await throughService(
        stack,
        db,
        count,
        args.opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(String(args.opts['cpu-prof']))}`] : [],
      );
      aloneRates.push(count / alone);
      svcRates.push(count / svc);
      ratios.push(alone / svc);
      let other = '';
      if (also) {
        const { seconds: t, phases: p } = await throughService(stack, db, count, [], also);
        alsoRatios.push(alone / t);
        other = `, ${args.opts.also} ${(count / t).toFixed(1)}/s (ratio ${(alone / t).toFixed(3)}; ${JSON.stringify(p)})`;
      }
      log(
        `  round ${i + 1}: sharp alone ${(count / alone).toFixed(1)}/s, service ${(count / svc).toFixed(1)}/s, ratio ${(alone / svc).toFixed(3)} (${JSON.stringify(phases)})${other}`,
      );
    }
    printResult('thumbnails', {
      images: count,
      image_bytes_mean: Math.round(bytes / count),
      rounds,
      service_per_second_median: r2(median(svcRates)),
      sharp_alone_per_second_median: r2(median(aloneRates)),
      ratio_median: r3(median(ratios)),
      ratios: ratios.map(r3),
      ...(also
        ? { also: String(args.opts.also), also_ratio_median: r3(median(alsoRatios)), also_ratios: alsoRatios.map(r3) }
        : {}),
      target: 0.8,
      met: median(ratios) >= 0.8,
    });
  } finally {
    await db.end().catch(() => undefined);
    await stack.stop();
    rmrf(dir);
  }
}

module.exports = { run };
