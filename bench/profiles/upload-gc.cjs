'use strict';
// What V8's collector costs a 1 GiB multipart upload, and why the service pays more of it than the stripped ingest
// server (bench/lib/ingest-server.cjs, worker mode: the same multipart reading, slots, hashes and writes):
//   node bench/profiles/upload-gc.cjs [--rounds N] [--uploads=N] [--ballast=MB]   (defaults 2, 2, 40)
// Node's HTTP parser hands each socket read (up to 64 KiB) to JavaScript as a new Buffer; V8 counts its memory as
// external and starts a full Mark-Compact each time ~64 MB of it has grown since the last one, unless a scavenge of
// the young generation has freed those buffers first. How often that happens depends on the young generation's size,
// and what each Mark-Compact costs depends on how much live heap it marks. In the service most of them are started
// by V8's old-generation limit as well, and the scavenge that frees the buffers is skipped while a marking runs
// (docs/benchmarks-history.md, 2026-12-03 16:50). Cases, interleaved per round:
//   stripped                 the ingest server, the service's node flags (its heap: a few MB)
//   stripped+ballast         the same with --ballast MB of live objects (bench/lib/heap-ballast.cjs), like the service
//   stripped+ballast semi=1  the same with a 1 MB young generation (--max-semi-space-size=1)
//   service                  the service itself, its node flags
//   service semi=1           the service with --max-semi-space-size=1
//   service <dist>           with --also=<dist>: another build of the service, the same flags
//   service pool=1, pool=2   the service with V8's helper threads cut to 1 or 2 (--v8-pool-size)
//   service try              with --try="--flag …" and/or --try-env=NAME=value,…: the service with those node flags
//                            added (a flag of the same name replaced) and those variables in its environment
// --cases=name,name runs only those. Per case: MB/s, the process's CPU seconds per GiB (/proc, all its threads), and
// Mark-Compacts and scavenges per GiB (--trace-gc), and the CPU per GiB of each kind of thread (MainThread, V8Worker:
// the collector's helpers, WorkerThread: the hashes, libuv-worker: the writes). What the young generation's size
// costs the metadata reads:
//   BENCH_NODE_FLAGS= AB_ENV_A=NODE_OPTIONS=… AB_ENV_B=NODE_OPTIONS=… node bench/ab.cjs dist dist metadata graphql
const path = require('node:path');
const {
  MiB,
  GiB,
  SERVICE_NODE_FLAGS,
  benchTmp,
  rmrf,
  startStack,
  spawnService,
  spawnHelper,
  uploadMultipart,
  cpuMicros,
  threadCpu,
  threadCpuDelta,
  envList,
  now,
  mbps,
  median,
  r2,
  log,
  parseArgs,
  printResult,
  runScript,
} = require('../lib/common.cjs');

// Added flags (space-separated) replace the service's own flag of the same name.
const withFlags = (flags, extra) => {
  const add = String(extra ?? '')
    .split(/\s+/)
    .filter(Boolean);
  const names = new Set(add.map((f) => f.split('=')[0]));
  return [...flags.filter((f) => !names.has(f.split('=')[0])), ...add];
};
const withSemi = (flags, mb) => withFlags(flags, `--max-semi-space-size=${mb}`);

