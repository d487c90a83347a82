'use strict';
// Shared helpers of the benchmarks: plain CommonJS so they run straight from the repository against the built
// service in dist/ (the service itself is always a separate `node dist/src/main.js` child process).
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const DIST = path.join(ROOT, 'dist', 'src');
const KEY = 'bench-key-0001';
const OWNER = 'bench';
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** Cleanups still to run if the benchmark is interrupted (SIGINT/SIGTERM): stop children, remove temp dirs. */
const cleanups = new Set();
function onCleanup(fn) {
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}
async function runCleanups() {
  for (const fn of [...cleanups].reverse()) {
    cleanups.delete(fn);
    await Promise.resolve()
      .then(fn)
      .catch(() => undefined);
  }
}

function parseArgs(argv) {
  const args = { smoke: false, rounds: undefined, opts: {} };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--smoke') args.smoke = true;
    else if (a === '--rounds') args.rounds = Number(argv[++i]);
    else if (a.startsWith('--rounds=')) args.rounds = Number(a.slice(9));
    else if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      if (eq < 0) args.opts[a.slice(2)] = true;
      else args.opts[a.slice(2, eq)] = a.slice(eq + 1);
    }
  }
  return args;
}

/** Where large temporary files go: BENCH_DIR, else the OS temp dir (the same disk as DATA_DIR in these runs). */
function benchTmp(prefix) {
  const base = process.env.BENCH_DIR || os.tmpdir();
  fs.mkdirSync(base, { recursive: true });
  const dir = fs.mkdtempSync(path.join(base, `asset-bench-${prefix}-`));
  // As root, the embedded PostgreSQL runs as a user of its own, which must be able to enter the directory.
  fs.chmodSync(dir, 0o755);
  return dir;
}

function rmrf(dir) {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}

/** The service's own choice of a free port (below the kernel's range for outgoing connections); needs the build. */
function freePort() {
  return require(path.join(DIST, 'infra', 'embedded-postgres.js')).freePort();
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => Number(process.hrtime.bigint()) / 1e9;

function median(xs) {
  const s = [...xs].filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

const r2 = (x) => Math.round(x * 100) / 100;
const r3 = (x) => Math.round(x * 1000) / 1000;
const mbps = (bytes, seconds) => bytes / seconds / 1e6;

/** Waits until GET url answers 200 (polling every `intervalMs`). */
async function waitReady(url, { timeoutMs = 120_000, intervalMs = 20, child } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child && child.exitCode !== null)
      throw new Error(`the service exited with code ${child.exitCode} before it was ready`);
    const ok = await new Promise((resolve) => {
      const req = http.get(url, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('error', () => resolve(false));
      req.setTimeout(2000, () => req.destroy());
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${url}`);
    await sleep(intervalMs);
  }
}

/** An embedded PostgreSQL owned by the benchmark, so it can seed data and run a baseline against the same server. */
async function startPostgres(dir) {
  const { startEmbeddedPostgres } = require(path.join(DIST, 'infra', 'embedded-postgres.js'));
  const { createLogger } = require(path.join(DIST, 'infra', 'logger.js'));
  const pg = await startEmbeddedPostgres({ dir, database: 'assets', logger: createLogger('warn') });
  return pg;
}

/**
 * The node flags of the service's start path (package.json's `start:built`, the Dockerfile's ENTRYPOINT: V8's heap
 * bounds), given to every build the benchmarks start, so they measure the service as it runs.
 * BENCH_NODE_FLAGS replaces them (empty: none), e.g. to measure what they cost.
 */
const SERVICE_NODE_FLAGS = (
  process.env.BENCH_NODE_FLAGS ?? require(path.join(ROOT, 'package.json')).scripts['start:built']
)
  .split(/\s+/)
  .filter((a) => a.startsWith('--'));

/**
 * Spawns `node dist/src/main.js` with the given environment and waits for /readyz. The child's stderr is kept (last
 * lines) for error reports; stdout logs go nowhere (LOG_LEVEL=warn).
 */
async function spawnService({
  dataDir,
  databaseUrl,
  env = {},
  nodeArgs = [],
  main = path.join(DIST, 'main.js'),
  startFlags = SERVICE_NODE_FLAGS,
}) {
  const port = await freePort();
  const childEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    API_KEYS: `${OWNER}:${KEY}`,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ...env,
  };
  if (databaseUrl) childEnv.DATABASE_URL = databaseUrl;
  else delete childEnv.DATABASE_URL;
  const t0 = now();
  const child = spawn(process.execPath, [...startFlags, ...nodeArgs, main], {
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail = [];
  const keep = (d) => {
    tail.push(String(d));
    if (tail.length > 40) tail.shift();
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitReady(url + '/readyz', { child });
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${err.message}\n${tail.join('')}`);
  }
  const readySeconds = now() - t0;
  return {
    url,
    port,
    pid: child.pid,
    child,
    readySeconds,
    logs: () => tail.join(''),
    stop: () => stopChild(child),
  };
}

function stopChild(child, signal = 'SIGTERM', graceMs = 30_000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill(signal);
  });
}

