'use strict';
// Preloaded into the service by `bench/profiles/profile-download.cjs --census` (NODE_OPTIONS=--require): counts the
// chunks the download hands to the ingest pool by the size of their ArrayBuffer (a socket read is at most 64 KiB; a
// chunk in a buffer of ~1 MiB is a join of buffered reads, whose originals are left as garbage), and samples the main
// thread's external memory and ArrayBuffer bytes. Writes JSON to CENSUS_OUT every second. A bench tool only: it wraps
// IngestJob.prototype.write of the build it runs in.
const fs = require('node:fs');
const path = require('node:path');
const v8 = require('node:v8');
const { isMainThread } = require('node:worker_threads');

if (isMainThread && /main\.js$/.test(process.argv[1] ?? '') && process.env.CENSUS_OUT) {
  const pool = require(path.join(path.dirname(process.argv[1]), 'infra', 'blob-store', 'ingest-pool.js'));
  const census = {
    chunks: 0,
    bytes: 0,
    joinedChunks: 0,
    joinedBytes: 0,
    byBufferKiB: {},
    peakArrayBuffersMiB: 0,
    peakExternalMiB: 0,
  };
  const write = pool.IngestJob.prototype.write;
  pool.IngestJob.prototype.write = function (chunk) {
    census.chunks++;
    census.bytes += chunk.length;
    const kib = Math.ceil(chunk.buffer.byteLength / 4096) * 4;
    census.byBufferKiB[kib] = (census.byBufferKiB[kib] ?? 0) + 1;
    if (chunk.buffer.byteLength > 64 * 1024) {
      census.joinedChunks++;
      census.joinedBytes += chunk.length;
    }
    return write.call(this, chunk);
  };
  setInterval(() => {
    census.peakArrayBuffersMiB = Math.max(census.peakArrayBuffersMiB, process.memoryUsage().arrayBuffers / 1048576);
    census.peakExternalMiB = Math.max(census.peakExternalMiB, v8.getHeapStatistics().external_memory / 1048576);
  }, 50).unref();
  setInterval(() => fs.writeFileSync(process.env.CENSUS_OUT, JSON.stringify(census)), 1000).unref();
}
