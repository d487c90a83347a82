'use strict';
// The disk alone, no service, no network: how the write-behind policy of a resumable upload's part (PATCH by PATCH,
// each ending with an fsync the client waits for) compares with one streamed file (a multipart upload's), writing the
// same bytes at the same pace, interleaved in the same run. What it isolates: the time the disk is idle between
// PATCHes and what each background fdatasync costs, for different sync policies.
//   node bench/profiles/tus-disk.cjs [--mib 1024] [--patch 64] [--pace 600] [--gap 8] [--rounds 3] [--policies
// every8,first1,par2x2,...]
// `pace`: MB/s at which bytes "arrive" (1 MiB writes, paced); `gap`: ms between a PATCH's fsync and the next PATCH's
// first byte (the answer, the statements, the next request). Policies (background fdatasync, one at a time):
//   everyN     one after every N MiB written since the previous one started (the block writer's BackgroundSync)
//   everyNfM   everyN, the first of each PATCH after M MiB already
//   everyNt    everyN, the file's length set to the PATCH's end first (ftruncate), so no write extends the file
//   everyNk    everyN, the descriptor kept open from PATCH to PATCH (not closed and reopened for each)
//   everyNeTsM everyN, then every M MiB once T MiB or less of the PATCH are still to arrive (the tail synced closer)
//   firstN     the first after N MiB of the PATCH, then one as soon as the previous ends (back to back)
//   concN      everyN, and the final fsync issued without waiting for the running background sync
//   parNxK     one after every N MiB while fewer than K run, the final fsync beside them (e.g. par2x2)
//   directNxK[t]  no page cache: the part opened with O_DIRECT, N MiB writes from page-aligned buffers, K in flight, no
//              background sync; the PATCH ends with one fdatasync (metadata and the device's cache only); `t` as above
// BENCHMARKS.md, "Fourth stop: tus, direct writes", has what each measured.
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const os = require('node:os');
const path = require('node:path');