async function startCase(c, stack, dir, ballastMb) {
  if (c.kind === 'stripped') {
    const flags = c.ballast
      ? [...c.flags, '--require', path.join(__dirname, '..', 'lib', 'heap-ballast.cjs')]
      : c.flags;
    const p = await spawnHelper(
      'ingest-server.cjs',
      ['worker', dir],
      { BALLAST_MB: String(ballastMb) },
      { nodeArgs: [...flags, '--trace-gc'] },
    );
    return { ...p, gcText: p.output };
  }
  const svc = await spawnService({
    dataDir: stack.dataDir,
    databaseUrl: stack.databaseUrl,
    startFlags: c.flags,
    nodeArgs: ['--trace-gc'],
    ...(c.main ? { main: path.resolve(c.main, 'src', 'main.js') } : {}),
    ...(c.env ? { env: c.env } : {}),
  });
  let out = '';
  svc.child.stdout.on('data', (d) => (out += d));
  return { ...svc, gcText: () => out };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const rounds = args.rounds ?? 2;
  const uploads = Number(args.opts.uploads ?? 2);
  const ballastMb = Number(args.opts.ballast ?? 40);
  const size = GiB;
  const cases = [
    { name: 'stripped', kind: 'stripped', flags: SERVICE_NODE_FLAGS },
    { name: 'stripped+ballast', kind: 'stripped', ballast: true, flags: SERVICE_NODE_FLAGS },
    { name: 'stripped+ballast semi=1', kind: 'stripped', ballast: true, flags: withSemi(SERVICE_NODE_FLAGS, 1) },
    { name: 'service', kind: 'service', flags: SERVICE_NODE_FLAGS },
    { name: 'service semi=1', kind: 'service', flags: withSemi(SERVICE_NODE_FLAGS, 1) },
    { name: 'service pool=1', kind: 'service', flags: [...SERVICE_NODE_FLAGS, '--v8-pool-size=1'] },
    { name: 'service pool=2', kind: 'service', flags: [...SERVICE_NODE_FLAGS, '--v8-pool-size=2'] },
    ...(args.opts.try || args.opts['try-env']
      ? [
          {
            name: 'service try',
            kind: 'service',
            flags: withFlags(SERVICE_NODE_FLAGS, args.opts.try),
            env: envList(args.opts['try-env']),
          },
        ]
      : []),
    ...(args.opts.also
      ? [{ name: `service ${args.opts.also}`, kind: 'service', flags: SERVICE_NODE_FLAGS, main: args.opts.also }]
      : []),
  ].filter((c) => !args.opts.cases || String(args.opts.cases).split(',').includes(c.name));
  const res = Object.fromEntries(cases.map((c) => [c.name, { mbps: [], cpu: [], mc: [], scavenges: [], threads: [] }]));
  const stack = await startStack({ prefix: 'upload-gc' });
  await stack.svc.stop();
  const dir = benchTmp('upload-gc-blobs');
  try {
    for (let round = 0; round < rounds; round++) {
      for (const c of round % 2 ? [...cases].reverse() : cases) {
        const p = await startCase(c, stack, dir, ballastMb);
        try {
          const before = p.gcText().length;
          const c0 = cpuMicros(p.pid);
          const th0 = threadCpu(p.pid);
          const t0 = now();
          for (let i = 0; i < uploads; i++) {
            const r = await uploadMultipart(p.url, size, { fileName: `gc-${round}-${i}.bin` });
            if (r.status !== 201) throw new Error(`${c.name}: upload answered ${r.status}`);
          }
          const s = now() - t0;
          const text = p.gcText().slice(before);
          const gib = (uploads * size) / GiB;
          const row = res[c.name];
          row.mbps.push(mbps(uploads * size, s));
          row.cpu.push((cpuMicros(p.pid) - c0) / 1e6 / gib);
          row.mc.push((text.match(/: Mark-Compact /g) ?? []).length / gib);
          row.scavenges.push((text.match(/: Scavenge /g) ?? []).length / gib);
          row.threads.push(threadCpuDelta(th0, threadCpu(p.pid), gib));
          log(
            `  round ${round + 1} ${c.name}: ${row.mbps.at(-1).toFixed(0)} MB/s, ${row.cpu.at(-1).toFixed(2)} CPU-s/GiB, ` +
              `${row.mc.at(-1).toFixed(1)} Mark-Compacts and ${row.scavenges.at(-1).toFixed(1)} scavenges per GiB; ` +
              `CPU-s/GiB by thread ${JSON.stringify(row.threads.at(-1))}`,
          );
        } finally {
          await p.stop();
        }
      }
    }
  } finally {
    await stack.stop();
    rmrf(dir);
  }
  const summary = Object.fromEntries(
    Object.entries(res).map(([name, r]) => [
      name,
      {
        mbps: r2(median(r.mbps)),
        cpu_s_per_gib: r2(median(r.cpu)),
        mark_compacts_per_gib: r2(median(r.mc)),
        scavenges_per_gib: r2(median(r.scavenges)),
        cpu_s_per_gib_by_thread: Object.fromEntries(
          [...new Set(r.threads.flatMap(Object.keys))].map((k) => [k, r2(median(r.threads.map((t) => t[k] ?? 0)))]),
        ),
      },
    ]),
  );
  printResult('upload-gc', { size_mib: size / MiB, uploads, rounds, ballast_mb: ballastMb, cases: summary });
}

runScript(main);
