'use strict';
// A CPU profile of the service during 1 GiB multipart uploads (figure 1's request):
//   node bench/profiles/profile-upload.cjs [--dist=DIR] [--uploads=N] [--mib=M] [--top=N]
// Starts the build in DIR (default dist) with `--cpu-prof`, uploads N (default 3) files of M MiB (default 1024) one
// after the other, stops the service and prints the upload speeds and where its main thread's CPU went (the ingest
// worker's SHA-256 is on its own thread, not in this profile); the service's CPU seconds per GiB from /proc.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  MiB,
  GiB,
  startStack,
  spawnService,
  uploadMultipart,
  cpuMicros,
  now,
  mbps,
  log,
  parseArgs,
  runScript,
} = require('../lib/common.cjs');
const { summarizeDir } = require('../lib/cpu-profile.cjs');

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const dist = path.resolve(args.opts.dist ?? 'dist');
  const uploads = Number(args.opts.uploads ?? 3);
  const size = Number(args.opts.mib ?? 1024) * MiB;
  const top = Number(args.opts.top ?? 30);
  const profDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cpuprof-'));
  const stack = await startStack({ prefix: 'prof-up' });
  let svc;
  try {
    await stack.svc.stop();
    svc = await spawnService({
      dataDir: stack.dataDir,
      databaseUrl: stack.databaseUrl,
      // PROFILE_NODE_ARGS adds flags (`--trace-gc`, say: the service's stdout is this script's stderr).
      nodeArgs: [
        '--cpu-prof',
        `--cpu-prof-dir=${profDir}`,
        ...(process.env.PROFILE_NODE_ARGS ?? '').split(' ').filter(Boolean),
      ],
      main: path.join(dist, 'src', 'main.js'),
    });
    // With --trace-gc: the collections during the uploads, by kind.
    const gcs = {};
    let gcText = '';
    svc.child.stdout.on('data', (d) => (gcText += d));
    for (let i = 0; i < uploads; i++) {
      const c0 = cpuMicros(svc.pid);
      const t0 = now();
      const r = await uploadMultipart(svc.url, size, { fileName: `u${i}.bin` });
      if (r.status !== 201) throw new Error(`upload answered ${r.status}`);
      const s = now() - t0;
      log(
        `  upload ${i + 1}: ${mbps(size, s).toFixed(0)} MB/s, service ${((cpuMicros(svc.pid) - c0) / 1e6 / (size / GiB)).toFixed(2)} CPU-s/GiB`,
      );
    }
    // --trace-gc lines: `[pid:isolate] t ms: <kind> ... <reason>`, counted by kind and reason.
    for (const line of gcText.split('\n')) {
      const m =
        /\] +\d+ ms: (Scavenge|Mark-Compact|Minor Mark-Sweep)\b.*?(allocation failure|GC in old space requested|external memory pressure|finalize incremental marking[^;]*)?;?\s*$/.exec(
          line,
        );
      if (m) gcs[`${m[1]} (${m[2] ?? '?'})`] = (gcs[`${m[1]} (${m[2] ?? '?'})`] ?? 0) + 1;
    }
    if (Object.keys(gcs).length) log(`  collections: ${JSON.stringify(gcs)}`);
    // PROFILE_GC_LINES=N: the first N trace lines as they are (pauses, heap sizes, reasons in full).
    const lines = Number(process.env.PROFILE_GC_LINES ?? 0);
    if (lines > 0)
      for (const l of gcText
        .split('\n')
        .filter((x) => x.includes(' ms: '))
        .slice(0, lines))
        log(`  ${l}`);
    await svc.stop();
    svc = undefined;
  } finally {
    await svc?.stop();
    await stack.stop();
  }
  summarizeDir(profDir, top, console.log, uploads);
}

runScript(main);
