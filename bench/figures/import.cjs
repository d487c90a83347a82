'use strict';
// The server-side import (POST /api/assets/seed, issue 28) against the bare work it cannot avoid, same run:
// 1. `--small` (default): a folder of many images (BENCH_IMPORT_FILES, default 10,000; sizes log-uniform between
//    BENCH_IMPORT_MIN_KB and BENCH_IMPORT_MAX_KB, default 50 and 2048): the first import's files/s vs a bare loop that
//    copies each file, fsyncs it and inserts one row into PostgreSQL (target ≥ 0.7); then a second import of the
//    unchanged folder (target < 5 s, 0 files read); then `assets push` of the folder (new content) at its default
//    concurrency vs `curl -F` with `xargs -P` at the same concurrency (target ≥ 1.0). With `--in-place`: the same
//    folder imported in copy mode, then (new content, a new stack) as an in-place root: files/s of each (target ≥ 2×).
// 2. `--models`: model-sized files (BENCH_IMPORT_MODEL_FILES x BENCH_IMPORT_MODEL_MIB, default 4 x 1024): the import
//    vs `cp -r` of the same tree on the same disk followed by `sync` (target ≥ 0.8).
//    With `--in-place` (issue 44, contract 6.4): the tree is an in-place root (`models=<dir>:in-place`), and the import
//    is measured against `b3sum` of the same files (target ≤ 1.2×), with the store's growth (target < 1 MiB), a second
//    import of the unchanged tree (target < 2 s, no file read), and serving a model from its file against serving a
//    stored blob of the same size (uploaded; target ≥ 1.0).
// 3. `--repush`: a second `assets push` of an unchanged 20 GiB tree of sparse files (target < 2 s, no file read).
// --smoke: 50 small files, 2 x 8 MiB models, 2 x 10 MiB sparse files.
const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { Client } = require('pg');
const {
  MiB,
  KEY,
  DIST,
  OWNER,
  benchTmp,
  rmrf,
  onCleanup,
  startStack,
  randomPattern,
  writePatternFile,
  freshen,
  requestJson,
  uploadMultipart,
  median,
  now,
  log,
  printResult,
} = require('../lib/common.cjs');

const CLI = path.join(DIST, 'cli', 'assets', 'main.js');
const settle = () => spawnSync('sync');
const r3 = (x) => Math.round(x * 1000) / 1000;

