'use strict';
// The export archive writers on the same blobs, same run, in this process: src/domain/exports/zip-writer.ts
// (zlib.crc32, one async generator), and a plain copy of the same files (no ZIP at all) as the ceiling. Two sinks:
// `null` (bytes counted and dropped: the writers' CPU cost alone) and `file` (written to one file on the blobs' disk,
// then fsync: what an export pays). Rounds interleave the writers, order reversed every other round. BENCH_ZIP_MIB (default 1024) over BENCH_ZIP_FILES files (default 8), page-cached.
// Peak RSS per writer (VmHWM, reset before each run where the kernel allows it), and the CRC-32 functions alone.
// BENCH_ZIP_YAZL_DIR=<folder with node_modules/yazl> adds yazl (the library exports used before, no longer a
// dependency: `npm install --prefix /tmp/yazl yazl@3`) and its CRC-32 (buffer-crc32).
// BENCH_ZIP_STREAM_DIR=<folder with node_modules/zip-stream> adds zip-stream (archiver's ZIP engine), which is not a
// dependency of this project: install it elsewhere (`npm install --prefix /tmp/zs zip-stream@7`) to rerun that
// comparison.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { Writable } = require('node:stream');
const { pipeline } = require('node:stream/promises');
const {
  DIST,
  MiB,
  benchTmp,
  rmrf,
  onCleanup,
  memoryOf,
  resetPeak,
  median,
  r2,
  r3,
  mbps,
  now,
  log,
  printResult,
} = require('../lib/common.cjs');

const open = (file) => fs.createReadStream(file, { highWaterMark: 256 * 1024 });

function sinkOf(kind, dir) {
  if (kind === 'null') {
    let n = 0;
    const w = new Writable({
      write(c, _e, cb) {
        n += c.length;
        cb();
      },
      writev(cs, cb) {
        for (const c of cs) n += c.chunk.length;
        cb();
      },
    });
    return { w, done: async () => n };
  }
  const out = path.join(dir, 'out.zip');
  const w = fs.createWriteStream(out, { highWaterMark: 1 * MiB });
  return {
    w,
    done: async () => {
      const fd = fs.openSync(out, 'r+');
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      const size = fs.statSync(out).size;
      fs.rmSync(out);
      return size;
    },
  };
}

function writers(files, each) {
  const { zipArchive } = require(path.join(DIST, 'domain', 'exports', 'zip-writer.js'));
  const list = {
    plain: async (w) => {
      const all = async function* () {
        for (const f of files) yield* open(f);
      };
      await pipeline(all(), w);
    },
    'zip-writer': async (w) => {
      const entries = files.map((f) => ({ name: path.basename(f), size: each, mtime: new Date(), data: open(f) }));
      await pipeline(zipArchive(entries), w);
    },
  };
  const yazlDir = process.env.BENCH_ZIP_YAZL_DIR;
  if (yazlDir) {
    const yazl = require(require.resolve('yazl', { paths: [yazlDir] }));
    list.yazl = async (w) => {
      const zip = new yazl.ZipFile();
      const done = pipeline(zip.outputStream, w);
      for (const f of files) zip.addReadStream(open(f), path.basename(f), { compress: false, size: each });
      zip.end();
      await done;
    };
  }
  const zsDir = process.env.BENCH_ZIP_STREAM_DIR;
  if (zsDir) {
    const mod = require(require.resolve('zip-stream', { paths: [zsDir] }));
    const ZipStream = mod.default ?? mod;
    list['zip-stream'] = async (w) => {
      const zip = new ZipStream({ store: true });
      const done = pipeline(zip, w);
      for (const f of files) {
        await new Promise((resolve, reject) =>
          zip.entry(open(f), { name: path.basename(f), store: true }, (err) => (err ? reject(err) : resolve())),
        );
      }
      zip.finish();
      await done;
    };
  }
  return list;
}

