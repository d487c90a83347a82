'use strict';
// Upload throughput to the S3 blob store (a Ceph RGW on loopback, bench/lib/rgw.cjs) next to the disk store, in the same
// run and interleaved (fs, s3, fs, s3, ...), each on its own service process and database; then the S3 service's peak
// RSS (VmHWM, reset before) during one 2 GiB upload.
//
//   npm run build && node bench/figures/s3-vs-fs-upload.cjs [--smoke] [--rounds N] [--size-mib N] [--peak-mib N]
//
// Prints progress on stderr and one line `RESULT s3-vs-fs-upload <json>` on stdout, like the other benchmarks.
const path = require('node:path');
const { Client } = require('pg');
const c = require('../lib/common.cjs');
const { startRgw, bareUpload } = require('../lib/rgw.cjs');

const { MiB } = c;

async function run(args) {
  const size = Number(args.opts['size-mib'] ?? (args.smoke ? 16 : 512)) * MiB;
  const peakSize = Number(args.opts['peak-mib'] ?? (args.smoke ? 32 : 2048)) * MiB;
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const dir = c.benchTmp('s3fs');
  const forgetDir = c.onCleanup(() => c.rmrf(dir));
  const pg = await c.startPostgres(path.join(dir, 'postgres'));
  c.onCleanup(() => pg.stop());
  const admin = new Client({ connectionString: pg.url });
  await admin.connect();
  await admin.query('CREATE DATABASE assets_s3');
  await admin.end();
  const s3 = await startRgw();
  const common = { CONTENT_GC_GRACE_SECONDS: '0' };
  const fsSvc = await c.spawnService({ dataDir: path.join(dir, 'data-fs'), databaseUrl: pg.url, env: common });
  c.onCleanup(() => fsSvc.stop());
  const s3Svc = await c.spawnService({
    dataDir: path.join(dir, 'data-s3'),
    databaseUrl: pg.url.replace(/\/assets$/, '/assets_s3'),
    env: { ...common, ...s3.env },
  });
  c.onCleanup(() => s3Svc.stop());

  // Each upload's asset deleted at once, freeing the space for the next round (grace 0: the GC job removes the blob).
  const once = async (svc, bytes) => c.mbps(bytes, (await c.uploadAndDelete(svc.url, bytes)).seconds);
  // What the endpoint itself takes: the SDK's multipart upload straight from this process (same part size and queue
  // as the service), then the server-side copy the service's commit does. No hashing, no HTTP in front.
  const { CopyObjectCommand, DeleteObjectCommand } = require('@aws-sdk/client-s3');
  const { client } = s3;
  const raw = async (bytes) => {
    const t0 = c.now();
    const upload = await bareUpload(client, 'bench', 'raw/tmp', bytes);
    await client.send(new CopyObjectCommand({ Bucket: 'bench', Key: 'raw/copy', CopySource: 'bench/raw/tmp' }));
    const t2 = c.now();
    await client.send(new DeleteObjectCommand({ Bucket: 'bench', Key: 'raw/tmp' }));
    await client.send(new DeleteObjectCommand({ Bucket: 'bench', Key: 'raw/copy' }));
    return { uploadMbps: c.mbps(bytes, upload), copySeconds: t2 - t0 - upload, totalMbps: c.mbps(bytes, t2 - t0) };
  };
  try {
    const fsMbps = [];
    const s3Mbps = [];
    const rawRounds = [];
    for (let i = 0; i < rounds; i++) {
      fsMbps.push(await once(fsSvc, size));
      s3Mbps.push(await once(s3Svc, size));
      rawRounds.push(await raw(size));
      const r = rawRounds.at(-1);
      c.log(
        `  ${size / MiB} MiB round ${i + 1}: fs ${fsMbps.at(-1).toFixed(0)} MB/s, s3 ${s3Mbps.at(-1).toFixed(0)} MB/s; ` +
          `bare SDK to RGW: upload ${r.uploadMbps.toFixed(0)} MB/s, + copy ${r.copySeconds.toFixed(2)} s = ${r.totalMbps.toFixed(0)} MB/s`,
      );
    }
    const reset = c.resetPeak(s3Svc.pid);
    const before = c.memoryOf(s3Svc.pid);
    const peakMbps = await once(s3Svc, peakSize);
    const after = c.memoryOf(s3Svc.pid);
    c.log(
      `  ${peakSize / MiB} MiB to s3: ${peakMbps.toFixed(0)} MB/s, VmHWM ${(after.hwm / 1e6).toFixed(0)} MB (RSS before ${(before.rss / 1e6).toFixed(0)} MB)`,
    );
    c.printResult('s3-vs-fs-upload', {
      size_mib: size / MiB,
      rounds,
      fs_mbps_median: c.r2(c.median(fsMbps)),
      s3_mbps_median: c.r2(c.median(s3Mbps)),
      s3_over_fs: c.r3(c.median(s3Mbps) / c.median(fsMbps)),
      fs_mbps: fsMbps.map(c.r2),
      s3_mbps: s3Mbps.map(c.r2),
      bare_sdk_upload_mbps_median: c.r2(c.median(rawRounds.map((r) => r.uploadMbps))),
      bare_sdk_upload_plus_copy_mbps_median: c.r2(c.median(rawRounds.map((r) => r.totalMbps))),
      s3_over_bare_sdk_upload_plus_copy: c.r3(c.median(s3Mbps) / c.median(rawRounds.map((r) => r.totalMbps))),
      peak_upload_mib: peakSize / MiB,
      peak_upload_s3_mbps: c.r2(peakMbps),
      s3_service_peak_rss_mb: c.r2(after.hwm / 1e6),
      s3_service_rss_before_mb: c.r2(before.rss / 1e6),
      peak_rss_during: `one ${peakSize / MiB} MiB upload to S3 (VmHWM of the service process${reset ? ', reset before it' : ', since start'})`,
      notes:
        'Ceph RGW 16 (one memstore OSD, in memory) is the S3 endpoint; the S3 figure includes the multipart upload to a temporary key and the server-side copy to the content key',
    });
  } finally {
    await c.stopAll(s3Svc, fsSvc, s3, pg);
    forgetDir();
    c.rmrf(dir);
  }
}

module.exports = { run };

c.runFigureScript(module, run);