const MiB = 1 << 20;
const args = Object.fromEntries(
  process.argv
    .slice(2)
    .map((a, i, all) => (a.startsWith('--') ? [a.slice(2), all[i + 1]] : undefined))
    .filter(Boolean),
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
  constructor(fh, policy, length = Infinity) {
    this.fh = fh;
    const m = /^(every|first|conc|par)(\d+)(?:x(\d+))?(?:f(\d+))?(?:e(\d+)s(\d+))?$/.exec(policy);
    if (!m) throw new Error(`unknown policy ${policy}`);
    this.kind = m[1];
    this.n = Number(m[2]) * MiB;
    this.k = Number(m[3] ?? 1);
    // `everyNfM`: the PATCH's first background sync after M MiB already (the disk idles until it), then every N
    this.first = m[4] === undefined ? this.n : Number(m[4]) * MiB;
    // `everyNeTsM`: every N MiB, and every M MiB once the PATCH has T MiB or less left to arrive
    this.left = length;
    this.tailFrom = m[5] === undefined ? -1 : Number(m[5]) * MiB;
    this.tailEvery = m[6] === undefined ? this.n : Number(m[6]) * MiB;
    this.since = 0;
    this.running = undefined;
    this.count = 0;
    this.inflight = new Set();
  }
  wrote(len) {
    this.since += len;
    this.left -= len;
    if (this.kind === 'par') {
      if (this.since < this.n || this.inflight.size >= this.k) return;
      this.since = 0;
      this.count++;
      const p = this.fh.datasync().finally(() => this.inflight.delete(p));
      this.inflight.add(p);
      return;
    }
    if (this.running) return;
    const every = this.left <= this.tailFrom ? this.tailEvery : this.n;
    if (
      this.kind === 'first' && this.count > 0
        ? this.since <= 0
        : this.since < (this.count === 0 ? Math.min(this.first, every) : every)
    )
      return;
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
async function paced(fh, len, syncer, t0, sentBefore, position) {
  let sent = 0;
  while (sent < len) {
    const n = Math.min(MiB, len - sent);
    const due = t0 + (sentBefore + sent + n) / pace;
    const wait = due - now();
    if (wait > 0.001) await sleep(wait * 1000);
    await fh.write(block, 0, n, position === undefined ? null : position + sent);
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

/** Page-aligned buffers for O_DIRECT: a WebAssembly memory's backing store is whole pages from mmap. */
function alignedBuffers(count, size) {
  const mem = new WebAssembly.Memory({ initial: Math.ceil((count * size) / 65536) });
  const all = Buffer.from(mem.buffer);
  const out = [];
  for (let i = 0; i < count; i++) {
    const b = all.subarray(i * size, (i + 1) * size);
    block.copy(b, 0, 0, Math.min(block.length, size));
    for (let o = block.length; o < size; o += block.length) block.copy(b, o);
    out.push(b);
  }
  return out;
}

/**
 * `total` bytes as PATCHes of `patch` bytes into one part file, `gap` ms apart (the answer and the next request):
 * `onePatch(n, off, start)` writes one at the pace and makes it durable, answering the time its last byte arrived and
 * the syncs it started; the tail is from there to durable.
 */
async function patches(onePatch, finish = async () => undefined) {
  const file = path.join(dir, 'part');
  await fsp.writeFile(file, '');
  const t0 = now();
  let off = 0;
  const tail = [];
  let syncs = 0;
  while (off < total) {
    const n = Math.min(patch, total - off);
    const r = await onePatch(file, n, off, now());
    tail.push(now() - r.last);
    syncs += r.syncs;
    off += n;
    await sleep(gap);
  }
  const secs = now() - t0;
  await finish();
  await fsp.rm(file);
  tail.sort((a, b) => a - b);
  return { secs, syncs, tailP50: tail[tail.length >> 1] };
}

function patchedDirect(policy) {
  const m = /^direct(\d+)x(\d+)(t?)$/.exec(policy);
  // `t`: the file's length set to the PATCH's end first (ftruncate), so no write extends it
  const size = Number(m[1]) * MiB;
  const k = Number(m[2]);
  const bufs = alignedBuffers(k, size);
  return patches(async (file, n, off, start) => {
    const fh = await fsp.open(file, fs.constants.O_WRONLY | fs.constants.O_DIRECT);
    if (m[3]) await fh.truncate(off + n);
    const inflight = new Set();
    let sent = 0;
    let bi = 0;
    while (sent < n) {
      const len = Math.min(size, n - sent);
      // the bytes of this write arrive at the pace (a MiB at a time, like the buffered policies)
      const due = start + (sent + len) / pace;
      const wait = due - now();
      if (wait > 0.001) await sleep(wait * 1000);
      while (inflight.size >= k) await Promise.race(inflight);
      const p = fh.write(bufs[bi++ % k], 0, len, off + sent).then(() => inflight.delete(p));
      inflight.add(p);
      sent += len;
    }
    const last = now();
    await Promise.all(inflight);
    await fh.datasync();
    await fh.close();
    return { last, syncs: 0 };
  });
}

function patched(policy) {
  if (policy.startsWith('direct')) return patchedDirect(policy);
  // a trailing `t` (every8t): the file's length set to the PATCH's end first, so no write extends it; a trailing
  // `k` (every8k): the descriptor kept open from PATCH to PATCH (closing a file written to drops ext4's block
  // preallocation of the inode, and with `discard` its blocks are trimmed at the next commit)
  const sized = policy.endsWith('t');
  const keepOpen = policy.endsWith('k');
  let kept;
  return patches(
    async (file, n, off, start) => {
      const fh = keepOpen ? (kept ??= await fsp.open(file, 'a')) : await fsp.open(file, sized ? 'r+' : 'a');
      if (sized) await fh.truncate(off + n);
      const s = new Syncer(fh, sized || keepOpen ? policy.slice(0, -1) : policy, n);
      // Each PATCH arrives at the pace from its own start (the client sends nothing while it waits).
      await paced(fh, n, s, start, 0, sized ? off : undefined);
      const last = now();
      await s.final();
      if (!keepOpen) await fh.close();
      return { last, syncs: s.count };
    },
    async () => kept?.close(),
  );
}

(async () => {
  console.log(
    `disk: ${total / MiB} MiB, PATCHes of ${patch / MiB} MiB, pace ${pace / 1e6} MB/s, gap ${gap} ms, ${rounds} rounds`,
  );
  const res = Object.fromEntries(policies.map((p) => [p, []]));
  for (let r = 0; r < rounds; r++) {
    const m = await streamed();
    const mb = total / m.secs / 1e6;
    const line = [`round ${r + 1}: stream ${mb.toFixed(0)} MB/s (${m.syncs} syncs)`];
    for (const p of policies) {
      const t = await patched(p);
      const tb = total / t.secs / 1e6;
      res[p].push(tb / mb);
      line.push(
        `${p} ${tb.toFixed(0)} MB/s ${(tb / mb).toFixed(3)} (tail p50 ${(t.tailP50 * 1000).toFixed(0)} ms, ${t.syncs} syncs)`,
      );
    }
    console.log(line.join('; '));
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log('median ratio to stream: ' + policies.map((p) => `${p} ${med(res[p]).toFixed(3)}`).join(', '));
  fs.rmSync(dir, { recursive: true, force: true });
})();
