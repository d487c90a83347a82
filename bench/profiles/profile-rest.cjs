'use strict';
// CPU profiles of the service under figure 4's load.
//
//   node bench/profiles/profile-rest.cjs [get|head] [--duration=S] [--dist=DIR] [--top=N]
//     Starts the service with --cpu-prof (profile written to BENCH_PROFILE_DIR, default the OS temp dir), runs 64
//     connections of GET /api/assets/{id} (or HEAD /api/assets/hash/{hash}) for S seconds, stops it, and prints the
//     functions with the most self time (the share of all samples), grouped by function and file.
//
//   node bench/profiles/profile-rest.cjs [get|head] --compare=DIR_A,DIR_B [--rounds=N] [--duration=S] [--top=N]
//       [--interval=US]
//     Two builds profiled under the same load: both run as processes with --cpu-prof, the load takes turns (A B, B A,
//     …) as in bench/ab.cjs, and only the samples taken inside each build's load windows count. Printed: each build's
//     CPU time per request (µs, from the profile) and, per function, its self time per request in A and in B and the
//     difference, largest differences first; then the same grouped by package (express, router, pg, prom-client,
//     node:internal, the service's own files). A difference in µs per request is a cost, where a share of samples
//     depends on everything else.
//
//   node bench/profiles/profile-rest.cjs get,graphql --compare=dist,dist [--rounds=N] ...
//     Two loads against each other: A runs the first (here GET /api/assets/{id}), B the second (GraphQL `asset(id)`,
//     figure 7's query, bench/figures/graphql.cjs), each on its own process of the given build, on the same database
//     and assets: where GraphQL's CPU per request goes beyond REST's, function by function. Kinds: get, head, graphql.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  KEY,
  startStack,
  spawnService,
  uploadMultipart,
  cannon,
  log,
  parseArgs,
  runScript,
} = require('../lib/common.cjs');
const { teachAutocannonHead, skipHeadBodies } = require('../figures/metadata.cjs');

/** The function's key: name, file (node_modules and dist prefixes cut) and line. */
function frameKey(f) {
  return `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|src|\.ab-[\w-]+)\//, '$1/')}:${f.lineNumber + 1}`;
}

/** Where a function belongs: a package under node_modules, node's own code, the service, or V8's pseudo-frames. */
function groupOf(f) {
  const url = f.url;
  if (!url) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 13).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:'))
    return url.startsWith('node:internal') ? url.replace(/^node:internal\/([\w]+).*$/, 'node:internal/$1') : url;
  const m = /\/(src\/.*)$/.exec(url);
  return m ? m[1] : url;
}

function top(profileFile, n) {
  const p = JSON.parse(fs.readFileSync(profileFile, 'utf8'));
  const self = new Map();
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const counts = new Map();
  for (const s of p.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
  let total = 0;
  for (const [id, c] of counts) {
    const key = frameKey(byId.get(id).callFrame);
    self.set(key, (self.get(key) ?? 0) + c);
    total += c;
  }
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, c]) => `${((100 * c) / total).toFixed(1).padStart(5)} %  ${k}`);
}

/**
 * Self time (µs) per function key and per group, counting only the samples whose time lies inside `windows`
 * ([start, end] in µs of the monotonic clock that both V8's profile and process.hrtime use). `(idle)` is left out.
 */
function selfTimeIn(profileFile, windows) {
  const p = JSON.parse(fs.readFileSync(profileFile, 'utf8'));
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const byKey = new Map();
  const byGroup = new Map();
  let t = p.startTime;
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i];
    // The sample at t covers the interval up to the next one.
    const dt = i + 1 < p.timeDeltas.length ? p.timeDeltas[i + 1] : 0;
    if (!windows.some(([a, b]) => t >= a && t < b)) continue;
    const f = byId.get(p.samples[i]).callFrame;
    if (f.functionName === '(idle)') continue;
    const key = frameKey(f);
    byKey.set(key, (byKey.get(key) ?? 0) + dt);
    const g = groupOf(f);
    byGroup.set(g, (byGroup.get(g) ?? 0) + dt);
    total += dt;
  }
  return { byKey, byGroup, total };
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** The process's I/O syscall and context-switch counters (/proc), summed over its threads by the kernel. */
function procCounters(pid) {
  const out = {};
  try {
    for (const line of fs.readFileSync(`/proc/${pid}/io`, 'utf8').split('\n')) {
      const [k, v] = line.split(':');
      if (['syscr', 'syscw', 'rchar', 'wchar'].includes(k)) out[k] = Number(v);
    }
    for (const line of fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
      const m = /^(voluntary|nonvoluntary)_ctxt_switches:\s+(\d+)/.exec(line);
      if (m) out[m[1] === 'voluntary' ? 'vcsw' : 'ivcsw'] = Number(m[2]);
    }
    // utime and stime (fields 14 and 15, after the parenthesised name), in µs.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.user_us = (Number(f[11]) * 1e6) / 100;
    out.sys_us = (Number(f[12]) * 1e6) / 100;
  } catch {
    // not Linux: no counters
  }
  return out;
}