/** `n` files under `dir`, sizes log-uniform in [minKB, maxKB] KiB, each new content. */
function writeSmallTree(dir, n, minKB, maxKB) {
  const src = randomPattern();
  const files = [];
  for (let i = 0; i < n; i++) {
    const size = Math.round(Math.exp(Math.log(minKB) + Math.random() * (Math.log(maxKB) - Math.log(minKB))) * 1024);
    const file = path.join(dir, `batch ${Math.floor(i / 1000)}`, `ComfyUI_${String(i).padStart(5, '0')}_.png`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const off = Math.floor(Math.random() * (src.length - size));
    const buf = Buffer.from(src.subarray(off, off + size));
    crypto.randomFillSync(buf, 0, Math.min(32, size));
    fs.writeFileSync(file, buf);
    files.push(file);
  }
  return files;
}

/** The bare loop: read each file, write a copy, fsync it, insert one row (what any import must at least do). */
async function baseline(files, dest, databaseUrl) {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  await db.query('CREATE TABLE IF NOT EXISTS bench_baseline (path text PRIMARY KEY, size bigint)');
  fs.mkdirSync(dest, { recursive: true });
  settle();
  const t0 = now();
  for (const [i, f] of files.entries()) {
    const data = fs.readFileSync(f);
    const out = path.join(dest, String(i));
    const fd = fs.openSync(out, 'w');
    fs.writeSync(fd, data);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    await db.query('INSERT INTO bench_baseline (path, size) VALUES ($1, $2)', [f, data.length]);
  }
  const seconds = now() - t0;
  await db.end();
  rmrf(dest);
  return seconds;
}

async function seed(url) {
  settle();
  const t0 = now();
  const r = await requestJson(url, 'POST', '/api/assets/seed?wait=true', {});
  if (r.status !== 200 || r.body.status !== 'completed')
    throw new Error(`seed answered ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  return { seconds: now() - t0, progress: r.body.progress, errors: r.body.errors.length };
}

function cliPush(url, cacheDir, dir) {
  settle();
  const t0 = now();
  const r = spawnSync(process.execPath, [CLI, 'push', dir, '--json', '--no-hash-cache'], {
    env: { PATH: process.env.PATH, ASSETS_URL: url, ASSETS_API_KEY: KEY, XDG_CACHE_HOME: cacheDir, HOME: cacheDir },
    encoding: 'utf8',
    maxBuffer: 256 * MiB,
  });
  if (r.status !== 0) throw new Error(`assets push exited ${r.status}: ${r.stderr.slice(-2000)}`);
  return now() - t0;
}

function curlXargs(url, files, concurrency) {
  settle();
  const list = files.join('\0');
  const t0 = now();
  const r = spawnSync(
    'xargs',
    [
      '-0',
      '-P',
      String(concurrency),
      '-I{}',
      'curl',
      '-sS',
      '--fail',
      '-o',
      '/dev/null',
      '-H',
      `x-api-key: ${KEY}`,
      '-F',
      'file=@{}',
      `${url}/api/assets`,
    ],
    {
      input: list,
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`curl/xargs failed: ${r.stderr.slice(-2000)}`);
  return now() - t0;
}

/** The `--small` folder (BENCH_IMPORT_FILES files, BENCH_IMPORT_MIN_KB–MAX_KB) under a new work folder. */
function smallTreeOf(args, prefix) {
  const n = args.smoke ? 50 : Number(process.env.BENCH_IMPORT_FILES || 10_000);
  const minKB = Number(process.env.BENCH_IMPORT_MIN_KB || 50);
  const maxKB = Number(process.env.BENCH_IMPORT_MAX_KB || 2048);
  const work = benchTmp(prefix);
  const forget = onCleanup(() => rmrf(work));
  const root = path.join(work, 'ComfyUI', 'output');
  log(`writing ${n} files of ${minKB}–${maxKB} KiB`);
  return { n, work, forget, root, files: writeSmallTree(root, n, minKB, maxKB) };
}

/** `--small --in-place`: the first import of one folder in copy mode and, in a stack of its own, in place. */
async function smallInPlace(args) {
  const { n, work, forget, root, files } = smallTreeOf(args, 'import-small-in-place');
  const importWith = async (spec) => {
    const stack = await startStack({ prefix: 'import', env: { IMPORT_ROOTS: spec, IMPORT_ROOTS_OWNER: OWNER } });
    try {
      const r = await seed(stack.svc.url);
      if (r.progress.created !== n) throw new Error(`the import created ${r.progress.created} of ${n}`);
      return r.seconds;
    } finally {
      await stack.stop();
    }
  };
  try {
    const copy = await importWith(`output=${root}`);
    for (const f of files) freshen(f);
    const inPlace = await importWith(`output=${root}:in-place`);
    const result = {
      files: n,
      copy_files_per_s: r3(n / copy),
      in_place_files_per_s: r3(n / inPlace),
      in_place_vs_copy: r3(copy / inPlace),
    };
    log(`  copy mode ${copy.toFixed(2)} s, in place ${inPlace.toFixed(2)} s`);
    printResult('import-small-in-place', result);
  } finally {
    forget();
    rmrf(work);
  }
}

async function small(args) {
  if (args.opts['in-place']) return smallInPlace(args);
  const { n, work, forget, root, files } = smallTreeOf(args, 'import-small');
  const bytes = files.reduce((s, f) => s + fs.statSync(f).size, 0);
  const stack = await startStack({
    prefix: 'import',
    env: { IMPORT_ROOTS: `output=${root}`, IMPORT_ROOTS_OWNER: OWNER },
  });
  try {
    const base = await baseline(files, path.join(work, 'baseline'), stack.databaseUrl);
    const first = await seed(stack.svc.url);
    if (first.progress.created !== n) throw new Error(`the import created ${first.progress.created} of ${n}`);
    const second = await seed(stack.svc.url);
    const result = {
      files: n,
      bytes,
      baseline_files_per_s: r3(n / base),
      import_files_per_s: r3(n / first.seconds),
      import_vs_baseline: r3(base / first.seconds),
      second_import_s: r3(second.seconds),
      second_import_files_read: second.progress.files_read,
    };
    log(
      `  baseline ${base.toFixed(2)} s, import ${first.seconds.toFixed(2)} s, second import ${second.seconds.toFixed(2)} s`,
    );
    if (!args.opts['no-push']) {
      // New content for both clients: only the first bytes of each file change.
      for (const f of files) freshen(f);
      const push = cliPush(stack.svc.url, path.join(work, 'cache'), root);
      for (const f of files) freshen(f);
      const curl = curlXargs(stack.svc.url, files, 4);
      Object.assign(result, { push_s: r3(push), curl_xargs_s: r3(curl), push_vs_curl: r3(curl / push) });
      log(`  assets push ${push.toFixed(2)} s, curl -F | xargs -P 4 ${curl.toFixed(2)} s`);
    }
    printResult('import-small', result);
  } finally {
    await stack.stop();
    forget();
    rmrf(work);
  }
}

/** The `--models` tree (BENCH_IMPORT_MODEL_FILES files of BENCH_IMPORT_MODEL_MIB) under a new work folder. */
function modelTreeOf(args, prefix) {
  const count = args.smoke ? 2 : Number(process.env.BENCH_IMPORT_MODEL_FILES || 4);
  const mib = args.smoke ? 8 : Number(process.env.BENCH_IMPORT_MODEL_MIB || 1024);
  const work = benchTmp(prefix);
  const forget = onCleanup(() => rmrf(work));
  const root = path.join(work, 'ComfyUI', 'models');
  const files = [];
  for (let i = 0; i < count; i++) {
    const f = path.join(root, 'checkpoints', `model-${i}.safetensors`);
    writePatternFile(f, mib * MiB);
    freshen(f);
    files.push(f);
  }
  return { count, mib, work, forget, root, files };
}

/** Bytes under `dir` as `du` counts them (allocated blocks), 0 when it is missing. */
function duBytes(dir) {
  const r = spawnSync('du', ['-sB1', dir], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.split(/\s/)[0]) : 0;
}

/** One asset id by name among the owner's assets. */
async function assetIdByName(url, name) {
  const r = await requestJson(url, 'GET', `/api/assets?name_contains=${encodeURIComponent(name)}&limit=5`);
  const a = r.body.assets.find((x) => x.name === name);
  if (!a) throw new Error(`no asset named ${name}`);
  return a.id;
}

/** Seconds to read an asset's content whole over HTTP (the bytes counted, not kept). */
function readContent(url, id) {
  const http = require('node:http');
  return new Promise((resolve, reject) => {
    const t0 = now();
    http
      .get(`${url}/api/assets/${id}/content`, { headers: { 'x-api-key': KEY } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`content answered ${res.statusCode}`));
        let n = 0;
        res.on('data', (c) => (n += c.length));
        res.on('end', () => resolve({ seconds: now() - t0, bytes: n }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

async function modelsInPlace(args) {
  const rounds = args.rounds || 3;
  const { count, mib, work, forget, root, files } = modelTreeOf(args, 'import-in-place');
  const stack = await startStack({
    prefix: 'import',
    env: { IMPORT_ROOTS: `models=${root}:in-place`, IMPORT_ROOTS_OWNER: OWNER },
  });
  try {
    settle();
    const t0 = now();
    const b3 = spawnSync('b3sum', files, { encoding: 'utf8' });
    if (b3.status !== 0) throw new Error(`b3sum failed (apt-get install b3sum): ${b3.stderr}`);
    const b3sumSeconds = now() - t0;
    const blobs = path.join(stack.dataDir, 'blobs');
    const before = duBytes(blobs);
    const first = await seed(stack.svc.url);
    if (first.progress.created !== count) throw new Error(`the import created ${first.progress.created} of ${count}`);
    const grown = duBytes(blobs) - before;
    const second = await seed(stack.svc.url);
    const inPlaceId = await assetIdByName(stack.svc.url, 'model-0.safetensors');
    // A stored blob of the same size, for serving side by side.
    const up = await uploadMultipart(stack.svc.url, mib * MiB, { fileName: 'stored.safetensors' });
    if (up.status !== 201) throw new Error(`the stored upload answered ${up.status}`);
    const storedId = up.body.id;
    const serve = { inPlace: [], stored: [] };
    // A B, B A, ...: whichever goes first in a round meets the writeback of what came before.
    for (let i = 0; i < rounds; i++) {
      const pair = [
        ['inPlace', inPlaceId],
        ['stored', storedId],
      ];
      for (const [k, id] of i % 2 === 0 ? pair : pair.reverse()) {
        const r = await readContent(stack.svc.url, id);
        if (r.bytes !== mib * MiB) throw new Error(`read ${r.bytes} bytes of ${mib * MiB}`);
        serve[k].push(r.bytes / r.seconds / 1e6);
      }
    }
    const ratios = serve.inPlace.map((v, i) => v / serve.stored[i]);
    const result = {
      files: count,
      mib_each: mib,
      b3sum_s: r3(b3sumSeconds),
      import_s: r3(first.seconds),
      import_vs_b3sum: r3(first.seconds / b3sumSeconds),
      store_growth_bytes: grown,
      second_import_s: r3(second.seconds),
      second_import_files_read: second.progress.files_read,
      serve_in_place_mb_s: Math.round(median(serve.inPlace)),
      serve_stored_mb_s: Math.round(median(serve.stored)),
      serve_in_place_vs_stored: r3(median(ratios)),
    };
    log(
      `  b3sum ${b3sumSeconds.toFixed(2)} s, in-place import ${first.seconds.toFixed(2)} s, store +${grown} bytes, second import ${second.seconds.toFixed(2)} s, serving ${result.serve_in_place_vs_stored} of stored`,
    );
    printResult('import-in-place', result);
  } finally {
    await stack.stop();
    forget();
    rmrf(work);
  }
}

async function models(args) {
  if (args.opts['in-place']) return modelsInPlace(args);
  const { count, mib, work, forget, root } = modelTreeOf(args, 'import-models');
  const stack = await startStack({
    prefix: 'import',
    env: { IMPORT_ROOTS: `models=${root}`, IMPORT_ROOTS_OWNER: OWNER },
  });
  try {
    settle();
    const t0 = now();
    const cp = spawnSync('sh', ['-c', `cp -r "${root}" "${path.join(work, 'copy')}" && sync`]);
    if (cp.status !== 0) throw new Error(`cp failed: ${cp.stderr}`);
    const cpSeconds = now() - t0;
    rmrf(path.join(work, 'copy'));
    const imp = await seed(stack.svc.url);
    const result = {
      files: count,
      mib_each: mib,
      cp_sync_s: r3(cpSeconds),
      import_s: r3(imp.seconds),
      import_vs_cp: r3(cpSeconds / imp.seconds),
    };
    log(`  cp -r + sync ${cpSeconds.toFixed(2)} s, import ${imp.seconds.toFixed(2)} s`);
    printResult('import-models', result);
  } finally {
    await stack.stop();
    forget();
    rmrf(work);
  }
}

/**
 * `--repush`: `assets push` again of an unchanged tree of BENCH_IMPORT_SPARSE_FILES sparse files of
 * BENCH_IMPORT_SPARSE_GIB GiB each (default 20 x 1 GiB; one content, so the first push uploads it once): the second
 * push takes every hash from the CLI's hash cache (target < 2 s, no file opened).
 */
async function repush(args) {
  const count = args.smoke ? 2 : Number(process.env.BENCH_IMPORT_SPARSE_FILES || 20);
  const gib = args.smoke ? 0.01 : Number(process.env.BENCH_IMPORT_SPARSE_GIB || 1);
  const work = benchTmp('import-repush');
  const forget = onCleanup(() => rmrf(work));
  const root = path.join(work, 'ComfyUI', 'models', 'checkpoints');
  fs.mkdirSync(root, { recursive: true });
  for (let i = 0; i < count; i++) {
    const fd = fs.openSync(path.join(root, `sparse-${i}.safetensors`), 'w');
    fs.ftruncateSync(fd, Math.round(gib * 1024) * MiB);
    fs.closeSync(fd);
  }
  const stack = await startStack({ prefix: 'import' });
  const cache = path.join(work, 'cache');
  const push = () => {
    settle();
    const t0 = now();
    const r = spawnSync(process.execPath, [CLI, 'push', path.join(work, 'ComfyUI'), '--comfyui', '--json'], {
      env: {
        PATH: process.env.PATH,
        ASSETS_URL: stack.svc.url,
        ASSETS_API_KEY: KEY,
        XDG_CACHE_HOME: cache,
        HOME: cache,
      },
      encoding: 'utf8',
      maxBuffer: 64 * MiB,
    });
    if (r.status !== 0) throw new Error(`assets push exited ${r.status}: ${r.stderr.slice(-2000)}`);
    return { seconds: now() - t0, out: JSON.parse(r.stdout) };
  };
  try {
    const first = push();
    const second = push();
    const result = {
      files: count,
      gib_total: r3(count * gib),
      first_push_s: r3(first.seconds),
      repush_s: r3(second.seconds),
      repush_files_hashed: second.out.files_hashed,
      repush_bytes_sent: second.out.bytes_sent,
    };
    log(
      `  first push ${first.seconds.toFixed(2)} s, re-push ${second.seconds.toFixed(2)} s (${second.out.files_hashed} files hashed)`,
    );
    printResult('import-repush', result);
  } finally {
    await stack.stop();
    forget();
    rmrf(work);
  }
}

module.exports = { run: (args) => (args.opts.models ? models(args) : args.opts.repush ? repush(args) : small(args)) };

if (require.main === module) {
  const { parseArgs, runScript } = require('../lib/common.cjs');
  runScript(() => module.exports.run(parseArgs(process.argv.slice(2))));
}
