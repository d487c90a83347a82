'use strict';
// The service's RSS through a sequence of uploads on one process (sampled every 50 ms from /proc): by default a tus
// upload, a multipart upload, a tus upload again (ORDER=tus,multipart,tus), each of MIB MiB (default 4096), each
// started once the previous blob is removed (deleteAndSettle). What bench/figures/tus-upload.cjs's "peak during tus" is
// made of: the RSS the previous upload left plus what the tus upload adds.
//   MIB=4096 ORDER=tus,multipart,tus node bench/profiles/tus-rss.cjs
const fs = require('node:fs');
const B = require('node:path').join(__dirname, '..');
const { MiB, startStack, uploadMultipart, memoryOf, mbps } = require(B + '/lib/common.cjs');
const { uploadTus, deleteAndSettle } = require(B + '/lib/tus-client.cjs');
function smaps(pid) {
  // anon rss by mapping size class
  try {
    const s = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const g = (k) => Number((new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s) || [])[1]) / 1024;
    return `anon ${g('Anonymous').toFixed(0)} file ${(g('Rss') - g('Anonymous')).toFixed(0)}`;
  } catch {
    return '';
  }
}
(async () => {
  const size = Number(process.env.MIB || 4096) * MiB;
  const stack = await startStack({
    prefix: 'rss',
    env: { CONTENT_GC_GRACE_SECONDS: '0', MAX_UPLOAD_BYTES: String(size * 2) },
    nodeArgs: (process.env.NODE_ARGS || '').split(' ').filter(Boolean),
  });
  const pid = stack.svc.pid;
  let peak = 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, memoryOf(pid).rss);
  }, 50);
  const phase = async (name, fn) => {
    peak = memoryOf(pid).rss;
    const before = peak;
    const t = await fn();
    console.log(
      `${name}: ${t} rss before ${(before / 1e6).toFixed(0)} MB, peak ${(peak / 1e6).toFixed(0)} MB, after ${(memoryOf(pid).rss / 1e6).toFixed(0)} MB (${smaps(pid)})`,
    );
  };
  try {
    console.log(`start: rss ${(memoryOf(pid).rss / 1e6).toFixed(0)} MB`);
    for (const kind of (process.env.ORDER || 'tus,multipart,tus').split(',')) {
      await phase(kind, async () => {
        if (kind === 'tus') {
          const t = await uploadTus(stack.svc.url, size, 64 * MiB);
          await deleteAndSettle(stack.svc.url, stack.dataDir, t.assetId);
          return `${mbps(size, t.seconds).toFixed(0)} MB/s`;
        }
        const m = await uploadMultipart(stack.svc.url, size);
        await deleteAndSettle(stack.svc.url, stack.dataDir, m.body.id);
        return `${mbps(size, m.seconds).toFixed(0)} MB/s`;
      });
    }
  } finally {
    clearInterval(timer);
    await stack.stop();
  }
})();
