'use strict';
// The read buffer of the CLI's hashing thread (src/cli/assets/file-hash.worker.ts): `node bench/profiles/cli-hash.cjs
// [--mib=N] [--rounds=N] [--reads=KiB+skew,…]` hashes one N MiB file (default 1024, in the page cache: a push hashes
// what it is about to send, a re-push what it sent) with the native BLAKE3 addon, one reused buffer per variant: reads
// of KiB into a buffer that starts `skew` bytes past a fresh allocation (Node allocates large buffers page-aligned);
// each run a fresh process (as the CLI's hashing thread, whose first large buffer is a fresh allocation), the
// variants interleaved in each round. Prints the wall time and CPU seconds (user, system:
// process.cpuUsage) of each and its time and CPU relative to `4096+0` (4 MiB reads, page-aligned: the CLI before).
// A variant `cli@DIR` hashes with the CLI's own hashing thread of the build in DIR (`FileHasher` of
// DIR/src/cli/assets/file-hasher.js, one thread): e.g. `--reads=4096+64,cli@dist,cli@.ab-main` compares the build's
// thread (reads overlapping the hashing) with a plain loop of the same reads and with another build's thread.
// Why the skew: the kernel's copy out of the page cache into a page-aligned buffer (source and destination at the
// same offset in their pages) costs ~4x the system time of any other offset on this machine (AMD EPYC, virtualized).
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { blake3File } = require('../lib/blake3-file.cjs');
const {
  MiB,
  benchTmp,
  rmrf,
  onCleanup,
  writePatternFile,
  now,
  median,
  r3,
  log,
  printResult,
  parseArgs,
  runScript,
} = require('../lib/common.cjs');

function hashOnce(file, variant) {
  const [kib, skew] = variant.split('+').map(Number);
  const buf = Buffer.allocUnsafeSlow(kib * 1024 + skew).subarray(skew);
  const c0 = process.cpuUsage();
  const t0 = now();
  const hex = blake3File(file, buf);
  const seconds = now() - t0;
  const c = process.cpuUsage(c0);
  return { seconds, user: c.user / 1e6, sys: c.system / 1e6, hex };
}

/** The CLI's hashing thread of the build in `dir`. */
async function hashWithCli(file, dir) {
  const { FileHasher } = require(path.resolve(dir, 'src/cli/assets/file-hasher.js'));
  const c0 = process.cpuUsage();
  const t0 = now();
  const hasher = new FileHasher(1);
  const hex = (await hasher.hashFile(file, 'blake3')).replace(/^blake3:/, '');
  const seconds = now() - t0;
  const c = process.cpuUsage(c0);
  await hasher.close?.();
  return { seconds, user: c.user / 1e6, sys: c.system / 1e6, hex };
}

/** hashOnce in a process of its own. */
function hashInChild(file, variant) {
  const r = spawnSync(process.execPath, [__filename, 'child', file, variant], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`hashing with ${variant} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function main() {
  const { opts, rounds = 3 } = parseArgs(process.argv.slice(2));
  const size = Number(opts.mib ?? 1024) * MiB;
  const BASE = '4096+0';
  const reads = String(opts.reads ?? '4096+0,4096+64,1024+64,256+64,256+0').split(',');
  if (!reads.includes(BASE)) reads.push(BASE);
  const work = benchTmp('cli-hash');
  const forget = onCleanup(() => rmrf(work));
  try {
    const file = path.join(work, 'file');
    writePatternFile(file, size);
    hashOnce(file, BASE); // page cache warm
    const per = new Map(reads.map((r) => [r, []]));
    const cpuPer = new Map(reads.map((r) => [r, []]));
    for (let i = 0; i < rounds; i++) {
      const order = i % 2 ? [...reads].reverse() : reads;
      const got = new Map(order.map((r) => [r, hashInChild(file, r)]));
      if (new Set([...got.values()].map((g) => g.hex)).size !== 1)
        throw new Error('the read sizes disagree on the hash');
      const base = got.get(BASE);
      for (const r of reads) {
        const g = got.get(r);
        per.get(r).push(g.seconds / base.seconds);
        cpuPer.get(r).push((g.user + g.sys) / (base.user + base.sys));
        log(
          `round ${i + 1}: ${r}: ${g.seconds.toFixed(3)} s (user ${g.user.toFixed(2)}, sys ${g.sys.toFixed(2)}), time ${(g.seconds / base.seconds).toFixed(3)}, CPU ${((g.user + g.sys) / (base.user + base.sys)).toFixed(3)} of ${BASE}`,
        );
      }
    }
    printResult('cli-hash', {
      mib: size / MiB,
      rounds,
      time_vs_base: Object.fromEntries(reads.map((r) => [r, r3(median(per.get(r)))])),
      cpu_vs_base: Object.fromEntries(reads.map((r) => [r, r3(median(cpuPer.get(r)))])),
    });
  } finally {
    forget();
    rmrf(work);
  }
}

if (require.main === module) {
  if (process.argv[2] === 'child') {
    const [file, variant] = process.argv.slice(3);
    const done = (r) => process.stdout.write(JSON.stringify(r), () => process.exit(0));
    if (variant.startsWith('cli@')) hashWithCli(file, variant.slice(4)).then(done);
    else done(hashOnce(file, variant));
  } else runScript(main);
}
