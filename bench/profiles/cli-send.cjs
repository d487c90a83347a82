'use strict';
// What sending a file costs the CLI (src/cli/assets/tus-file-stack.ts): `node bench/profiles/cli-send.cjs [--mib=N]
// [--rounds=N] [--variants=KiB+skew:async|sync,…]` sends one N MiB file (default 1024, in the page cache) as the body
// of one HTTP request to a local node:http server that discards it (a process of its own), with `curl -T` and with
// the CLI's sending loop under each variant: reads of KiB into two reused buffers that start `skew` bytes past a fresh
// allocation, read with FileHandle.read (async, the thread pool) or fs.readSync (sync, the main thread), each buffer
// reused once the socket's write callback has run. Each run is a process of its own (its first buffers fresh, as the
// CLI's), interleaved per round; prints wall time and CPU seconds (user, system) per GiB, and each variant's CPU
// relative to `8192+0:async` (the CLI before: 8 MiB page-aligned buffers).
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
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

const BASE = '8192+0:async';

/** The sender, in a process of its own: prints {seconds, user, sys}. */
async function send(port, file, variant) {
  const http = require('node:http');
  const fsp = require('node:fs/promises');
  const [sizes, mode] = variant.split(':');
  const [kib, skew] = sizes.split('+').map(Number);
  const READ = kib * 1024;
  const size = fs.statSync(file).size;
  const pool = [0, 1].map(() => Buffer.allocUnsafeSlow(READ + skew).subarray(skew));
  const c0 = process.cpuUsage();
  const t0 = now();
  const req = http.request({
    host: '127.0.0.1',
    port,
    method: 'PATCH',
    path: '/',
    headers: { 'content-length': size },
  });
  const done = new Promise((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      res.resume();
      res.on('end', resolve);
    });
  });
  const fh = await fsp.open(file, 'r');
  let pos = 0;
  let wake;
  while (pos < size) {
    while (pool.length === 0) await new Promise((r) => (wake = r));
    const buf = pool.pop();
    const n =
      mode === 'sync'
        ? fs.readSync(fh.fd, buf, 0, Math.min(READ, size - pos), pos)
        : (await fh.read(buf, 0, Math.min(READ, size - pos), pos)).bytesRead;
    pos += n;
    req.write(buf.subarray(0, n), () => {
      pool.push(buf);
      const w = wake;
      wake = undefined;
      w?.();
    });
  }
  req.end();
  await done;
  await fh.close();
  const c = process.cpuUsage(c0);
  process.stdout.write(JSON.stringify({ seconds: now() - t0, user: c.user / 1e6, sys: c.system / 1e6 }));
}

function sink() {
  const http = require('node:http');
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end());
  });
  srv.listen(0, '127.0.0.1', () => process.stdout.write(`${srv.address().port}\n`));
}

function runVariant(port, file, variant) {
  if (variant === 'curl') {
    const t0 = now();
    const r = spawnSync(
      '/usr/bin/time',
      ['-f', 'CPU %U %S', 'curl', '-sS', '--fail', '-o', '/dev/null', '-T', file, `http://127.0.0.1:${port}/`],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`curl failed: ${r.stderr}`);
    const m = /CPU ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
    return { seconds: now() - t0, user: Number(m[1]), sys: Number(m[2]) };
  }
  const r = spawnSync(process.execPath, [__filename, 'send', String(port), file, variant], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${variant} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function main() {
  const { opts, rounds = 3 } = parseArgs(process.argv.slice(2));
  const size = Number(opts.mib ?? 1024) * MiB;
  const variants = [
    'curl',
    ...String(opts.variants ?? '8192+0:async,8192+64:async,1024+64:async,256+64:sync').split(','),
  ];
  if (!variants.includes(BASE)) variants.push(BASE);
  const work = benchTmp('cli-send');
  const srv = spawn(process.execPath, [__filename, 'sink'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const forget = onCleanup(() => {
    srv.kill();
    rmrf(work);
  });
  try {
    const port = await new Promise((resolve) => srv.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
    const file = path.join(work, 'file');
    writePatternFile(file, size);
    runVariant(port, file, BASE); // page cache and sink warm
    const cpuPer = new Map(variants.map((v) => [v, []]));
    const gib = size / (1024 * MiB);
    for (let i = 0; i < rounds; i++) {
      const order = i % 2 ? [...variants].reverse() : variants;
      const got = new Map(order.map((v) => [v, runVariant(port, file, v)]));
      const base = got.get(BASE);
      for (const v of variants) {
        const g = got.get(v);
        const rel = (g.user + g.sys) / (base.user + base.sys);
        cpuPer.get(v).push(rel);
        log(
          `round ${i + 1}: ${v}: ${g.seconds.toFixed(3)} s, CPU per GiB ${((g.user + g.sys) / gib).toFixed(2)} s (user ${(g.user / gib).toFixed(2)}, sys ${(g.sys / gib).toFixed(2)}), CPU ${rel.toFixed(3)} of ${BASE}`,
        );
      }
    }
    printResult('cli-send', {
      mib: size / MiB,
      rounds,
      cpu_vs_base: Object.fromEntries(variants.map((v) => [v, r3(median(cpuPer.get(v)))])),
    });
  } finally {
    forget();
    srv.kill();
    rmrf(work);
  }
}

if (require.main === module) {
  if (process.argv[2] === 'send')
    send(Number(process.argv[3]), process.argv[4], process.argv[5]).catch(
      (err) => (console.error(err), process.exit(1)),
    );
  else if (process.argv[2] === 'sink') sink();
  else runScript(main);
}
