'use strict';
// Where a download task's time goes (figure 6's workload, bench/figures/download.cjs):
//   node bench/profiles/profile-download.cjs [--dist=DIR] [--rounds=N] [--mib=N] [--no-prof] [--top=N] [--gc-log=FILE]
// [--v8=FLAG,FLAG] [--census] Starts the build in DIR (default dist) with `--trace-gc` (and `--cpu-prof` unless
// --no-prof) against the local Hugging-Face-shaped file server, runs N download tasks of MiB each (default 2 x 1024),
// and prints per round the MB/s and the service's CPU seconds per GiB (/proc), then the garbage collections of the main
// thread by kind (count and pause), and the CPU profile of each thread (main thread first, then the ingest workers).
// --gc-log keeps the
// `--trace-gc` lines (with V8's reason for each collection) in FILE; --v8 adds node/V8 flags to the service's
// (`--v8=--trace-incremental-marking` says what started each marking). --census preloads bench/lib/chunk-census.cjs
// into the service: the chunks handed to the ingest pool by the size of their ArrayBuffer (a join of buffered socket
// reads shows as a buffer above 64 KiB) and the peak ArrayBuffer / external memory of the main thread.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  MiB,
  GiB,
  startStack,
  spawnService,
  spawnHelper,
  cpuMicros,
  mbps,
  log,
  parseArgs,
  runScript,
} = require('../lib/common.cjs');
const { summarize } = require('../lib/cpu-profile.cjs');
const { viaTask } = require('../figures/download.cjs');

/**
 * `--trace-gc` lines, e.g.
 * `[pid:0x…:0]  1234 ms: Mark-Compact 12.3 (20.1) -> 8.1 (20.1) MB, pooled: 0 MB, 1.23 / 0.00 ms ...`.
 */
function gcSummary(lines) {
  const byIsolate = new Map();
  for (const line of lines) {
    const m =
      /^\[(\d+):(0x[0-9a-f]+)(?::\d+)?\]\s+\d+ ms: ([A-Za-z -]+?) (?:\(reduce\) )?[\d.]+ \([\d.]+\) -> [\d.]+ \([\d.]+\) MB,(?: pooled: [\d.]+ MB,)? ([\d.]+) \/ ([\d.]+) ms/.exec(
        line,
      );
    if (!m) continue;
    const iso = byIsolate.get(m[2]) ?? new Map();
    byIsolate.set(m[2], iso);
    const k = m[3].trim();
    const e = iso.get(k) ?? { count: 0, pauseMs: 0 };
    e.count++;
    e.pauseMs += Number(m[4]);
    iso.set(k, e);
  }
  return byIsolate;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const dist = path.resolve(args.opts.dist ?? 'dist');
  const rounds = args.rounds ?? 2;
  const size = Number(args.opts.mib ?? 1024) * MiB;
  const prof = !args.opts['no-prof'];
  const top = Number(args.opts.top ?? 25);
  const profDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cpuprof-download-'));
  const server = await spawnHelper('file-server.cjs');
  const env = { HF_ENDPOINT: server.url, DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'false', CONTENT_GC_GRACE_SECONDS: '0' };
  const stack = await startStack({ prefix: 'prof-download', env });
  let svc;
  const gcLines = [];
  try {
    await stack.svc.stop();
    const extra = typeof args.opts.v8 === 'string' ? args.opts.v8.split(',') : [];
    const nodeArgs = ['--trace-gc', ...extra, ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [])];
    const censusOut = path.join(profDir, 'census.json');
    const svcEnv = args.opts.census
      ? {
          ...env,
          CENSUS_OUT: censusOut,
          NODE_OPTIONS:
            `${process.env.NODE_OPTIONS ?? ''} --require ${path.join(__dirname, '..', 'lib', 'chunk-census.cjs')}`.trim(),
        }
      : env;
    svc = await spawnService({
      dataDir: stack.dataDir,
      databaseUrl: stack.databaseUrl,
      env: svcEnv,
      nodeArgs,
      main: path.join(dist, 'src', 'main.js'),
    });
    let buffered = '';
    svc.child.stdout.on('data', (d) => {
      buffered += d;
      const lines = buffered.split('\n');
      buffered = lines.pop();
      for (const l of lines) if (l.startsWith('[')) gcLines.push(l);
    });
    let cpuTotal = 0;
    for (let i = 0; i < rounds; i++) {
      const url = `${server.url}/bench/models/resolve/main/prof${i}-${Date.now()}-${size}.bin`;
      const before = cpuMicros(svc.pid);
      const t = await viaTask(svc.url, url, size);
      const cpu = (cpuMicros(svc.pid) - before) / 1e6;
      cpuTotal += cpu;
      log(
        `round ${i + 1}: ${mbps(size, t.seconds).toFixed(0)} MB/s, service CPU ${((cpu * GiB) / size).toFixed(2)} s/GiB`,
      );
    }
    log(`service CPU ${((cpuTotal * GiB) / (size * rounds)).toFixed(2)} s/GiB over ${rounds} rounds`);
    if (args.opts.census) {
      await new Promise((r) => setTimeout(r, 1500)); // its last write
      const c = JSON.parse(fs.readFileSync(censusOut, 'utf8'));
      const sizes = Object.entries(c.byBufferKiB)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 8)
        .map(([k, n]) => `${k} KiB: ${n}`);
      log(
        `chunks to the ingest pool: ${c.chunks} (${(c.bytes / MiB).toFixed(0)} MiB); in buffers above 64 KiB (joined reads): ${c.joinedChunks} (${(c.joinedBytes / MiB).toFixed(0)} MiB)`,
      );
      log(`  by buffer size: ${sizes.join(', ')}`);
      log(
        `  main thread peak: ArrayBuffers ${c.peakArrayBuffersMiB.toFixed(0)} MiB, external memory ${c.peakExternalMiB.toFixed(0)} MiB`,
      );
    }
    await svc.stop();
    svc = undefined;
  } finally {
    await svc?.stop();
    await stack.stop();
    await server.stop();
  }
  if (args.opts['gc-log']) fs.writeFileSync(args.opts['gc-log'], gcLines.join('\n') + '\n');
  log('\ngarbage collections (whole run, start-up included), by isolate:');
  for (const [iso, kinds] of gcSummary(gcLines)) {
    log(`  isolate ${iso}: ${[...kinds].map(([k, e]) => `${k} ${e.count}x ${e.pauseMs.toFixed(0)} ms`).join(', ')}`);
  }
  if (!prof) return;
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread.
  const files = fs
    .readdirSync(profDir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort((a, b) => Number(a.split('.')[4]) - Number(b.split('.')[4]));
  for (const f of files) {
    log(`\n== thread ${f.split('.')[4]}: ${path.join(profDir, f)}`);
    summarize(JSON.parse(fs.readFileSync(path.join(profDir, f), 'utf8')), top, log);
  }
}

runScript(main);
