'use strict';
// A stripped ingest server for the worker-thread experiment of the hashing benchmark: the service's own pieces
// (busboy as in src/http/rest/multipart.ts, DualHasher, FsBlobStore.writeTemp with its fsync) with the hasher as the
// only variable: `inline` (the service's way, on the request thread), `worker` (WorkerHasher, on a worker thread) or
// `none` (no hashing at all: the ceiling of parse + write + fsync, for comparison only).
// Usage: node ingest-server.cjs <inline|worker|none> <blob dir>; prints `ready <port>`.
const http = require('node:http');
const path = require('node:path');
const busboy = require('busboy');
const { DIST } = require('./common.cjs');
const { DualHasher } = require(path.join(DIST, 'domain', 'content', 'hashing.js'));
const { FsBlobStore } = require(path.join(DIST, 'infra', 'blob-store', 'fs.js'));
const { WorkerHasher } = require('./worker-hasher.cjs');

const [mode, dir] = process.argv.slice(2);
if (!['inline', 'worker', 'none'].includes(mode)) throw new Error('mode: inline, worker or none');

/** Counts bytes only. */
class NoHasher {
  size = 0;
  update(chunk) {
    this.size += chunk.length;
  }
  digest() {
    return { blake3: '', sha256: '', size: this.size };
  }
}

async function* hashed(source, hasher) {
  for await (const chunk of source) {
    const wait = hasher.update(chunk);
    if (wait) await wait;
    yield chunk;
  }
}

async function main() {
  const store = new FsBlobStore(dir);
  await store.init();
  const server = http.createServer((req, res) => {
    const bb = busboy({ headers: req.headers });
    let work;
    bb.on('field', () => undefined);
    bb.on('file', (_name, stream) => {
      work = (async () => {
        const hasher = mode === 'worker' ? new WorkerHasher() : mode === 'none' ? new NoHasher() : new DualHasher();
        const temp = await store.writeTemp(hashed(stream, hasher));
        const digest = await hasher.digest();
        await store.discard(temp);
        return digest;
      })();
      work.catch(() => stream.resume());
    });
    bb.on('close', () => {
      work.then(
        (d) => res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ ...d, id: 'none' })),
        (err) => res.writeHead(500).end(String(err)),
      );
    });
    req.pipe(bb);
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack) + '\n');
  process.exit(1);
});