function diffTable(a, b, nA, nB, n) {
  const keys = new Set([...a.keys(), ...b.keys()]);
  const rows = [...keys].map((k) => {
    const ua = (a.get(k) ?? 0) / nA;
    const ub = (b.get(k) ?? 0) / nB;
    return { k, ua, ub, d: ub - ua };
  });
  rows.sort((x, y) => Math.abs(y.d) - Math.abs(x.d));
  return rows
    .slice(0, n)
    .map(
      (r) =>
        `${r.ua.toFixed(2).padStart(8)} ${r.ub.toFixed(2).padStart(8)} ${(r.d >= 0 ? '+' : '') + r.d.toFixed(2).padStart(7)}  ${r.k}`,
    );
}

async function seed(stack) {
  const ids = [];
  const hashes = [];
  for (let i = 0; i < 50; i++) {
    const r = await uploadMultipart(stack.svc.url, 1024 + i, { fileName: `m${i}.bin`, tags: 'bench,metadata' });
    ids.push(r.body.id);
    hashes.push(r.body.asset_hash);
  }
  return { ids, hashes };
}

function loadOf(kind, url, { ids, hashes }) {
  if (kind === 'graphql') return { ...require('../figures/graphql.cjs').cycling(url, ids, 'graphql'), connections: 64 };
  let i = 0;
  const paths = kind === 'head' ? hashes.map((h) => `/api/assets/hash/${h}`) : ids.map((id) => `/api/assets/${id}`);
  const method = kind === 'head' ? 'HEAD' : 'GET';
  return {
    url,
    headers: { 'x-api-key': KEY },
    connections: 64,
    requests: [{ method, setupRequest: (req) => ({ ...req, path: paths[i++ % paths.length] }) }],
  };
}

const newestProfile = (dir) =>
  fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(dir, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];

