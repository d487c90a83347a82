'use strict';
// Where the CPU of a listing request goes: `node bench/profiles/profile-listing.cjs [--only=a,b] [--duration=S]
// [--dist=DIR] [--connections=N] [--cpu-prof] [--top=N]`, on the kept seed of `npm run bench -- listing` (BENCH_DATA). For each request
// of that benchmark, 16 connections for S seconds against the service and then the bare server, with the CPU time per
// request of the server process, of PostgreSQL (the postmaster and all its backends) and of the load generator (this
// process), and the response size. `--cpu-prof` profiles the service and prints its top functions by self time.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { KEY, spawnHelper, cannon, cpuMicros, requestJson, log, parseArgs, runScript } = require('../lib/common.cjs');
const { seededStack, cursorAt, cursorsFrom } = require('../figures/listing.cjs');

/** The postmaster and every process it started (backends, walwriter ...), from /proc. */
function postgresPids(postmaster) {
  const out = [postmaster];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = fs.readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ');
      if (Number(f[1]) === postmaster) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** CPU microseconds of PostgreSQL so far: the processes alive now (a backend is per pool connection, long-lived). */
function pgCpu(postmaster) {
  return postgresPids(postmaster).reduce((s, pid) => s + (cpuMicros(pid) || 0), 0);
}

function selfCpu() {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** One URL, or a list of URLs asked in turn (as listing.cjs's `*_distinct` requests). */
function load(base, query) {
  if (typeof query === 'string') return { url: base + query };
  let i = 0;
  return {
    url: base,
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: query[i++ % query.length] }) }],
  };
}

async function measure(url, query, duration, serverPid, postmaster, connections = 16) {
  const headers = { 'x-api-key': KEY };
  await cannon({ ...load(url, query), headers, duration: 1, connections });
  const t = { server: cpuMicros(serverPid), pg: pgCpu(postmaster), load: selfCpu() };
  const r = await cannon({ ...load(url, query), headers, duration, connections });
  const per = (k, now) => Math.round((now - t[k]) / r.total);
  const body = await requestJson(url, 'GET', typeof query === 'string' ? query : query[0]);
  return {
    rps: Math.round(r.rps),
    p50: r.p50,
    p99: r.p99,
    server_us: per('server', cpuMicros(serverPid)),
    pg_us: per('pg', pgCpu(postmaster)),
    load_us: per('load', selfCpu()),
    bytes: Buffer.byteLength(JSON.stringify(body.body)),
  };
}

function top(profileFile, n) {
  const p = JSON.parse(fs.readFileSync(profileFile, 'utf8'));
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const self = new Map();
  let total = 0;
  for (const s of p.samples) {
    const f = byId.get(s).callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|src)\//, '$1/')}:${f.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + 1);
    total++;
  }
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, c]) => `${((100 * c) / total).toFixed(1).padStart(5)} %  ${k}`);
}

async function main() {
  const { opts } = parseArgs(process.argv.slice(2));
  const duration = Number(opts.duration ?? 10);
  const profDir = opts['cpu-prof'] ? fs.mkdtempSync(path.join(os.tmpdir(), 'listing-prof-')) : undefined;
  const serviceOpts = {
    ...(profDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] } : {}),
    ...(opts.dist ? { main: path.resolve(opts.dist, 'src', 'main.js') } : {}),
  };
  const { stack } = await seededStack(2_000_000, true, serviceOpts);
  let base;
  try {
    const keep = path.join(
      process.env.BENCH_DATA || path.join(__dirname, '..', '..', '.bench-data'),
      'listing',
      'postgres',
    );
    const postmaster = Number(fs.readFileSync(path.join(keep, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const deep = await cursorAt(stack.databaseUrl, 500_000, false);
    const deepTagged = await cursorAt(stack.databaseUrl, 100_000, true);
    const TAGS = 'include_tags=models,loras';
    const requests = {
      first_page: '/api/assets?limit=100',
      first_page_tagged: `/api/assets?${TAGS}&limit=100`,
      deep_cursor_page: `/api/assets?limit=100&after=${deep.cursor}`,
      deep_cursor_page_tagged: `/api/assets?${TAGS}&limit=100&after=${deepTagged.cursor}`,
      tags: '/api/tags',
      refine: '/api/assets/tags/refine',
      refine_tagged: `/api/assets/tags/refine?${TAGS}`,
      // 1,000 cursor pages no instance read before (listing.cjs): each one read from the database.
      deep_cursor_pages_distinct: (await cursorsFrom(stack.databaseUrl, 500_000, 1000, 100, false)).map(
        (c) => `/api/assets?limit=100&after=${c}`,
      ),
      deep_cursor_pages_distinct_tagged: (await cursorsFrom(stack.databaseUrl, 100_000, 1000, 100, true)).map(
        (c) => `/api/assets?${TAGS}&limit=100&after=${c}`,
      ),
    };
    const only = typeof opts.only === 'string' ? opts.only.split(',') : undefined;
    base = await spawnHelper('baseline-server.cjs', [], { DATABASE_URL: stack.databaseUrl });
    for (const [name, query] of Object.entries(requests)) {
      if (only && !only.includes(name)) continue;
      const conns = Number(opts.connections ?? 16);
      const s = await measure(stack.svc.url, query, duration, stack.svc.pid, postmaster, conns);
      const b = await measure(base.url, query, duration, base.pid, postmaster, conns);
      log(`  ${name}: service ${JSON.stringify(s)}\n  ${' '.repeat(name.length)}  bare    ${JSON.stringify(b)}`);
    }
  } finally {
    await base?.stop();
    await stack.stop();
  }
  if (profDir) {
    const file = fs.readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (file)
      log(`profile ${path.join(profDir, file)}\n${top(path.join(profDir, file), Number(opts.top ?? 40)).join('\n')}`);
  }
}

if (require.main === module) runScript(main);
