'use strict';
// A stripped ingest server for the hashing benchmark: the service's own pieces (its multipart reading, FsBlobStore)
// with where the hashing runs as the only variable:
//   inline: DualHasher on the request thread, then FsBlobStore.writeTemp (the service's way before the worker);
//   worker: FsBlobStore.writeTempHashed, the service's way now (the writes on the request thread, the chunks copied
//           into batch slots a worker thread reads for BLAKE3 and SHA-256);
//   worker-b3-caller: the same with BLAKE3 on the request thread (the service's way until 2026-12-03);
//   none:   no hashing at all, writeTemp (the ceiling of parse + write + fsync, for comparison only).
// The multipart reading is the service's own (parseMultipartUpload: @fastify/busboy, the file part streamed to the
// receiver); with `busboy` as a third argument, plain busboy's (graphql-upload-minimal's), for the record of why the
// service took @fastify/busboy. Usage: node ingest-server.cjs <inline|worker|none> <blob dir> [service|busboy];
// prints `ready <port>`.
const http = require('node:http');
const path = require('node:path');
const { DIST } = require('./common.cjs');
const { DualHasher } = require(path.join(DIST, 'domain', 'content', 'hashing.js'));
const { FsBlobStore } = require(path.join(DIST, 'infra', 'blob-store', 'fs.js'));
const { IngestWorkers } = require(path.join(DIST, 'infra', 'blob-store', 'ingest-pool.js'));
const { parseMultipartUpload } = require(path.join(DIST, 'http', 'rest', 'multipart.js'));

const [mode, dir, parserKind = 'service'] = process.argv.slice(2);
if (!['inline', 'worker', 'worker-b3-caller', 'none'].includes(mode))
  throw new Error('mode: inline, worker, worker-b3-caller or none');
if (!['service', 'busboy'].includes(parserKind)) throw new Error('parser: service or busboy');

/** The file part through plain busboy (resolved from graphql-upload-minimal, which depends on it). */
function busboyFile(req, receive) {
  const busboy = require(require.resolve('busboy', { paths: [require.resolve('graphql-upload-minimal')] }));
  return new Promise((resolve, reject) => {
    const bb = busboy({ headers: req.headers });
    let file;
    bb.on('file', (_name, stream) => (file = receive(stream)));
    bb.on('error', reject);
    bb.on('close', () => resolve(file));
    req.pipe(bb);
  }).then((f) => f);
}

async function* hashed(source, hasher) {
  for await (const chunk of source) {
    hasher?.update(chunk);
    yield chunk;
  }
}

/** writeTempHashed's steps with BLAKE3 on this thread (IngestWorkers' `blake3OnCaller`). */
async function writeTempB3OnCaller(store, workers, source) {
  const job = workers.open({ blake3OnCaller: true });
  async function* hashedCopy() {
    for await (const chunk of source) {
      const wait = job.write(chunk);
      if (wait) await wait;
      yield chunk;
    }
  }
  const temp = await store.writeTemp(hashedCopy());
  return { temp, digest: await job.finish() };
}

async function main() {
  const workers = new IngestWorkers();
  const store = new FsBlobStore(dir, workers);
  await store.init();
  const server = http.createServer((req, res) => {
    const receive = async (source) => {
      if (mode === 'worker' || mode === 'worker-b3-caller') {
        const { temp, digest } =
          mode === 'worker' ? await store.writeTempHashed(source) : await writeTempB3OnCaller(store, workers, source);
        await store.discard(temp);
        return digest;
      }
      const hasher = mode === 'inline' ? new DualHasher() : undefined;
      const temp = await store.writeTemp(hashed(source, hasher));
      await store.discard(temp);
      return hasher ? hasher.digest() : { blake3: '', sha256: '', size: temp.size };
    };
    const receiver = { receiveFile: (bytes) => receive(bytes), discardFile: async () => undefined };
    const parsed =
      parserKind === 'busboy' ? busboyFile(req, receive) : parseMultipartUpload(req, receiver).then((p) => p.file);
    parsed.then(
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
