'use strict';
// Two builds of the service in the same run: `node bench/ab.cjs <distA> <distB> <kind>... [--rounds N] [--duration=S]`.
// Both run as processes and take turns (A B, B A, …); printed per build: the figure of each round and the medians
// of the per-round B/A ratios. Several kinds run one after the other (each on fresh processes), then a summary line
// per kind; `metadata` stands for `rest rest-head` (figure 4). Issue 11's set against the old build:
//   node bench/ab.cjs .ab-old .ab-new upload metadata content download --rounds 3
// Kinds:
//   graphql | rest | rest-head | graphql-list | rest-list   64 connections (autocannon) for S seconds per turn, on one
//       PostgreSQL and one data dir: GraphQL `asset(id)`, REST GET /api/assets/{id} (figure 7's workloads,
//       bench/figures/graphql.cjs), HEAD /api/assets/hash/{hash} (figure 4's second route), or their list forms;
//       req/s, p99 and the CPU time the service process used per request (/proc). Every GraphQL answer's body is
//       checked: one with `errors` (or without its `data`) fails the run, as a non-2xx status does.
//   content    GET /api/assets/{id}/content of 1 GiB (bench/figures/content.cjs), both builds and the bare node:http
//       server interleaved, on fresh processes and again after 15 s of metadata load on each; MiB/s, CPU s per GiB.
//   upload     a 1 GiB multipart upload (figure 1); MB/s.
//   tus        a 1 GiB (BENCH_AB_TUS_MIB) tus upload in 64 MiB PATCHes (BENCH_TUS_PATCH_MIB), one connection
//       (bench/lib/tus-client.cjs); MB/s, and the median wait of a PATCH from its last byte to its answer. Each upload
//       starts once the previous one's blob is removed and the disk synced (BENCH_TUS_SETTLE=0: at once).
//   download   a 1 GiB download task from the local mirror (figure 6); each build on its own PostgreSQL and data
//       dir, so each process's job worker takes its own tasks; MB/s and the service's CPU seconds per GiB (/proc).
// For a change that has no run-time switch. A build of another commit, for example:
//   git worktree add /tmp/old <rev> && (cd /tmp/old && npm install && npm run build)
//   cp -r dist .ab-new   # this tree's build; a dist dir must sit under a checkout so node_modules resolves
//   node bench/ab.cjs /tmp/old/dist .ab-new graphql
// The GraphQL figure's baseline, Apollo Server with its defaults over the same schema (bench/lib/apollo-defaults.cjs):
//   node bench/ab.cjs bench/lib/apollo-defaults.cjs dist graphql
// Or one build under two settings: AB_ENV_A / AB_ENV_B add environment variables to A's or B's process
// (`K=V,K2=V2`), e.g. the cost of the metrics: AB_ENV_A=METRICS_ENABLED=false node bench/ab.cjs dist dist rest
// AB_FLAGS_A / AB_FLAGS_B add node flags (space-separated) after the start script's, for V8 options NODE_OPTIONS
// refuses: AB_FLAGS_B=--initial-old-space-size=128 node bench/ab.cjs dist dist upload
const path = require('node:path');
const {
  MiB,
  GiB,
  KEY,
  startStack,
  spawnService,
  spawnHelper,
  uploadMultipart,
  requestJson,
  cannon,
  cannonWithCpu,
  cpuMicros,
  median,
  r2,
  r3,
  mbps,
  log,
  printResult,
  parseArgs,
  runScript,
  envList,
} = require('./lib/common.cjs');
const { cycling, seedPreviews } = require('./figures/graphql.cjs');
const { teachAutocannonHead, skipHeadBodies } = require('./figures/metadata.cjs');
const content = require('./figures/content.cjs');
const { viaTask } = require('./figures/download.cjs');
const { uploadTus, deleteAndSettle } = require('./lib/tus-client.cjs');
const LOAD_KINDS = ['graphql', 'rest', 'rest-head', 'graphql-list', 'rest-list'];
const KINDS = [...LOAD_KINDS, 'content', 'upload', 'tus', 'download'];

const envOf = (k) => envList(process.env[`AB_ENV_${k}`]);
const flagsOf = (k) => (process.env[`AB_FLAGS_${k}`] ?? '').split(' ').filter(Boolean);
// A build is a dist dir (its src/main.js), or a script that serves like one (bench/lib/apollo-defaults.cjs).
const mainOf = (dir) => (/\.c?js$/.test(dir) ? path.resolve(dir) : path.resolve(dir, 'src', 'main.js'));
const order = (round) => (round % 2 ? ['B', 'A'] : ['A', 'B']);

