'use strict';
// Where the service's CPU goes on a 1 GiB upload to the S3 store on Ceph RGW (bench/figures/s3.cjs): the service
// runs with --cpu-prof (every thread writes its own profile), two uploads, then each profile's summary.
//
//   npm run build && node bench/profiles/profile-s3-upload.cjs [--size-mib N]
const fs = require('node:fs');
const path = require('node:path');
const c = require('../lib/common.cjs');
const { summarize } = require('../lib/cpu-profile.cjs');
const { startRgw } = require('../lib/rgw.cjs');

async function main() {
  const args = c.parseArgs(process.argv.slice(2));
  const size = Number(args.opts['size-mib'] ?? 1024) * c.MiB;
  const dir = c.benchTmp('s3prof');
  const profDir = path.join(dir, 'prof');
  const rgw = await startRgw();
  const pg = await c.startPostgres(path.join(dir, 'postgres'));
  const svc = await c.spawnService({
    dataDir: path.join(dir, 'data'),
    databaseUrl: pg.url,
    env: { ...rgw.env, CONTENT_GC_GRACE_SECONDS: '0' },
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
  });
  try {
    for (let i = 0; i < 2; i++) {
      const before = c.cpuMicros(svc.pid);
      const res = await c.uploadMultipart(svc.url, size);
      if (res.status !== 201) throw new Error(`upload answered ${res.status}`);
      c.log(
        `  upload ${i + 1}: ${c.mbps(size, res.seconds).toFixed(0)} MB/s, service CPU ${((c.cpuMicros(svc.pid) - before) / 1e6).toFixed(2)} s`,
      );
      await c.requestJson(svc.url, 'DELETE', `/api/assets/${res.body.id}`);
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
