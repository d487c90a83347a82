'use strict';
// Where the time of `assets push` / `assets pull` goes: `node bench/profiles/profile-cli.cjs push|pull [--mib=N]
// [--rounds=N] [--top=N] [--chunk=MiB] [--dist=DIR]`. On one service stack, each round runs curl (-F for push, -o for
// pull) and the CLI on the same file, and prints their wall time, the CPU time of the curl and CLI processes (user and
// system, from /usr/bin/time) and the kernel's dirty and writeback page totals before each run (a pull writes the file:
// what the kernel still has to write back from the previous run slows the next). The last round's CLI run is profiled
// (--cpu-prof, main thread): the functions with the most self time.
// push: `--cli=ARGS|ARGS…` runs the CLI once per variant in each round, each with its own push arguments (e.g.
// `--cli=|--chunk-size 64` for one PATCH and 64 MiB PATCHes; `@DIR` first: the CLI of another build), after curl and
// the native BLAKE3 of the file alone (one thread, 4 MiB reads: the hash phase's floor); each CLI run prints its phase
// times (hidden --timings).
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  MiB,
  KEY,
  DIST,
  benchTmp,
  rmrf,
  onCleanup,
  startStack,
  writePatternFile,
  freshen,
  requestJson,
  cpuMicros,
  now,
  log,
  parseArgs,
  runScript,
} = require('../lib/common.cjs');
const { top } = require('./profile-rest.cjs');

const cpu = (t) => `CPU ${t.cpu.toFixed(2)} s: user ${t.user.toFixed(2)}, sys ${t.sys.toFixed(2)}`;

/**
 * A process that hashes one file with the native BLAKE3 (one thread, 4 MiB reads into a buffer off the page
 * boundary: see src/cli/assets/off-page.ts), as bench/figures/cli.cjs's baseline.
 */
const HASH_ONE = path.join(__dirname, '..', 'lib', 'blake3-file.cjs');

function meminfo() {
  const m = Object.fromEntries(
    fs
      .readFileSync('/proc/meminfo', 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => [l.split(':')[0], Number(l.split(':')[1].trim().split(' ')[0]) * 1024]),
  );
  return `dirty ${(m.Dirty / MiB).toFixed(0)} MiB, writeback ${(m.Writeback / MiB).toFixed(0)} MiB`;
}

/** Runs `cmd args` under /usr/bin/time: wall seconds, CPU seconds (user + system) and stdout. */
function timed(cmd, args, env) {
  spawnSync('sync'); // as bench/figures/cli.cjs: no run pays for an earlier one's writeback
  const t0 = now();
  const r = spawnSync('/usr/bin/time', ['-f', 'CPU %U %S', cmd, ...args], {
    env,
    encoding: 'utf8',
    maxBuffer: 64 * MiB,
  });
  const seconds = now() - t0;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  const m = /CPU ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
  return {
    seconds,
    cpu: m ? Number(m[1]) + Number(m[2]) : NaN,
    user: m ? Number(m[1]) : NaN,
    sys: m ? Number(m[2]) : NaN,
    stdout: r.stdout,
  };
}

