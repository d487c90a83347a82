'use strict';
// Why `assets pull` reads its content GET itself (src/cli/assets/block-get.ts) rather than through an HTTP client
// library: `node bench/profiles/cli-receive.cjs [--mib=N] [--rounds=N]` GETs one stored file of N MiB (default 1024)
// from the service's content route, body discarded, with curl, node:http (`for await` over the response), undici
// (`request`, 4 MiB highWaterMark) and the CLI's block reader (from dist/), each a process of its own, interleaved per
// round, and prints each one's wall time and CPU seconds (user + system, /usr/bin/time). CPU per GiB is what the pull
// competes for with the service on a small machine.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const {
  KEY,
  DIST,
  MiB,
  benchTmp,
  rmrf,
  onCleanup,
  startStack,
  now,
  log,
  parseArgs,
  runScript,
} = require('../lib/common.cjs');

const VARIANTS = ['curl', 'node-http', 'undici', 'block-get'];

/**
 * The client side, in a process of its own: `node cli-receive.cjs client <variant> <url>`; prints the bytes received.
 */
async function client(variant, url) {
  let total = 0;
  if (variant === 'node-http') {
    const http = require('node:http');
    const res = await new Promise((resolve, reject) =>
      http.get(url, { headers: { 'x-api-key': KEY } }, resolve).on('error', reject),
    );
    for await (const c of res) total += c.length;
  } else if (variant === 'undici') {
    const res = await require('undici').request(url, { headers: { 'x-api-key': KEY }, highWaterMark: 4 * MiB });
    for await (const c of res.body) total += c.length;
  } else if (variant === 'block-get') {
    const { getBlocks } = require(path.join(DIST, 'cli', 'assets', 'block-get.js'));
    const body = await getBlocks(new URL(url), { 'x-api-key': KEY });
    await body.pipeTo(async (b) => void (total += b.length));
  } else throw new Error(`unknown variant ${variant}`);
  process.stdout.write(String(total));
}

async function main() {
  const { opts, rounds = 3 } = parseArgs(process.argv.slice(2));
  const size = Number(opts.mib ?? 1024) * MiB;
  const work = benchTmp('cli-receive');
  const forget = onCleanup(() => rmrf(work));
  const stack = await startStack({ prefix: 'cli-receive' });
  try {
    const file = path.join(work, 'f.bin');
    spawnSync('dd', ['if=/dev/urandom', `of=${file}`, 'bs=1M', `count=${size / MiB}`]);
    const up = spawnSync(
      'curl',
      ['-sS', '--fail', '-H', `x-api-key: ${KEY}`, '-F', `file=@${file}`, `${stack.svc.url}/api/assets`],
      { encoding: 'utf8' },
    );
    const url = `${stack.svc.url}/api/assets/${JSON.parse(up.stdout).id}/content`;
    fs.rmSync(file);
    const cpu = Object.fromEntries(VARIANTS.map((v) => [v, []]));
    for (let round = 1; round <= rounds; round++) {
      for (const v of VARIANTS) {
        const cmd =
          v === 'curl'
            ? ['curl', '-sS', '--fail', '-H', `x-api-key: ${KEY}`, '-o', '/dev/null', url]
            : [process.execPath, __filename, 'client', v, url];
        const t0 = now();
        const r = spawnSync('/usr/bin/time', ['-f', 'CPU %U %S', ...cmd], { encoding: 'utf8' });
        const seconds = now() - t0;
        const m = /CPU ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
        if (r.status !== 0 || !m || (v !== 'curl' && Number(r.stdout) !== size))
          throw new Error(`${v} failed: ${r.stderr}`);
        const c = Number(m[1]) + Number(m[2]);
        cpu[v].push(c);
        log(
          `round ${round} ${v.padEnd(10)} ${seconds.toFixed(2)} s, CPU ${c.toFixed(2)} s (user ${m[1]}, sys ${m[2]}): ${((c * 1024 * MiB) / size).toFixed(2)} CPU-s per GiB`,
        );
      }
    }
    const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
    log(
      `median CPU-s per GiB: ${VARIANTS.map((v) => `${v} ${((med(cpu[v]) * 1024 * MiB) / size).toFixed(2)}`).join(', ')}`,
    );
  } finally {
    await stack.stop();
    forget();
    rmrf(work);
  }
}

if (process.argv[2] === 'client')
  client(process.argv[3], process.argv[4]).catch((err) => (console.error(err), process.exit(1)));
else if (require.main === module) runScript(main);