async function compare(kinds, dirs, { duration, rounds, topN, interval }) {
  const stack = await startStack({ prefix: 'profile-ab' });
  const svc = {};
  const profDir = {};
  try {
    const data = await seed(stack);
    await stack.svc.stop();
    for (const k of ['A', 'B']) {
      profDir[k] = fs.mkdtempSync(path.join(process.env.BENCH_PROFILE_DIR ?? os.tmpdir(), `prof-${k}-`));
      svc[k] = await spawnService({
        dataDir: stack.dataDir,
        databaseUrl: stack.databaseUrl,
        nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir[k]}`, `--cpu-prof-interval=${interval}`, '--trace-gc'],
        main: path.resolve(dirs[k], 'src', 'main.js'),
      });
      // --trace-gc prints a line per collection on stdout: scavenges per request measure what a request allocates.
      const s = svc[k];
      s.gc = { scavenges: 0, markCompacts: 0 };
      s.child.stdout.on('data', (d) => {
        const text = String(d);
        s.gc.scavenges += (text.match(/Scavenge/g) ?? []).length;
        s.gc.markCompacts += (text.match(/Mark-Compact/g) ?? []).length;
      });
    }
    if (kinds.A === 'head' || kinds.B === 'head') {
      teachAutocannonHead();
      skipHeadBodies(true);
    }
    for (const k of ['A', 'B']) await cannon({ ...loadOf(kinds[k], svc[k].url, data), duration: 2 });
    const windows = { A: [], B: [] };
    const requests = { A: 0, B: 0 };
    const rps = { A: [], B: [] };
    const counters = { A: {}, B: {} };
    for (let round = 0; round < rounds; round++) {
      for (const k of round % 2 ? ['B', 'A'] : ['A', 'B']) {
        const before = { ...procCounters(svc[k].pid), ...svc[k].gc };
        const start = nowUs();
        const r = await cannon({ ...loadOf(kinds[k], svc[k].url, data), duration });
        windows[k].push([start, nowUs()]);
        const after = { ...procCounters(svc[k].pid), ...svc[k].gc };
        for (const c of Object.keys(after)) counters[k][c] = (counters[k][c] ?? 0) + after[c] - before[c];
        if (!r.ok) throw new Error(`${k}: non-2xx or errors: ${JSON.stringify(r)}`);
        requests[k] += r.total;
        rps[k].push(r.rps);
        log(`  round ${round + 1} ${k}: ${r.rps.toFixed(0)} req/s`);
      }
    }
    for (const k of ['A', 'B']) await svc[k].stop();
    const prof = {};
    for (const k of ['A', 'B']) {
      const file = newestProfile(profDir[k]);
      log(`${k} (${dirs[k]}, ${kinds[k]}): profile ${file}`);
      prof[k] = selfTimeIn(file, windows[k]);
    }
    const [nA, nB] = [requests.A, requests.B];
    log(
      `\nrequests: A ${nA}, B ${nB}; req/s per round A ${rps.A.map((x) => x.toFixed(0)).join(' ')}, B ${rps.B.map((x) => x.toFixed(0)).join(' ')}`,
    );
    log(
      `profiled CPU per request (µs): A ${(prof.A.total / nA).toFixed(1)}, B ${(prof.B.total / nB).toFixed(1)}, B/A ${(prof.B.total / nB / (prof.A.total / nA)).toFixed(3)}`,
    );
    const per = (k, n) =>
      Object.entries(counters[k])
        .map(([c, v]) =>
          c === 'scavenges' || c === 'markCompacts'
            ? `${c} per 10k ${((1e4 * v) / n).toFixed(2)}`
            : `${c} ${(v / n).toFixed(2)}`,
        )
        .join(', ');
    log(`per request (/proc): A ${per('A', nA)}; B ${per('B', nB)}`);
    log(`\nby group: µs per request  A        B     B-A`);
    for (const line of diffTable(prof.A.byGroup, prof.B.byGroup, nA, nB, 30)) log(line);
    log(`\nby function: µs per request  A        B     B-A`);
    for (const line of diffTable(prof.A.byKey, prof.B.byKey, nA, nB, topN)) log(line);
  } finally {
    skipHeadBodies(false);
    for (const k of ['A', 'B']) await svc[k]?.stop();
    await stack.stop();
  }
}

async function main() {
  const { opts, rounds } = parseArgs(process.argv.slice(3));
  const kind = process.argv[2] ?? 'get';
  const duration = Number(opts.duration ?? 10);
  if (opts.compare) {
    const [a, b] = String(opts.compare).split(',');
    if (!a || !b) throw new Error('--compare=DIR_A,DIR_B');
    const [kindA, kindB = kindA] = kind.split(',');
    await compare(
      { A: kindA, B: kindB },
      { A: a, B: b },
      { duration, rounds: rounds ?? 4, topN: Number(opts.top ?? 40), interval: Number(opts.interval ?? 250) },
    );
    return;
  }
  const dir = process.env.BENCH_PROFILE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'prof-'));
  const stack = await startStack({ prefix: 'profile' });
  let svc;
  try {
    const data = await seed(stack);
    await stack.svc.stop();
    svc = await spawnService({
      dataDir: stack.dataDir,
      databaseUrl: stack.databaseUrl,
      nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
      ...(opts.dist ? { main: path.resolve(opts.dist, 'src', 'main.js') } : {}),
    });
    if (kind === 'head') {
      teachAutocannonHead();
      skipHeadBodies(true);
    }
    const load = loadOf(kind, svc.url, data);
    await cannon({ ...load, duration: 2 });
    const r = await cannon({ ...load, duration });
    log(`${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms`);
    await svc.stop();
    svc = undefined;
    const file = newestProfile(dir);
    log(`profile: ${file}`);
    for (const line of top(file, Number(opts.top ?? 40))) log(line);
  } finally {
    skipHeadBodies(false);
    await svc?.stop();
    await stack.stop();
  }
}

module.exports = { top };

if (require.main === module) runScript(main);