/** The service's two builds on the stack's database and data dir (the stack's own service stopped). */
async function spawnBoth(stack, dirs, env = {}) {
  const svc = {};
  for (const k of ['A', 'B'])
    svc[k] = await spawnService({
      dataDir: stack.dataDir,
      databaseUrl: stack.databaseUrl,
      env: { ...env, ...envOf(k) },
      nodeArgs: flagsOf(k),
      main: mainOf(dirs[k]),
    });
  return svc;
}

async function load(kind, dirs, { rounds, duration }) {
  const stack = await startStack({ prefix: 'ab' });
  let svc = {};
  try {
    svc = await spawnBoth(stack, dirs);
    const ids = [];
    const hashes = [];
    for (let i = 0; i < 50; i++) {
      const up = (await uploadMultipart(stack.svc.url, 1024 + i, { fileName: `m${i}.bin` })).body;
      ids.push(up.id);
      hashes.push(up.asset_hash);
    }
    if (kind.endsWith('-list')) await seedPreviews(stack.svc.url, ids);
    await stack.svc.stop(); // only A and B serve from here on
    let options = (url) => ({ ...cycling(url, ids, kind), duration, connections: 64 });
    if (kind === 'rest-head') {
      teachAutocannonHead();
      skipHeadBodies(true);
      options = (url) => {
        let i = 0;
        const req = {
          method: 'HEAD',
          setupRequest: (r) => ({ ...r, path: `/api/assets/hash/${hashes[i++ % hashes.length]}` }),
        };
        return { url, method: 'HEAD', headers: { 'x-api-key': KEY }, requests: [req], duration, connections: 64 };
      };
    }
    for (const k of ['A', 'B']) await cannon({ ...options(svc[k].url), duration: 2 });
    const res = { A: [], B: [] };
    for (let round = 0; round < rounds; round++) {
      for (const k of order(round)) {
        const r = await cannonWithCpu(options(svc[k].url), svc[k].pid);
        // GraphQL answers are checked body by body (bench/figures/graphql.cjs, verifyBody), not only by status.
        if (!r.ok) throw new Error(`${k}: non-2xx, errors or GraphQL errors in the body: ${JSON.stringify(r)}`);
        res[k].push({ rps: r.rps, p99: r.p99, cpuUs: r.cpuUs });
        log(
          `  round ${round + 1} ${k}: ${r.rps.toFixed(0)} req/s p99 ${r.p99} ms ${res[k].at(-1).cpuUs.toFixed(0)} µs CPU/req`,
        );
      }
    }
    const sum = (xs) => ({
      rps: Math.round(median(xs.map((x) => x.rps))),
      p99_ms: median(xs.map((x) => x.p99)),
      cpu_us_per_request: Math.round(median(xs.map((x) => x.cpuUs))),
    });
    return {
      A: sum(res.A),
      B: sum(res.B),
      rps_ratio_b_to_a: r3(median(res.B.map((x, i) => x.rps / res.A[i].rps))),
      rps_ratios_b_to_a: res.B.map((x, i) => r3(x.rps / res.A[i].rps)),
      cpu_per_request_ratio_b_to_a: r3(median(res.B.map((x, i) => x.cpuUs / res.A[i].cpuUs))),
    };
  } finally {
    skipHeadBodies(false);
    for (const k of ['A', 'B']) await svc[k]?.stop();
    await stack.stop();
  }
}

async function serving(dirs, { rounds }) {
  const stack = await startStack({ prefix: 'ab-content' });
  let svc = {};
  let seed;
  try {
    seed = await content.seedContent(stack.svc.url, stack.dataDir, false);
    await stack.svc.stop();
    svc = await spawnBoth(stack, dirs);
    const phase = (label) => {
      const r = content.interleaved(svc, seed, rounds, label);
      return {
        A: content.summary(seed.size, r.A, r.bare),
        B: content.summary(seed.size, r.B, r.bare),
        bare_mib_s: r2(median(r.bare.map((x) => seed.size / MiB / x.seconds))),
        ratio_b_to_a: r3(median(r.B.map((x, i) => r.A[i].seconds / x.seconds))),
        ratios_b_to_a: r.B.map((x, i) => r3(r.A[i].seconds / x.seconds)),
      };
    };
    const fresh = phase('fresh');
    for (const k of ['A', 'B']) {
      log(`  metadata burst on ${k}: ${content.BURST_SECONDS} s`);
      await content.metadataBurst(svc[k], seed.ids, content.BURST_SECONDS);
    }
    const after = phase('after burst');
    return { size_bytes: seed.size, fresh, after_metadata_burst: after };
  } finally {
    await seed?.bare.stop();
    for (const k of ['A', 'B']) await svc[k]?.stop();
    await stack.stop();
  }
}