/** CRC-32 alone over the same 256 KiB buffer: Node's zlib.crc32 [vs buffer-crc32 (yazl's), crc-32 (zip-stream's)]. */
function crcSpeeds(mib, zsDir, yazlDir) {
  const zlib = require('node:zlib');
  const impls = { 'zlib.crc32': (b, c) => zlib.crc32(b, c) };
  if (yazlDir) {
    const crc32 = require(require.resolve('buffer-crc32', { paths: [yazlDir] })); // installed beside yazl
    impls['buffer-crc32'] = (b, c) => crc32.unsigned(b, c);
  }
  if (zsDir) {
    const crc32 = require(require.resolve('crc-32', { paths: [zsDir] })); // installed beside zip-stream, its dependency
    impls['crc-32'] = (b, c) => crc32.buf(b, c) >>> 0;
  }
  const buf = crypto.randomBytes(256 * 1024);
  const out = {};
  for (const [name, f] of Object.entries(impls)) {
    const speeds = [];
    for (let r = 0; r < 3; r++) {
      let c = 0;
      const t0 = now();
      for (let i = 0; i < mib * 4; i++) c = f(buf, c);
      speeds.push(mbps(mib * MiB, now() - t0));
    }
    out[name] = r2(median(speeds));
  }
  return out;
}

async function run(args) {
  const total = (args.smoke ? 8 : Number(process.env.BENCH_ZIP_MIB ?? 1024)) * MiB;
  const count = args.smoke ? 4 : Number(process.env.BENCH_ZIP_FILES ?? 8);
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const each = Math.floor(total / count);
  const dir = benchTmp('zip');
  const forget = onCleanup(() => rmrf(dir));
  try {
    const files = [];
    const block = crypto.randomBytes(8 * MiB);
    for (let i = 0; i < count; i++) {
      const file = path.join(dir, `blob-${i}`);
      const fd = fs.openSync(file, 'w');
      for (let left = each; left > 0; left -= block.length) fs.writeSync(fd, block, 0, Math.min(left, block.length));
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      files.push(file);
    }
    const list = writers(files, each);
    const names = Object.keys(list);
    const results = {};
    for (const sink of ['null', 'file']) {
      const res = Object.fromEntries(names.map((n) => [n, { mbps: [], peak: [] }]));
      for (let i = 0; i < rounds; i++) {
        const line = [];
        for (const name of i % 2 ? [...names].reverse() : names) {
          const s = sinkOf(sink, dir);
          const reset = resetPeak(process.pid);
          const t0 = now();
          await list[name](s.w);
          const size = await s.done();
          const seconds = now() - t0;
          if (size < total) throw new Error(`${name} wrote ${size} bytes, less than the ${total} given`);
          res[name].mbps.push(mbps(total, seconds));
          if (reset) res[name].peak.push(memoryOf(process.pid).hwm);
          line.push(`${name} ${mbps(total, seconds).toFixed(0)} MB/s`);
        }
        log(`  ${sink} sink, ${total / MiB} MiB in ${count} files, round ${i + 1}: ${line.join(', ')}`);
      }
      const med = (n) => median(res[n].mbps);
      results[sink] = Object.fromEntries(
        names.map((n) => [
          n,
          {
            mbps_median: r2(med(n)),
            vs_plain: r3(med(n) / med('plain')),
            ...(res.yazl ? { vs_yazl: r3(med(n) / med('yazl')) } : {}),
            ...(res[n].peak.length ? { peak_rss_mib: r2(Math.max(...res[n].peak) / MiB) } : {}),
          },
        ]),
      );
    }
    const crc = crcSpeeds(args.smoke ? 8 : 256, process.env.BENCH_ZIP_STREAM_DIR, process.env.BENCH_ZIP_YAZL_DIR);
    log(`  CRC-32 alone, MB/s: ${JSON.stringify(crc)}`);
    printResult('zip-writer', { size_mib: r2(total / MiB), files: count, rounds, ...results, crc32_mbps: crc });
  } finally {
    forget();
    rmrf(dir);
  }
}

module.exports = { run };
