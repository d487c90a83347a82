'use strict';
// Figure 7: GraphQL `asset(id)` (every scalar field of the REST body) against REST GET /api/assets/{id} on the same
// service and assets, 64 connections, interleaved A B A B: req/s ratio and latency.
const {
  KEY,
  startStack,
  spawnService,
  uploadMultipart,
  cannon,
  cannonWithCpu,
  median,
  r2,
  r3,
  log,
  printResult,
} = require('../lib/common.cjs');

const QUERY = `query Bench($id: ID!) { asset(id: $id) { id name size assetHash mimeType tags userMetadata previewUrl previewId
  promptId createdAt updatedAt lastAccessTime isImmutable } }`;

const ASSETS = 50;

/** `--list`: a page of 50 with each item's preview (another asset), against REST's page of 50. */
const LIST_QUERY = `query BenchList { assets(limit: 50) { items { id name size assetHash mimeType tags userMetadata previewUrl
  previewId promptId createdAt updatedAt lastAccessTime isImmutable preview { id name mimeType } } total hasMore } }`;

/** Gives each asset the next one as its preview (what the list workload reads through the batched loader). */
async function seedPreviews(url, ids) {
  for (const [i, id] of ids.entries()) {
    const res = await fetch(`${url}/api/assets/${id}`, {
      method: 'PUT',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ preview_id: ids[(i + 1) % ids.length] }),
    });
    if (res.status !== 200) throw new Error(`PUT preview_id answered ${res.status}`);
  }
}

/**
 * Every GraphQL answer of a run is checked, not only its status: GraphQL reports failures (a resolver's error, a
 * refused variable, a pool timeout) with 200 and an `errors` entry. autocannon reads every body anyway; a refused one
 * counts as a `mismatch`, which `cannon` treats as a failed request. Each answer must begin with its `data` member.
 */
const GRAPHQL_OK = {
  graphql: (body) => body.startsWith('{"data":{"asset":{"id":"') && !body.includes('"errors":'),
  'graphql-list': (body) => body.startsWith('{"data":{"assets":{"items":[{"id":"') && !body.includes('"errors":'),
};

function cycling(url, ids, kind) {
  let i = 0;
  const headers = { 'x-api-key': KEY };
  if (kind === 'graphql-list') {
    return {
      url: url + '/graphql',
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ query: LIST_QUERY }),
      verifyBody: GRAPHQL_OK[kind],
    };
  }
  if (kind === 'rest-list') return { url: url + '/api/assets?limit=50', headers };
  if (kind === 'graphql') {
    return {
      url: url + '/graphql',
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      verifyBody: GRAPHQL_OK[kind],
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => {
            req.body = JSON.stringify({ query: QUERY, variables: { id: ids[i++ % ids.length] } });
            return req;
          },
        },
      ],
    };
  }
  return {
    url,
    headers,
    requests: [
      {
        method: 'GET',
        setupRequest: (req) => {
          req.path = `/api/assets/${ids[i++ % ids.length]}`;
          return req;
        },
      },
    ],
  };
}

async function run(args) {
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const duration = args.smoke ? 1 : 10;
  const connections = 64;
  const stack = await startStack({ prefix: 'graphql' });
  let fresh;
  try {
    const ids = [];
    for (let i = 0; i < (args.smoke ? 5 : ASSETS); i++) {
      const r = await uploadMultipart(stack.svc.url, 512 + i, { fileName: `g${i}.bin`, tags: 'bench,graphql' });
      if (r.status !== 201) throw new Error(`seed upload answered ${r.status}`);
      ids.push(r.body.id);
    }
    const list = Boolean(args.opts?.list);
    if (list) await seedPreviews(stack.svc.url, ids);
    // `--seeding-process`: measure the process that took the uploads (this script's way until the third round);
    // by default a fresh process on the same database and data dir serves the load, as in bench/ab.cjs.
    let url = stack.svc.url;
    if (!args.opts?.['seeding-process']) {
      await stack.svc.stop();
      fresh = await spawnService({ dataDir: stack.dataDir, databaseUrl: stack.databaseUrl });
      url = fresh.url;
    }
    // The GraphQL answer must carry the asset, not errors (autocannon only sees the status).
    const check = await fetch(url + '/graphql', {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify(list ? { query: LIST_QUERY } : { query: QUERY, variables: { id: ids[0] } }),
    }).then((r) => r.json());
    const ok = list
      ? check.data?.assets?.items?.length === Math.min(50, ids.length) && check.data.assets.items[0].preview
      : check.data?.asset?.id === ids[0];
    if (!ok) throw new Error(`GraphQL answered ${JSON.stringify(check).slice(0, 500)}`);
    const gql = cycling(url, ids, list ? 'graphql-list' : 'graphql');
    const rest = cycling(url, ids, list ? 'rest-list' : 'rest');
    if (!args.smoke) {
      await cannon({ ...gql, duration: 1, connections });
      await cannon({ ...rest, duration: 1, connections });
    }
    const g = [];
    const r = [];
    // CPU per request of the service process (/proc) and of this process (autocannon: building requests, reading
    // answers), which share the machine's cores with it.
    const pid = (fresh ?? stack.svc).pid;
    const measured = async (opts) => {
      const own = process.cpuUsage();
      const x = await cannonWithCpu({ ...opts, duration, connections }, pid);
      const used = process.cpuUsage(own);
      return { ...x, clientCpuUs: (used.user + used.system) / x.total };
    };
    for (let i = 0; i < rounds; i++) {
      g.push(await measured(gql));
      r.push(await measured(rest));
      const cpu = (x) => `${x.cpuUs.toFixed(0)} µs service / ${x.clientCpuUs.toFixed(0)} µs client CPU per request`;
      log(
        `  round ${i + 1}: GraphQL ${g[i].rps.toFixed(0)} req/s p50 ${g[i].p50} p99 ${g[i].p99} ms ${cpu(g[i])}; REST ${r[i].rps.toFixed(0)} req/s p50 ${r[i].p50} p99 ${r[i].p99} ms ${cpu(r[i])}`,
      );
      if (!g[i].ok || !r[i].ok)
        throw new Error(
          `non-2xx, errors or GraphQL errors during the run: GraphQL ${JSON.stringify(g[i])}, REST ${JSON.stringify(r[i])}`,
        );
    }
    printResult(list ? 'graphql-list' : 'graphql', {
      process: fresh ? 'fresh (after seeding)' : 'the seeding process',
      workload: list
        ? 'assets(limit: 50) with previews vs GET /api/assets?limit=50'
        : 'asset(id) vs GET /api/assets/{id}',
      connections,
      duration_s: duration,
      rounds,
      graphql: summary(g),
      rest: summary(r),
      service_cpu_ratio_median: r3(median(g.map((x, i) => x.cpuUs / r[i].cpuUs))),
      ratio_median: r3(median(g.map((x, i) => x.rps / r[i].rps))),
      ratios: g.map((x, i) => r3(x.rps / r[i].rps)),
    });
  } finally {
    await fresh?.stop();
    await stack.stop();
  }
}

function summary(xs) {
  const m = (f) => median(xs.map(f));
  return {
    rps: r2(m((x) => x.rps)),
    p50_ms: m((x) => x.p50),
    p99_ms: m((x) => x.p99),
    service_cpu_us_per_request: Math.round(m((x) => x.cpuUs)),
    client_cpu_us_per_request: Math.round(m((x) => x.clientCpuUs)),
  };
}

module.exports = { run, cycling, seedPreviews };