async function uploads(dirs, { rounds, tus = false }) {
  const stack = await startStack({ prefix: 'ab-upload', env: { CONTENT_GC_GRACE_SECONDS: '0' } });
  const patchSize = Number(process.env.BENCH_TUS_PATCH_MIB ?? 64) * MiB;
  const tusSize = Number(process.env.BENCH_AB_TUS_MIB ?? 1024) * MiB;
  const tails = { A: [], B: [] };
  let svc = {};
  try {
    await stack.svc.stop();
    svc = await spawnBoth(stack, dirs, { CONTENT_GC_GRACE_SECONDS: '0' });
    const res = { A: [], B: [] };
    for (let round = 0; round < rounds; round++) {
      for (const k of order(round)) {
        if (tus) {
          const up = await uploadTus(svc[k].url, tusSize, patchSize);
          res[k].push(mbps(tusSize, up.seconds));
          tails[k].push(median(up.tails.slice(0, -1)) * 1000);
          log(
            `  round ${round + 1} ${k}: ${res[k].at(-1).toFixed(0)} MB/s, PATCH tail p50 ${tails[k].at(-1).toFixed(1)} ms`,
          );
          // The next upload starts once this blob is removed (bench/lib/tus-client.cjs; BENCH_TUS_SETTLE=0: at once).
          await deleteAndSettle(svc[k].url, stack.dataDir, up.assetId);
          continue;
        }
        const up = await uploadMultipart(svc[k].url, GiB);
        if (up.status !== 201 || up.body.size !== GiB) throw new Error(`${k}: upload answered ${up.status}`);
        res[k].push(mbps(GiB, up.seconds));
        log(`  round ${round + 1} ${k}: ${res[k].at(-1).toFixed(0)} MB/s`);
        await requestJson(svc[k].url, 'DELETE', `/api/assets/${up.body.id}`);
      }
    }
    const out = ratios(res, 'mbps');
    if (tus) for (const k of ['A', 'B']) out[k].patch_tail_ms_p50 = tails[k].map(r2);
    return out;
  } finally {
    for (const k of ['A', 'B']) await svc[k]?.stop();
    await stack.stop();
  }
}

async function downloads(dirs, { rounds }) {
  const server = await spawnHelper('file-server.cjs');
  const env = { HF_ENDPOINT: server.url, DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'false', CONTENT_GC_GRACE_SECONDS: '0' };
  const stacks = {};
  const svc = {};
  try {
    for (const k of ['A', 'B']) {
      stacks[k] = await startStack({ prefix: `ab-download-${k}`, env });
      await stacks[k].svc.stop();
      svc[k] = await spawnService({
        dataDir: stacks[k].dataDir,
        databaseUrl: stacks[k].databaseUrl,
        env: { ...env, ...envOf(k) },
        nodeArgs: flagsOf(k),
        main: mainOf(dirs[k]),
      });
    }
    const res = { A: [], B: [] };
    const cpu = { A: [], B: [] };
    for (let round = 0; round < rounds; round++) {
      for (const k of order(round)) {
        const url = `${server.url}/bench/models/resolve/main/ab${round}${k}-${Date.now()}-${GiB}.bin`;
        const before = cpuMicros(svc[k].pid);
        const t = await viaTask(svc[k].url, url, GiB);
        res[k].push(mbps(GiB, t.seconds));
        cpu[k].push((cpuMicros(svc[k].pid) - before) / 1e6);
        log(
          `  round ${round + 1} ${k}: ${res[k].at(-1).toFixed(0)} MB/s, service CPU ${cpu[k].at(-1).toFixed(2)} s/GiB`,
        );
      }
    }
    return {
      ...ratios(res, 'mbps'),
      cpu_s_per_gib: { A: r2(median(cpu.A)), B: r2(median(cpu.B)) },
      cpu_ratio_b_to_a: r3(median(cpu.B.map((x, i) => x / cpu.A[i]))),
    };
  } finally {
    for (const k of ['A', 'B']) await svc[k]?.stop();
    for (const k of ['A', 'B']) await stacks[k]?.stop();
    await server.stop();
  }
}