async function main() {
  const kind = process.argv[2] ?? 'pull';
  const { opts, rounds = 3 } = parseArgs(process.argv.slice(3));
  const size = Number(opts.mib ?? 1024) * MiB;
  const cliMain = path.join(opts.dist ? path.resolve(opts.dist, 'src') : DIST, 'cli', 'assets', 'main.js');
  const profDir = fs.mkdtempSync(path.join(os.tmpdir(), 'prof-cli-'));
  const work = benchTmp('profile-cli');
  const forget = onCleanup(() => rmrf(work));
  const stack = await startStack({ prefix: 'profile-cli', env: { CONTENT_GC_GRACE_SECONDS: '0' } });
  const url = stack.svc.url;
  const env = {
    PATH: process.env.PATH,
    ASSETS_URL: url,
    ASSETS_API_KEY: KEY,
    XDG_CACHE_HOME: path.join(work, 'cache'),
    HOME: work,
  };
  const cliArgs = (args, prof, main = cliMain) => [
    ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []),
    main,
    ...args,
    '--json',
  ];
  try {
    const file = path.join(work, 'one', 'model.safetensors');
    writePatternFile(file, size);
    const curl = (args) => timed('curl', ['-sS', '--fail', '-H', `x-api-key: ${KEY}`, ...args], env);
    const del = (id) => requestJson(url, 'DELETE', `/api/assets/${id}`);
    let assetId;
    if (kind === 'pull') {
      freshen(file);
      assetId = JSON.parse(timed(process.execPath, cliArgs(['push', file, '--tag', 'profile-pull']), env).stdout)
        .files[0].asset_id;
    }
    for (let i = 0; i < rounds; i++) {
      const prof = i === rounds - 1;
      let c;
      let p;
      if (kind === 'pull') {
        const before = meminfo();
        c = curl(['-o', path.join(work, 'curl.out'), `${url}/api/assets/${assetId}/content`]);
        fs.rmSync(path.join(work, 'curl.out'));
        const between = meminfo();
        p = timed(process.execPath, cliArgs(['pull', path.join(work, 'pulled'), '--tag', 'profile-pull'], prof), env);
        rmrf(path.join(work, 'pulled'));
        log(`  before curl: ${before}; before pull: ${between}`);
      } else {
        freshen(file);
        let s0 = cpuMicros(stack.svc.pid);
        c = curl(['-o', '/dev/null', '-F', `file=@${file}`, `${url}/api/assets`]);
        const curlSvc = (cpuMicros(stack.svc.pid) - s0) / 1e6;
        await del((await requestJson(url, 'GET', '/api/assets?limit=1&sort=created_at&order=desc')).body.assets[0].id);
        const h = timed(process.execPath, [HASH_ONE, file], env);
        log(
          `push ${size / MiB} MiB round ${i + 1}: curl ${c.seconds.toFixed(2)} s (${cpu(c)}; service CPU ${curlSvc.toFixed(2)} s); native BLAKE3 alone ${h.seconds.toFixed(2)} s (${cpu(h)})`,
        );
        const variants = String(opts.cli ?? '').split('|');
        for (const [v, extra] of variants.entries()) {
          freshen(file);
          // `@DIR` in a variant: the CLI of that build (another dist dir under a checkout), e.g. `--cli=|@.ab-new`.
          const words = extra.split(' ').filter(Boolean);
          const build = words[0]?.startsWith('@')
            ? path.join(path.resolve(words.shift().slice(1)), 'src', 'cli', 'assets', 'main.js')
            : cliMain;
          const args = [
            'push',
            file,
            '--timings',
            ...(opts.chunk !== undefined ? ['--chunk-size', String(opts.chunk)] : []),
            ...words,
          ];
          s0 = cpuMicros(stack.svc.pid);
          p = timed(process.execPath, cliArgs(args, prof && v === variants.length - 1, build), env);
          const svc = (cpuMicros(stack.svc.pid) - s0) / 1e6;
          const res = JSON.parse(p.stdout).files[0];
          await del(res.asset_id);
          log(
            `  assets push ${extra || '(defaults)'}: ${p.seconds.toFixed(2)} s (${cpu(p)}; service CPU ${svc.toFixed(2)} s), ratio ${(c.seconds / p.seconds).toFixed(3)}; phases (ms) ${JSON.stringify(res.timings)}`,
          );
        }
        continue;
      }
      log(
        `${kind} ${size / MiB} MiB round ${i + 1}: curl ${c.seconds.toFixed(2)} s (${cpu(c)}), assets ${p.seconds.toFixed(2)} s (${cpu(p)}), ratio ${(c.seconds / p.seconds).toFixed(3)}`,
      );
    }
    const prof = fs
      .readdirSync(profDir)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => path.join(profDir, f))[0];
    log(`profile: ${prof}`);
    for (const line of top(prof, Number(opts.top ?? 25))) log(line);
  } finally {
    await stack.stop();
    forget();
    rmrf(work);
  }
}

if (require.main === module) runScript(main);
