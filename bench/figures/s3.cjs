'use strict';
// The S3 store on a real S3 server (a throwaway Ceph RGW 16, scripts/ceph-rgw.cjs), each figure against a bare AWS SDK
// client of the same server in the same run, interleaved:
// - upload: a 1 GiB multipart POST /api/assets (hashing, a multipart upload to a temporary key, the server-side copy
//   to the content key) vs the SDK's `Upload` of the same number of bytes from this process (same part size and
//   queue as the service);
// - content: GET /api/assets/{id}/content of that 1 GiB (presigned downloads off: the service streams it) vs a bare
//   node:http server piping the SDK's GetObject of the same object (bench/lib/s3-get-server.cjs), both with curl.
//
//   npm run build && node bench/figures/s3.cjs [--smoke] [--rounds N] [--size-mib N]
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { DeleteObjectCommand, ListObjectsV2Command } = require('@aws-sdk/client-s3');
const c = require('../lib/common.cjs');
const { startRgw, bareUpload: sdkUpload } = require('../lib/rgw.cjs');

const { MiB, KEY } = c;

function curl(url, headers = []) {
  const t0 = c.now();
  const r = spawnSync(
    'curl',
    ['-sS', '--fail', '-o', '/dev/null', '-w', '%{size_download}', ...headers.flatMap((h) => ['-H', h]), url],
    {
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`curl failed: ${r.stderr}`);
  return { seconds: c.now() - t0, bytes: Number(r.stdout) };
}

async function keys(rgw) {
  const res = await rgw.client.send(new ListObjectsV2Command({ Bucket: rgw.bucket }));
  return (res.Contents ?? []).map((o) => o.Key);
}

/**
 * Until the bucket holds no blob (the service's GC moves a deleted asset's blob into the quarantine, `.orphans/`),
 * so rounds do not overlap.
 */
async function drained(rgw) {
  for (let i = 0; i < 600; i++) {
    if ((await keys(rgw)).every((k) => k.includes('.orphans/'))) return;
    await c.sleep(50);
  }
  throw new Error('the bucket was not emptied within 30 s');
}

async function bareUpload(rgw, size) {
  const seconds = await sdkUpload(rgw.client, rgw.bucket, 'bare/upload', size);
  await rgw.client.send(new DeleteObjectCommand({ Bucket: rgw.bucket, Key: 'bare/upload' }));
  return seconds;
}

async function serviceUpload(rgw, svc, size) {
  const res = await c.uploadAndDelete(svc.url, size);
  await drained(rgw);
  return res.seconds;
}

const ratios = (bare, svc) => svc.map((s, i) => c.r3(bare[i] / s));

/**
 * CPU seconds of each party during `fn`: the service, this process (the bare client, and the uploading client), the
 * Ceph daemons (radosgw, the OSD, the monitor). On two cores they compete; this says where the time went.
 */
async function cpuOf(parties, fn) {
  const before = Object.fromEntries(Object.entries(parties).map(([k, pid]) => [k, c.cpuMicros(pid)]));
  const self = process.cpuUsage();
  const value = await fn();
  const used = process.cpuUsage(self);
  const cpu = Object.fromEntries(
    Object.entries(parties).map(([k, pid]) => [k, c.r2((c.cpuMicros(pid) - before[k]) / 1e6)]),
  );
  cpu.bench = c.r2((used.user + used.system) / 1e6);
  return { value, cpu };
}

const fmt = (cpu) =>
  Object.entries(cpu)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');

async function run(args) {
  const size = Number(args.opts['size-mib'] ?? (args.smoke ? 16 : 1024)) * MiB;
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const dir = c.benchTmp('s3');
  const forgetDir = c.onCleanup(() => c.rmrf(dir));
  const rgw = await startRgw();
  const pg = await c.startPostgres(path.join(dir, 'postgres'));
  c.onCleanup(() => pg.stop());
  const svc = await c.spawnService({
    dataDir: path.join(dir, 'data'),
    databaseUrl: pg.url,
    env: { ...rgw.env, S3_PRESIGNED_DOWNLOADS: 'false', CONTENT_GC_GRACE_SECONDS: '0' },
  });
  c.onCleanup(() => svc.stop());
  let bare;
  try {
    const parties = {
      service: svc.pid,
      ...Object.fromEntries([...rgw.cluster.children].map(([name, child]) => [name, child.pid])),
    };
    const up = { service: [], bare: [] };
    const cpu = { upload: { service: [], bare: [] }, content: { service: [], bare: [] } };
    for (let i = 0; i < rounds; i++) {
      const order = i % 2 ? ['bare', 'service'] : ['service', 'bare'];
      for (const who of order) {
        const r = await cpuOf(parties, () => (who === 'bare' ? bareUpload(rgw, size) : serviceUpload(rgw, svc, size)));
        up[who].push(r.value);
        cpu.upload[who].push(r.cpu);
      }
      c.log(
        `  upload ${size / MiB} MiB round ${i + 1}: service ${c.mbps(size, up.service[i]).toFixed(0)} MB/s, bare SDK ${c.mbps(size, up.bare[i]).toFixed(0)} MB/s`,
      );
      c.log(`    CPU s, service's upload: ${fmt(cpu.upload.service[i])}; bare: ${fmt(cpu.upload.bare[i])}`);
      const osd = c.memoryOf(rgw.cluster.children.get('osd.0').pid);
      c.log(`    OSD resident ${(osd.rss / 1e6).toFixed(0)} MB (memstore: deleted objects must not pile up)`);
    }

    const asset = await c.uploadMultipart(svc.url, size, { fileName: 'model.safetensors' });
    if (asset.status !== 201) throw new Error(`upload answered ${asset.status}`);
    const hex = asset.body.asset_hash.slice('blake3:'.length);
    bare = await c.spawnHelper('s3-get-server.cjs', [], {
      ...rgw.env,
      S3_KEY: `${hex.slice(0, 2)}/${hex.slice(2, 4)}/${hex}`,
    });
    parties.bareServer = bare.pid;
    const route = `${svc.url}/api/assets/${asset.body.id}/content`;
    curl(bare.url); // warm both JITs and connections
    curl(route, [`x-api-key: ${KEY}`]);
    const get = { service: [], bare: [] };
    for (let i = 0; i < rounds; i++) {
      const order = i % 2 ? ['bare', 'service'] : ['service', 'bare'];
      for (const who of order) {
        const { value: r, cpu: used } = await cpuOf(parties, async () =>
          who === 'bare' ? curl(bare.url) : curl(route, [`x-api-key: ${KEY}`]),
        );
        if (r.bytes !== size) throw new Error(`${who} sent ${r.bytes} of ${size} bytes`);
        get[who].push(r.seconds);
        cpu.content[who].push(used);
      }
      c.log(
        `  content round ${i + 1}: service ${c.mbps(size, get.service[i]).toFixed(0)} MB/s, bare GetObject ${c.mbps(size, get.bare[i]).toFixed(0)} MB/s`,
      );
      c.log(`    CPU s, service: ${fmt(cpu.content.service[i])}; bare: ${fmt(cpu.content.bare[i])}`);
    }
    await c.requestJson(svc.url, 'DELETE', `/api/assets/${asset.body.id}`);
    await drained(rgw);

    const upRatios = ratios(up.bare, up.service);
    const getRatios = ratios(get.bare, get.service);
    c.printResult('s3', {
      server: 'Ceph RGW 16.2 (one memstore OSD, loopback)',
      size_mib: size / MiB,
      rounds,
      ceph_start_ms: rgw.cluster.startMs,
      upload_service_mbps_median: c.r2(c.median(up.service.map((s) => c.mbps(size, s)))),
      upload_bare_sdk_mbps_median: c.r2(c.median(up.bare.map((s) => c.mbps(size, s)))),
      upload_ratio_to_bare: c.r3(c.median(upRatios)),
      upload_ratios: upRatios,
      content_service_mbps_median: c.r2(c.median(get.service.map((s) => c.mbps(size, s)))),
      content_bare_mbps_median: c.r2(c.median(get.bare.map((s) => c.mbps(size, s)))),
      content_ratio_to_bare: c.r3(c.median(getRatios)),
      content_ratios: getRatios,
      cpu_seconds: cpu,
      target: 0.9,
      met: c.median(upRatios) >= 0.9 && c.median(getRatios) >= 0.9,
    });
  } finally {
    await c.stopAll(bare, svc, pg, rgw);
    forgetDir();
    c.rmrf(dir);
  }
}

module.exports = { run };

c.runFigureScript(module, run);