function ratios(res, unit) {
  return {
    A: { [unit]: r2(median(res.A)), rounds: res.A.map(r2) },
    B: { [unit]: r2(median(res.B)), rounds: res.B.map(r2) },
    ratio_b_to_a: r3(median(res.B.map((x, i) => x / res.A[i]))),
    ratios_b_to_a: res.B.map((x, i) => r3(x / res.A[i])),
  };
}

/** Kinds named on the command line, in order; `metadata` is figure 4's two routes (`rest`, `rest-head`). */
const ALIASES = { metadata: ['rest', 'rest-head'] };

async function runKind(kind, dirs, { rounds, duration, a, b }) {
  const result = LOAD_KINDS.includes(kind)
    ? await load(kind, dirs, { rounds, duration })
    : kind === 'content'
      ? await serving(dirs, { rounds })
      : kind === 'upload' || kind === 'tus'
        ? await uploads(dirs, { rounds, tus: kind === 'tus' })
        : await downloads(dirs, { rounds });
  printResult('ab', {
    kind,
    rounds,
    builds: {
      A: { dist: a, env: process.env.AB_ENV_A, flags: process.env.AB_FLAGS_A },
      B: { dist: b, env: process.env.AB_ENV_B, flags: process.env.AB_FLAGS_B },
    },
    ...result,
  });
  return result;
}

/** One line per kind: the median B/A ratio of its rounds (content: fresh and after the burst, and B against bare). */
function summaryLine(kind, r) {
  if (kind === 'content') {
    const f = r.fresh;
    const m = r.after_metadata_burst;
    return `content: B/A fresh ${f.ratio_b_to_a} (${f.ratios_b_to_a.join(', ')}), after burst ${m.ratio_b_to_a} (${m.ratios_b_to_a.join(', ')}); B/bare fresh ${f.B.ratio_to_bare}, after burst ${m.B.ratio_to_bare}; A/bare fresh ${f.A.ratio_to_bare}, after burst ${m.A.ratio_to_bare}`;
  }
  if (LOAD_KINDS.includes(kind))
    return `${kind}: B/A req/s ${r.rps_ratio_b_to_a} (${r.rps_ratios_b_to_a.join(', ')}), p99 ${r.A.p99_ms} / ${r.B.p99_ms} ms, CPU/req ${r.cpu_per_request_ratio_b_to_a}`;
  const cpu =
    r.cpu_ratio_b_to_a === undefined
      ? ''
      : `, CPU/GiB ${r.cpu_s_per_gib.A} / ${r.cpu_s_per_gib.B} s (${r.cpu_ratio_b_to_a})`;
  return `${kind}: B/A MB/s ${r.ratio_b_to_a} (${r.ratios_b_to_a.join(', ')}), ${r.A.mbps} / ${r.B.mbps}${cpu}`;
}

async function main() {
  const argv = process.argv.slice(2);
  const [a, b] = argv;
  // Kinds are the words after the two builds, up to the first option (`--rounds N` takes the next word).
  const words = [];
  for (let i = 2; i < argv.length && !argv[i].startsWith('--'); i++) words.push(argv[i]);
  const kinds = (words.length ? words : ['graphql']).flatMap((k) => ALIASES[k] ?? [k]);
  const usage = `usage: node bench/ab.cjs <distA> <distB> [${[...KINDS, ...Object.keys(ALIASES)].join('|')}]... [--rounds N] [--duration=S]`;
  if (!a || !b || kinds.some((k) => !KINDS.includes(k))) throw new Error(usage);
  const args = parseArgs(argv.slice(2 + words.length));
  const duration = Number(args.opts.duration ?? 8);
  const dirs = { A: a, B: b };
  const lines = [];
  for (const kind of kinds) {
    const rounds = args.rounds ?? (LOAD_KINDS.includes(kind) ? 4 : 3);
    log(`== ${kind} (${rounds} rounds, ${new Date().toISOString()})`);
    const result = await runKind(kind, dirs, { rounds, duration, a, b });
    try {
      lines.push(summaryLine(kind, result));
    } catch (err) {
      lines.push(`${kind}: (no summary: ${err.message}; see its RESULT line)`);
    }
  }
  if (kinds.length > 1) log(`\nsummary (A = ${a}, B = ${b}):\n  ${lines.join('\n  ')}`);
}

runScript(main);