/**
 * Spawns a helper script of bench/lib that prints `ready <port>`; resolves with its URL, a stop() and what it has
 * printed so far (`output()`: e.g. the `--trace-gc` lines of a helper started with `nodeArgs`).
 */
async function spawnHelper(script, args = [], env = {}, { nodeArgs = [] } = {}) {
  const child = spawn(process.execPath, [...nodeArgs, path.join(__dirname, script), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const forget = onCleanup(() => stopChild(child));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const port = await new Promise((resolve, reject) => {
    child.stdout.on('data', () => {
      const m = /ready (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    output: () => out,
    stop: async () => {
      forget();
      await stopChild(child);
    },
  };
}

/**
 * PostgreSQL (bench-owned) + the service on it (`main`: another build's, as spawnService); `stop()` removes everything.
 */
async function startStack({ env = {}, nodeArgs = [], prefix = 'svc', main, startFlags } = {}) {
  const dir = benchTmp(prefix);
  const pg = await startPostgres(path.join(dir, 'postgres'));
  let svc;
  try {
    svc = await spawnService({
      dataDir: path.join(dir, 'data'),
      databaseUrl: pg.url,
      env,
      nodeArgs,
      ...(main ? { main } : {}),
      ...(startFlags ? { startFlags } : {}),
    });
  } catch (err) {
    await pg.stop().catch(() => undefined);
    rmrf(dir);
    throw err;
  }
  const stop = async () => {
    forget();
    await svc.stop().catch(() => undefined);
    await pg.stop().catch(() => undefined);
    rmrf(dir);
  };
  const forget = onCleanup(stop);
  return { dir, dataDir: path.join(dir, 'data'), databaseUrl: pg.url, svc, stop };
}

/** Peak (VmHWM) and current (VmRSS) resident set of a process, in bytes. */
function memoryOf(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k) => Number((new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s) || [])[1]) * 1024;
    return { hwm: kb('VmHWM'), rss: kb('VmRSS') };
  } catch {
    return { hwm: NaN, rss: NaN };
  }
}

let clockTicks;
/** CPU time (user + system) a process has used so far, in microseconds (Linux /proc; NaN elsewhere). */
function cpuMicros(pid) {
  try {
    return statCpuSeconds(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')) * 1e6;
  } catch {
    return NaN;
  }
}

/** User + system CPU seconds of a /proc stat line (a process's or a thread's). */
function statCpuSeconds(stat) {
  clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  // The name is in parentheses and may hold spaces or parentheses itself: the fields start after the last ')'.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / clockTicks;
}

/**
 * CPU seconds of a process per kind of thread (each thread of /proc/<pid>/task, by its name: MainThread, V8Worker for
 * V8's collector and compiler helpers, WorkerThread for worker_threads, libuv-worker for the fs thread pool), so a
 * profile says which thread a change moved. Threads that ended are not counted.
 */
function threadCpu(pid) {
  const out = {};
  let tasks = [];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const t of tasks) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      out[name] = (out[name] ?? 0) + statCpuSeconds(stat);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

/** The growth of each kind's CPU seconds between two threadCpu() readings, per `per` (e.g. GiB), rounded. */
function threadCpuDelta(before, after, per = 1) {
  return Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, Math.round(((v - (before[k] ?? 0)) / per) * 100) / 100])
      .filter(([, v]) => v > 0),
  );
}

/** Environment variables written `K=V,K2=V2` (a bench option's or variable's value) as an object. */
function envList(text) {
  return Object.fromEntries(
    String(text ?? '')
      .split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

/** Resets a process's VmHWM to its current RSS (Linux `clear_refs` 5), so a peak can be measured per phase. */
function resetPeak(pid) {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** A buffer of random bytes that upload bodies are cut from (random, so nothing downstream can compress it). */
let pattern;
function randomPattern() {
  return (pattern ??= crypto.randomBytes(16 * MiB));
}

/** A file of `size` bytes cut from randomPattern (its folder made), as the CLI benchmarks' model files. */
function writePatternFile(file, size) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const fd = fs.openSync(file, 'w');
  const src = randomPattern();
  for (let off = 0; off < size; off += src.length) fs.writeSync(fd, src, 0, Math.min(src.length, size - off), off);
  fs.closeSync(fd);
}

/** New content for the same file: only its first 32 bytes change, so nothing a service stores matches it. */
function freshen(file) {
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, crypto.randomBytes(32), 0, 32, 0);
  fs.closeSync(fd);
}

/**
 * Streams `size` bytes as a multipart upload to POST /api/assets, generated on the fly (the client never holds the
 * file). The first 16 bytes are unique per call, so every upload is new content. Resolves with the status, the
 * parsed body and the wall time from first byte sent to response end.
 */
function uploadMultipart(baseUrl, size, { fileName = 'bench.bin', tags = 'bench', key = KEY, chunk = MiB } = {}) {
  const boundary = '----bench' + crypto.randomBytes(12).toString('hex');
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="tags"\r\n\r\n${tags}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const src = randomPattern();
  const unique = crypto.randomBytes(16);
  const u = new URL('/api/assets', baseUrl);
  return new Promise((resolve, reject) => {
    const t0 = now();
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        // A connection of its own: a kept-alive one may be closed by the server's idle timeout just as it is reused
        // (EPIPE), and one TCP handshake is nothing next to the upload.
        agent: false,
        headers: {
          'x-api-key': key,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': String(head.length + size + tail.length),
        },
      },
      (res) => {
        const parts = [];
        res.on('data', (d) => parts.push(d));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          let body;
          try {
            body = JSON.parse(text);
          } catch {
            body = text;
          }
          resolve({ status: res.statusCode, body, seconds: now() - t0 });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    let sent = 0;
    let off = 0;
    req.write(head);
    const pump = () => {
      while (sent < size) {
        const n = Math.min(chunk, size - sent, src.length - off);
        let buf = src.subarray(off, off + n);
        if (sent === 0) buf = Buffer.concat([unique, buf.subarray(Math.min(16, n))]).subarray(0, n);
        sent += n;
        off = (off + n) % src.length;
        if (!req.write(buf)) {
          req.once('drain', pump);
          return;
        }
      }
      req.end(tail);
    };
    pump();
  });
}

/** A multipart upload of `size` bytes (uploadMultipart) that must store them all, then its asset deleted at once. */
async function uploadAndDelete(baseUrl, size) {
  const res = await uploadMultipart(baseUrl, size);
  if (res.status !== 201 || res.body.size !== size)
    throw new Error(`upload answered ${res.status}: ${JSON.stringify(res.body)}`);
  await requestJson(baseUrl, 'DELETE', `/api/assets/${res.body.id}`);
  return res;
}

/** Simple JSON request with the bench key. */
function requestJson(baseUrl, method, pathname, body, { key = KEY, headers = {} } = {}) {
  const u = new URL(pathname, baseUrl);
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method,
        headers: {
          'x-api-key': key,
          ...(data ? { 'content-type': 'application/json', 'content-length': data.length } : {}),
          ...headers,
        },
      },
      (res) => {
        const parts = [];
        res.on('data', (d) => parts.push(d));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          let json;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = text;
          }
          resolve({ status: res.statusCode, headers: res.headers, body: json });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** `dd`-style baseline: sequential 1 MiB writes of `size` bytes, then fsync, on the disk of `dir`. */
function ddWrite(dir, size) {
  const file = path.join(dir, `dd-${crypto.randomBytes(4).toString('hex')}`);
  const count = Math.max(1, Math.round(size / MiB));
  const t0 = now();
  const r = spawnSync('dd', ['if=/dev/zero', `of=${file}`, 'bs=1M', `count=${count}`, 'conv=fsync'], {
    encoding: 'utf8',
  });
  const seconds = now() - t0;
  fs.rmSync(file, { force: true });
  if (r.status !== 0) throw new Error(`dd failed: ${r.stderr}`);
  return { bytes: count * MiB, seconds, mbps: mbps(count * MiB, seconds) };
}

/** Runs `autocannon` programmatically; returns req/s and latency percentiles in ms. */
async function cannon(opts) {
  const autocannon = require('autocannon');
  const res = await autocannon({ connections: 64, duration: 10, ...opts });
  // `mismatches`: answers whose body the workload's `verifyBody` refused (GraphQL: an `errors` entry under a 200).
  const bad = res.non2xx + res.errors + res.timeouts + (res.mismatches ?? 0);
  return {
    rps: res.requests.average,
    total: res.requests.total,
    p50: res.latency.p50,
    p90: res.latency.p90,
    p99: res.latency.p99,
    max: res.latency.max,
    non2xx: res.non2xx,
    errors: res.errors + res.timeouts,
    mismatches: res.mismatches ?? 0,
    ok: bad === 0,
  };
}

/** One autocannon run, with the CPU time process `pid` used per request in it (from /proc; NaN without a pid). */
async function cannonWithCpu(opts, pid) {
  const before = cpuMicros(pid);
  const r = await cannon(opts);
  return { ...r, cpuUs: pid ? (cpuMicros(pid) - before) / r.total : NaN };
}

/**
 * Runs `main` as a script: on SIGINT/SIGTERM and on failure, what was registered with onCleanup (servers, temp
 * dirs) is cleaned up first; exits with main's status.
 */
function runScript(main) {
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.once(sig, () => {
      log(`${sig}: cleaning up`);
      runCleanups().finally(() => process.exit(130));
    });
  }
  main().then(
    () => process.exit(process.exitCode ?? 0),
    async (err) => {
      log(`benchmark failed: ${err && err.stack ? err.stack : err}`);
      await runCleanups();
      process.exit(1);
    },
  );
}

/** A figure's file run with node directly (not through bench/run.cjs): the machine's facts, then `run` as a script. */
function runFigureScript(mod, run) {
  if (require.main !== mod) return;
  runScript(() => {
    log(`machine: ${JSON.stringify(machineFacts())}`);
    return run(parseArgs(process.argv.slice(2)));
  });
}

/** Stops each of `parties` (services, servers; undefined ones skipped) in order, whatever the others do. */
async function stopAll(...parties) {
  for (const p of parties) await p?.stop().catch(() => undefined);
}

function machineFacts() {
  const cpus = os.cpus();
  let disk = '';
  try {
    const df = spawnSync('df', ['-h', '--output=source,fstype,size,avail', os.tmpdir()], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')[1];
    disk = df ? df.replace(/\s+/g, ' ') : '';
  } catch {
    // ignore
  }
  return {
    date: new Date().toISOString(),
    cpu: `${cpus.length} x ${cpus[0]?.model ?? 'unknown'}`,
    memory_gib: r2(os.totalmem() / GiB),
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    disk,
  };
}

/** Prints the one result line every script ends with (`RESULT <name> <json>`), which the smoke test checks. */
function printResult(name, result) {
  process.stdout.write(`RESULT ${name} ${JSON.stringify(result)}\n`);
}

function log(...args) {
  process.stderr.write(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ') + '\n');
}

module.exports = {
  onCleanup,
  runCleanups,
  ROOT,
  DIST,
  SERVICE_NODE_FLAGS,
  KEY,
  OWNER,
  MiB,
  GiB,
  parseArgs,
  benchTmp,
  rmrf,
  freePort,
  sleep,
  now,
  median,
  percentile,
  r2,
  r3,
  mbps,
  waitReady,
  startPostgres,
  spawnService,
  stopChild,
  startStack,
  spawnHelper,
  memoryOf,
  cpuMicros,
  threadCpu,
  threadCpuDelta,
  envList,
  resetPeak,
  randomPattern,
  writePatternFile,
  freshen,
  uploadMultipart,
  uploadAndDelete,
  requestJson,
  ddWrite,
  cannon,
  cannonWithCpu,
  runScript,
  runFigureScript,
  stopAll,
  machineFacts,
  printResult,
  log,
};
