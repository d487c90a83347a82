'use strict';
// The server-side import (POST /api/assets/seed, issue 28) against the bare work it cannot avoid, same run:
// 1. `--small` (default): a folder of many images (BENCH_IMPORT_FILES, default 10,000; sizes log-uniform between
//    BENCH_IMPORT_MIN_KB and BENCH_IMPORT_MAX_KB, default 50 and 2048): the first import's files/s vs a bare loop that
//    copies each file, fsyncs it and inserts one row into PostgreSQL (target ≥ 0.7); then a second import of the
//    unchanged folder (target < 5 s, 0 files read); then `assets push` of the folder (new content) at its default
//    concurrency vs `curl -F` with `xargs -P` at the same concurrency (target ≥ 1.0).
// 2. `--models`: model-sized files (BENCH_IMPORT_MODEL_FILES x BENCH_IMPORT_MODEL_MIB, default 4 x 1024): the import
//    vs `cp -r` of the same tree on the same disk followed by `sync` (target ≥ 0.8).
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

async function small(args) {
  const n = args.smoke ? 50 : Number(process.env.BENCH_IMPORT_FILES || 10_000);
  const minKB = Number(process.env.BENCH_IMPORT_MIN_KB || 50);
  const maxKB = Number(process.env.BENCH_IMPORT_MAX_KB || 2048);
  const work = benchTmp('import-small');
  const forget = onCleanup(() => rmrf(work));
  const root = path.join(work, 'ComfyUI', 'output');
  log(`writing ${n} files of ${minKB}–${maxKB} KiB`);
  const files = writeSmallTree(root, n, minKB, maxKB);
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

async function models(args) {
  const count = args.smoke ? 2 : Number(process.env.BENCH_IMPORT_MODEL_FILES || 4);
  const mib = args.smoke ? 8 : Number(process.env.BENCH_IMPORT_MODEL_MIB || 1024);
  const work = benchTmp('import-models');
  const forget = onCleanup(() => rmrf(work));
  const root = path.join(work, 'ComfyUI', 'models');
  for (let i = 0; i < count; i++) {
    const f = path.join(root, 'checkpoints', `model-${i}.safetensors`);
    writePatternFile(f, mib * MiB);
    freshen(f);
  }
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
