'use strict';
// A stripped ingest server for the hashing benchmark: the service's own pieces (its multipart parser, FsBlobStore)
// with where the hashing runs as the only variable:
//   inline: DualHasher on the request thread, then FsBlobStore.writeTemp (the service's way before the worker);
//   worker: FsBlobStore.writeTempHashed, the service's way now (SHA-256 + writes on a worker thread, the chunks
//           copied into pooled batch buffers transferred to it and back, BLAKE3 on the request thread);
//   none:   no hashing at all, writeTemp (the ceiling of parse + write + fsync, for comparison only).
// Usage: node ingest-server.cjs <inline|worker|none> <blob dir>; prints `ready <port>`.
const http = require('node:http');
const path = require('node:path');
const { DIST } = require('./common.cjs');
const { DualHasher } = require(path.join(DIST, 'domain', 'content', 'hashing.js'));
const { FsBlobStore } = require(path.join(DIST, 'infra', 'blob-store', 'fs.js'));
const { IngestWorkers } = require(path.join(DIST, 'infra', 'blob-store', 'ingest-pool.js'));
const { MultipartParser, boundaryOf } = require(path.join(DIST, 'http', 'rest', 'multipart-parser.js'));

const [mode, dir] = process.argv.slice(2);
if (!['inline', 'worker', 'none'].includes(mode)) throw new Error('mode: inline, worker or none');

/** The file part's chunks as an async iterable, pausing the request while 4 MiB wait (as the service does). */
function fileChunks(req) {
  const queue = [];
  let queued = 0;
  let wake;
  let ended = false;
  let inFile = false;
  const parser = new MultipartParser(boundaryOf(req.headers['content-type']), {
    partBegin: (p) => (inFile = p.filename !== undefined),
    partData: (d) => {
      if (!inFile) return;
      queue.push(d);
      queued += d.length;
      if (queued >= 4 << 20) req.pause();
      wake?.();
    },
    partEnd: () => (inFile = false),
  });
  req.on('data', (c) => parser.write(c));
  req.on('end', () => {
    ended = true;
    wake?.();
  });
  return (async function* () {
    for (;;) {
      const c = queue.shift();
      if (c) {
        queued -= c.length;
        if (queued < 2 << 20) req.resume();
        yield c;
      } else if (ended) return;
      else await new Promise((r) => (wake = r));
      wake = undefined;
    }
  })();
}

async function* hashed(source, hasher) {
  for await (const chunk of source) {
    hasher?.update(chunk);
    yield chunk;
  }
}

async function main() {
  const store = new FsBlobStore(dir, new IngestWorkers());
  await store.init();
  const server = http.createServer((req, res) => {
    (async () => {
      const source = fileChunks(req);
      if (mode === 'worker') {
        const { temp, digest } = await store.writeTempHashed(source);
        await store.discard(temp);
        return digest;
      }
      const hasher = mode === 'inline' ? new DualHasher() : undefined;
      const temp = await store.writeTemp(hashed(source, hasher));
      await store.discard(temp);
      return hasher ? hasher.digest() : { blake3: '', sha256: '', size: temp.size };
    })().then(
      (d) => res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ ...d, id: 'none' })),
      (err) => res.writeHead(500).end(String(err)),
    );
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack) + '\n');
  process.exit(1);
});
