'use strict';
// Where a server-side import of many small files spends its time (issue 28): a folder of BENCH_IMPORT_FILES
// (default 2,000) files of 50-500 KiB is imported once by a service run with --cpu-prof; prints the wall time, the
// CPU seconds of the service, and the profile's heaviest functions (self time). The ingest workers' profiles land
// beside the main thread's.
// Run: node bench/profiles/profile-import.cjs   (the profile lands in $TMPDIR/profile-import/)
//   BENCH_IMPORT_MIN_KB / BENCH_IMPORT_MAX_KB: the sizes (log-uniform); PROF_EXT=bin: files that get no thumbnail;
//   BENCH_IMPORT_MODEL_MIB=1024: four model files of that size instead; PROF_LOGS=1: the service's last log lines;
//   PROF_REQUIRE=<file>: a module the service preloads instead of profiling (a statement counter, say).
const fs = require('node:fs');
const path = require('node:path');
const {
  OWNER,
  benchTmp,
  rmrf,
  startStack,
  randomPattern,
  writePatternFile,
  MiB,
  requestJson,
  now,
  log,
  cpuMicros,
} = require('../lib/common.cjs');
const { summarize } = require('../lib/cpu-profile.cjs');

async function main() {
  const n = Number(process.env.BENCH_IMPORT_FILES || 2000);
  const work = benchTmp('profile-import');
  // BENCH_IMPORT_MODEL_MIB: four model files of that size instead (the `--models` figure's shape).
  const modelMib = Number(process.env.BENCH_IMPORT_MODEL_MIB || 0);
  const root = path.join(work, 'ComfyUI', modelMib ? 'models' : 'output');
  fs.mkdirSync(root, { recursive: true });
  if (modelMib) {
    for (let i = 0; i < 4; i++) writePatternFile(path.join(root, 'checkpoints', `m${i}.safetensors`), modelMib * MiB);
  }
  for (let i = 0; i < (modelMib ? 0 : n); i++) {
    const [lo, hi] = [Number(process.env.BENCH_IMPORT_MIN_KB || 50), Number(process.env.BENCH_IMPORT_MAX_KB || 500)];
    const size = Math.round(Math.exp(Math.log(lo) + Math.random() * (Math.log(hi) - Math.log(lo))) * 1024);
    const b = Buffer.from(randomPattern().subarray(i * 997, i * 997 + size));
    b.writeUInt32BE(i, 0);
    fs.writeFileSync(path.join(root, `img_${i}.${process.env.PROF_EXT || 'png'}`), b);
  }
  const profDir = path.join(require('node:os').tmpdir(), 'profile-import');
  rmrf(profDir);
  const stack = await startStack({
    prefix: 'profile-import',
    env: { IMPORT_ROOTS: `${modelMib ? 'models' : 'output'}=${root}`, IMPORT_ROOTS_OWNER: OWNER },
    nodeArgs: process.env.PROF_REQUIRE
      ? ['--require', process.env.PROF_REQUIRE]
      : ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
  });
  try {
    const cpu = () => cpuMicros(stack.svc.pid) / 1e6;
    const c0 = cpu();
    const t0 = now();
    const r = await requestJson(stack.svc.url, 'POST', '/api/assets/seed?wait=true', {});
    const seconds = now() - t0;
    log(`import of ${n} files: ${seconds.toFixed(2)} s (${(n / seconds).toFixed(0)} files/s), status ${r.body.status}`);
    log(`service CPU ${(cpu() - c0).toFixed(2)} s`);
    if (process.env.PROF_LOGS) console.error(stack.svc.logs());
  } finally {
    await stack.stop();
    rmrf(work);
  }
  const file = fs.readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (file) summarize(JSON.parse(fs.readFileSync(path.join(profDir, file), 'utf8')), 30);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
