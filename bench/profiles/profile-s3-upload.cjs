'use strict';
// Where the service's CPU goes on the S3 store on Ceph RGW (bench/figures/s3.cjs): the service runs with --cpu-prof
// (every thread writes its own profile) and --trace-gc; two uploads of 1 GiB, or with --content one upload and then
// two downloads of its content (presigned downloads off, as in the figure); then the number of V8 mark-compacts in
// those rounds (a GiB of short-lived 64 KiB buffers used to cost dozens) and each profile's summary.
//
//   npm run build && node bench/profiles/profile-s3-upload.cjs [--size-mib=N] [--content]
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const c = require('../lib/common.cjs');
const { summarize } = require('../lib/cpu-profile.cjs');
const { startRgw } = require('../lib/rgw.cjs');

async function main() {
  const args = c.parseArgs(process.argv.slice(2));
  const size = Number(args.opts['size-mib'] ?? 1024) * c.MiB;
  const content = Boolean(args.opts.content);
  const dir = c.benchTmp('s3prof');
  const profDir = path.join(dir, 'prof');
  const rgw = await startRgw();
  const pg = await c.startPostgres(path.join(dir, 'postgres'));
  const svc = await c.spawnService({
    dataDir: path.join(dir, 'data'),
    databaseUrl: pg.url,
    env: { ...rgw.env, CONTENT_GC_GRACE_SECONDS: '0', S3_PRESIGNED_DOWNLOADS: 'false' },
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--trace-gc'],
  });
  let gcLines = '';
  svc.child.stdout.on('data', (d) => (gcLines += d));
  const markCompacts = () => (gcLines.match(/Mark-Compact/g) ?? []).length;
  try {
    const round = async (label, fn) => {
      const before = c.cpuMicros(svc.pid);
      const mc = markCompacts();
      const seconds = await fn();
      await c.sleep(200); // the trace of the round's last collections
      const cpu = ((c.cpuMicros(svc.pid) - before) / 1e6).toFixed(2);
      const mbps = c.mbps(size, seconds).toFixed(0);
      c.log(`  ${label}: ${mbps} MB/s, service CPU ${cpu} s, ${markCompacts() - mc} mark-compacts`);
    };
    const upload = async () => {
      const res = await c.uploadMultipart(svc.url, size, { fileName: 'model.safetensors' });
      if (res.status !== 201) throw new Error(`upload answered ${res.status}`);
      return res;
    };
    if (content) {
      const asset = await upload();
      const url = `${svc.url}/api/assets/${asset.body.id}/content`;
      for (let i = 0; i < 2; i++) {
        await round(`content ${i + 1}`, async () => {
          const t0 = c.now();
          const r = spawnSync('curl', ['-sS', '--fail', '-o', '/dev/null', '-H', `x-api-key: ${c.KEY}`, url]);
          if (r.status !== 0) throw new Error(`curl failed: ${r.stderr}`);
          return c.now() - t0;
        });
      }
    } else {
      for (let i = 0; i < 2; i++) {
        await round(`upload ${i + 1}`, async () => {
          const res = await upload();
          await c.requestJson(svc.url, 'DELETE', `/api/assets/${res.body.id}`);
          return res.seconds;
        });
      }
    }
  } finally {
    await svc.stop();
    await pg.stop();
    await rgw.stop();
  }
  for (const f of fs.readdirSync(profDir)) {
    c.log(`\n== ${f}`);
    summarize(JSON.parse(fs.readFileSync(path.join(profDir, f), 'utf8')), 25, c.log);
  }
  c.rmrf(dir);
}

c.runScript(main);
