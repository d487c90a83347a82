'use strict';
// `npm run bench -- <name> [--smoke] [--rounds N]`: runs one benchmark (or `all`) against the built service.
// Each script prints progress on stderr and ends with one line `RESULT <name> <json>` on stdout. The figures are in
// bench/figures/, the profiles and experiments behind them (run each with node) in bench/profiles/, shared code in
// bench/lib/.
const { spawn } = require('node:child_process');
const path = require('node:path');
const { parseArgs, machineFacts, log, runScript } = require('./lib/common.cjs');

const BENCHES = {
  upload: 'upload ingest 1 GiB / 4 GiB multipart vs dd with fsync; peak RSS',
  hashing: 'BLAKE3 + SHA-256 one pass vs each alone; worker-thread hashing vs main thread',
  concurrent: '8 concurrent uploads x 256 MiB vs a single stream',
  metadata: 'GET /api/assets/{id} and HEAD /api/assets/hash/{hash} vs bare node:http + pg',
  listing: 'GET /api/assets?include_tags=..&limit=100 with 100k assets; EXPLAIN',
  download: 'download task of 1 GiB from a local server vs curl -o',
  content: 'GET /api/assets/{id}/content of 1 GiB vs bare node:http + fs.createReadStream',
  graphql:
    'GraphQL asset(id) vs REST GET /api/assets/{id}; --list: assets(limit: 50) with previews vs GET /api/assets?limit=50',
  startup: 'node dist/src/main.js to /readyz 200, cold and warm',
  's3-vs-fs-upload': 'upload throughput to the S3 store (Ceph RGW) vs the disk store; S3 peak RSS',
  s3: 'on Ceph RGW: upload of 1 GiB vs a bare SDK Upload; content served vs a bare SDK GetObject piped to node:http',
  thumbnails: 'thumbnails of 1,000 uploaded 1024x1024 PNGs through the service vs sharp alone',
  grid: 'the asset browser in headless Chromium: navigation to 100 thumbnails shown, vs a static page of the same 100 images',
  'grid-thumbs':
    "the grid's 100 signed thumbnail URLs over 6 connections: wall time and time to first byte vs a static server of the same bytes; --prof",
  'tus-upload': 'tus upload in 64 MiB PATCHes vs multipart of the same size (BENCH_TUS_MIB); peak RSS',
  export: 'bulk export ZIP of N MiB of assets vs cat of the blobs + fsync (BENCH_EXPORT_MIB)',
  'zip-writer':
    'export archive writers on the same files: zip-writer.ts vs a plain copy [vs yazl] (BENCH_ZIP_MIB); peak RSS',
  memory:
    "the service's RSS after 64-connection GET and HEAD load (BENCH_MEMORY_LOAD_S), then a multipart and a tus upload (BENCH_MEMORY_MIB, 4096); --also=<dist> compares a build",
  cli: 'assets push vs curl -F; re-push of a stored tree vs BLAKE3 hashing (0 bytes sent); assets pull vs curl -o',
  import:
    'POST /api/assets/seed of 10,000 small images vs copy+fsync+INSERT; second import; assets push vs curl -F | xargs -P 4; --models: vs cp -r + sync',
};

// Figures that are scripts of their own (their own options, no --smoke sizes): run as a child process.
const SCRIPTS = {
  'auth-flood': "a valid client's latency and p99 alone and while a flood of random API keys hits the service",
  gc: 'seconds to reclaim 10,000 contents whose grace period is over (--count, --limit)',
  'iso-date': "the GraphQL Date scalar's formatter vs Date.prototype.toISOString and the library scalar",
};

function runChild(name, rest) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'figures', `${name}.cjs`), ...rest], {
      stdio: 'inherit',
    });
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${name} ended with ${signal ?? code}`)),
    );
  });
}

async function main() {
  const [name, ...rest] = process.argv.slice(2);
  if (!name || name === '--help' || name === 'list') {
    log('usage: npm run bench -- <name>|all [--smoke] [--rounds N]\n');
    for (const [k, v] of Object.entries({ ...BENCHES, ...SCRIPTS })) log(`  ${k.padEnd(16)} ${v}`);
    log('\nprofiles and experiments: node bench/profiles/<name>.cjs (each file says what it measures and how)');
    process.exitCode = name ? 0 : 2;
    return;
  }
  const args = parseArgs(rest);
  const names = name === 'all' ? [...Object.keys(BENCHES), ...(args.smoke ? [] : Object.keys(SCRIPTS))] : [name];
  for (const n of names) {
    if (!BENCHES[n] && !SCRIPTS[n]) {
      throw new Error(`unknown benchmark ${n}; one of: ${Object.keys({ ...BENCHES, ...SCRIPTS }).join(', ')}, all`);
    }
  }
  log(`machine: ${JSON.stringify(machineFacts())}`);
  for (const n of names) {
    log(`== ${n}: ${BENCHES[n] ?? SCRIPTS[n]}${args.smoke ? ' (smoke)' : ''}`);
    if (SCRIPTS[n]) await runChild(n, rest);
    else await require(path.join(__dirname, 'figures', `${n}.cjs`)).run(args);
  }
}

runScript(main);
