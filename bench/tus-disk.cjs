'use strict';
// The disk alone, no service, no network: how the write-behind policy of a resumable upload's part (PATCH by PATCH,
// each ending with an fsync the client waits for) compares with one streamed file (a multipart upload's), writing the
// same bytes at the same pace, interleaved in the same run. What it isolates: the time the disk is idle between
// PATCHes and what each background fdatasync costs, for different sync policies.
//   node bench/tus-disk.cjs [--mib 1024] [--patch 64] [--pace 600] [--gap 8] [--rounds 3] [--policies every8,first1,par2x2,...]
// `pace`: MB/s at which bytes "arrive" (1 MiB writes, paced); `gap`: ms between a PATCH's fsync and the next PATCH's
// first byte (the answer, the statements, the next request). Policies (background fdatasync, one at a time):
//   everyN     one after every N MiB written since the previous one started (the block writer's BackgroundSync)
//   firstN     the first after N MiB of the PATCH, then one as soon as the previous ends (back to back)
//   concN      everyN, and the final fsync issued without waiting for the running background sync
//   parNxK     one after every N MiB while fewer than K run, the final fsync beside them (e.g. par2x2)
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const os = require('node:os');
const path = require('node:path');

const MiB = 1 << 20;
const args = Object.fromEntries(
  process.argv.slice(2).map((a, i, all) => (a.startsWith('--') ? [a.slice(2), all[i + 1]] : undefined)).filter(Boolean),
);
const total = Number(args.mib ?? 1024) * MiB;
const patch = Number(args.patch ?? 64) * MiB;
const pace = Number(args.pace ?? 600) * 1e6;
const gap = Number(args.gap ?? 8);
const rounds = Number(args.rounds ?? 3);
const policies = (args.policies ?? 'every8,first1,conc8').split(',');
const dir = fs.mkdtempSync(path.join(process.env.BENCH_DIR || os.tmpdir(), 'tus-disk-'));
const block = Buffer.alloc(MiB);
for (let i = 0; i < block.length; i += 4) block.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, i);
const now = () => Number(process.hrtime.bigint()) / 1e9;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class Syncer {
  constructor(fh, policy) {
    this.fh = fh;
    const m = /^(every|first|conc|par)(\d+)(?:x(\d+))?$/.exec(policy);
    if (!m) throw new Error(`unknown policy ${policy}`);
    this.kind = m[1];
    this.n = Number(m[2]) * MiB;
    this.k = Number(m[3] ?? 1);
    this.since = 0;
    this.running = undefined;
    this.count = 0;
    this.inflight = new Set();
  }
  wrote(len) {
    this.since += len;
    if (this.kind === 'par') {
      if (this.since < this.n || this.inflight.size >= this.k) return;
      this.since = 0;
      this.count++;
      const p = this.fh.datasync().finally(() => this.inflight.delete(p));
      this.inflight.add(p);
      return;
    }
    if (this.running) return;
    if (this.kind === 'first' && this.count > 0 ? this.since <= 0 : this.since < this.n) return;
    this.since = 0;
    this.count++;
    this.running = this.fh.datasync().finally(() => {
      this.running = undefined;
    });
  }
  async final() {
    if (this.kind === 'par') {
      await this.fh.sync();
      await Promise.all(this.inflight);
      return;
    }
    if (this.kind !== 'conc') await this.running;
    await this.fh.sync();
    await this.running;
  }
}

/** Writes `len` bytes to `fh` at the pace, 1 MiB at a time, one write in flight. */
async function paced(fh, len, syncer, t0, sentBefore) {
  let sent = 0;
  while (sent < len) {
    const n = Math.min(MiB, len - sent);
    const due = t0 + (sentBefore + sent + n) / pace;
    const wait = due - now();
    if (wait > 0.001) await sleep(wait * 1000);
    await fh.write(block, 0, n);
    sent += n;
    syncer.wrote(n);
  }
}

async function streamed() {
  const file = path.join(dir, 'stream');
  const t0 = now();
  const fh = await fsp.open(file, 'wx');
  const s = new Syncer(fh, 'every64');
  await paced(fh, total, s, t0, 0);
  await s.final();
  await fh.close();
  const secs = now() - t0;
  await fsp.rm(file);
  return { secs, syncs: s.count };
}

async function patched(policy) {
  const file = path.join(dir, 'part');
  await fsp.writeFile(file, '');
  const t0 = now();
  let off = 0;
  let tail = [];
  let syncs = 0;
  let gapTime = 0;
  while (off < total) {
    const n = Math.min(patch, total - off);
    const start = now();
    const fh = await fsp.open(file, 'a');
    const s = new Syncer(fh, policy);
    // Each PATCH arrives at the pace from its own start (the client sends nothing while it waits).
    await paced(fh, n, s, start, 0);
    const last = now();
    await s.final();
    await fh.close();
    tail.push(now() - last);
    syncs += s.count;
    off += n;
    const g0 = now();
    await sleep(gap);
    gapTime += now() - g0;
  }
  const secs = now() - t0;
  await fsp.rm(file);
  tail.sort((a, b) => a - b);
  return { secs, syncs, tailP50: tail[tail.length >> 1], gapTime };
}

(async () => {
  console.log(`disk: ${total / MiB} MiB, PATCHes of ${patch / MiB} MiB, pace ${pace / 1e6} MB/s, gap ${gap} ms, ${rounds} rounds`);
  const res = Object.fromEntries(policies.map((p) => [p, []]));
  for (let r = 0; r < rounds; r++) {
    const m = await streamed();
    const mb = total / m.secs / 1e6;
    const line = [`round ${r + 1}: stream ${mb.toFixed(0)} MB/s (${m.syncs} syncs)`];
    for (const p of policies) {
      const t = await patched(p);
      const tb = total / t.secs / 1e6;
      res[p].push(tb / mb);
      line.push(`${p} ${tb.toFixed(0)} MB/s ${(tb / mb).toFixed(3)} (tail p50 ${(t.tailP50 * 1000).toFixed(0)} ms, ${t.syncs} syncs)`);
    }
    console.log(line.join('; '));
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log('median ratio to stream: ' + policies.map((p) => `${p} ${med(res[p]).toFixed(3)}`).join(', '));
  fs.rmSync(dir, { recursive: true, force: true });
})();
