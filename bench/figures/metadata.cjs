'use strict';
const path = require('node:path');
// Figure 4: GET /api/assets/{id} and HEAD /api/assets/hash/{hash}, 64 connections (autocannon), against a bare
// node:http + pg server running the same indexed SELECT on the same PostgreSQL, interleaved A B A B.
const {
  KEY,
  startStack,
  spawnHelper,
  uploadMultipart,
  cannon,
  cannonWithCpu,
  median,
  r2,
  r3,
  log,
  printResult,
} = require('../lib/common.cjs');

const ASSETS = 50;

/**
 * autocannon's HTTP parser is not told which responses answer a HEAD, so a HEAD response without Content-Length
 * (legal: HEAD has no body) leaves it waiting for a body until the connection closes. While `skipBodies` is set,
 * every response is parsed as bodiless, as a HEAD-aware client would (only HEAD runs set it).
 */
let skipBodies = false;
function teachAutocannonHead() {
  const parserPath = require.resolve('http-parser-js', { paths: [path.dirname(require.resolve('autocannon'))] });
  const { HTTPParser } = require(parserPath);
  const key = HTTPParser.kOnHeadersComplete;
  if (Object.getOwnPropertyDescriptor(HTTPParser.prototype, key)?.set) return;
  Object.defineProperty(HTTPParser.prototype, key, {
    configurable: true,
    get() {
      return this.__onHeadersComplete;
    },
    set(fn) {
      this.__onHeadersComplete = (...a) => {
        const r = fn.apply(this, a);
        return skipBodies ? 1 : r;
      };
    },
  });
}

/** autocannon options that cycle through `paths` (one per request). */
function cycling(url, method, paths, headers) {
  let i = 0;
  return {
    url,
    method,
    headers,
    requests: [
      {
        method,
        setupRequest: (req) => {
          req.path = paths[i++ % paths.length];
          return req;
        },
      },
    ],
  };
}

/** Service against baseline, interleaved per round, with the service's CPU time per request (/proc). */
async function compare(name, svcOpts, baseOpts, { rounds, duration, connections, warm, pid }) {
  // Warm both (JIT, pg connections, caches) before the measured rounds.
  if (warm) {
    await cannon({ ...svcOpts, duration: 1, connections });
    await cannon({ ...baseOpts, duration: 1, connections });
  }
  const s = [];
  const b = [];
  for (let i = 0; i < rounds; i++) {
    s.push(await cannonWithCpu({ ...svcOpts, duration, connections }, pid));
    b.push(await cannon({ ...baseOpts, duration, connections }));
    log(
      `  ${name} round ${i + 1}: service ${s[i].rps.toFixed(0)} req/s p50 ${s[i].p50} p99 ${s[i].p99} ms ${s[i].cpuUs.toFixed(0)} µs CPU/req; ` +
        `baseline ${b[i].rps.toFixed(0)} req/s p50 ${b[i].p50} p99 ${b[i].p99} ms`,
    );
    if (!s[i].ok || !b[i].ok)
      throw new Error(`${name}: non-2xx or errors (service ${JSON.stringify(s[i])}, baseline ${JSON.stringify(b[i])})`);
  }
  const ratio = median(s.map((x, i) => x.rps / b[i].rps));
  const p99 = median(s.map((x) => x.p99));
  const summary = (xs) => ({
    rps: r2(median(xs.map((x) => x.rps))),
    p50_ms: median(xs.map((x) => x.p50)),
    p99_ms: median(xs.map((x) => x.p99)),
  });
  return {
    service: { ...summary(s), cpu_us_per_request: r2(median(s.map((x) => x.cpuUs))) },
    baseline: summary(b),
    ratio_median: r3(ratio),
    ratios: s.map((x, i) => r3(x.rps / b[i].rps)),
    targets: { ratio: 0.6, p99_ms: 25 },
    met: ratio >= 0.6 && p99 < 25,
  };
}

async function run(args) {
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const duration = args.smoke ? 1 : 10;
  const connections = 64;
  const stack = await startStack({ prefix: 'metadata' });
  let base;
  try {
    base = await spawnHelper('baseline-server.cjs', [], { DATABASE_URL: stack.databaseUrl });
    const ids = [];
    const hashes = [];
    for (let i = 0; i < (args.smoke ? 5 : ASSETS); i++) {
      const r = await uploadMultipart(stack.svc.url, 1024 + i, { fileName: `m${i}.bin`, tags: 'bench,metadata' });
      if (r.status !== 201) throw new Error(`seed upload answered ${r.status}`);
      ids.push(r.body.id);
      hashes.push(r.body.asset_hash);
    }
    const headers = { 'x-api-key': KEY };
    const byId = ids.map((id) => `/api/assets/${id}`);
    const byHash = hashes.map((h) => `/api/assets/hash/${h}`);
    const opts = { rounds, duration, connections, warm: !args.smoke, pid: stack.svc.pid };
    const get = await compare(
      'GET /api/assets/{id}',
      cycling(stack.svc.url, 'GET', byId, headers),
      cycling(base.url, 'GET', byId, headers),
      opts,
    );
    teachAutocannonHead();
    skipBodies = true;
    const head = await compare(
      'HEAD /api/assets/hash/{hash}',
      cycling(stack.svc.url, 'HEAD', byHash, headers),
      cycling(base.url, 'HEAD', byHash, headers),
      opts,
    );
    skipBodies = false;
    printResult('metadata', { connections, duration_s: duration, rounds, get_by_id: get, head_by_hash: head });
  } finally {
    await base?.stop();
    await stack.stop();
  }
}

module.exports = { run, teachAutocannonHead, skipHeadBodies: (on) => (skipBodies = on) };
