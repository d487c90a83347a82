import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import yauzl from 'yauzl';
import { zipArchive, type ZipEntry } from '../../src/domain/exports/zip-writer';

/**
 * The export archive writer, read back with yauzl (sizes validated, CRC-32 recomputed here: yauzl does not check it)
 * and with Info-ZIP's `unzip -t` where it is installed.
 */
jest.setTimeout(300_000);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-zipw-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const GiB = 1024 ** 3;
/** The chunk `sparse` members are made of; the sink below leaves a hole for it instead of writing it. */
const ZEROS = Buffer.alloc(16 * 1024 * 1024);

async function* bytesOf(buf: Buffer, chunk = 7000): AsyncGenerator<Buffer> {
  for (let i = 0; i < buf.length; i += chunk) yield buf.subarray(i, i + chunk);
}
async function* sparse(size: number): AsyncGenerator<Buffer> {
  for (let left = size; left > 0; left -= ZEROS.length) yield left >= ZEROS.length ? ZEROS : ZEROS.subarray(0, left);
}
const entry = (name: string, bytes: Buffer): ZipEntry => ({
  name,
  size: bytes.length,
  mtime: new Date('2026-05-04T03:02:01Z'),
  data: bytesOf(bytes),
});

/** Writes the archive to a file; chunks of ZEROS become holes (a sparse file), so a 4 GiB member costs no disk. */
async function writeZip(
  entries: Iterable<ZipEntry> | AsyncIterable<ZipEntry>,
  opts?: { forceZip64?: boolean },
): Promise<string> {
  const file = path.join(tmp, `${crypto.randomUUID()}.zip`);
  const fh = await fs.promises.open(file, 'w');
  let at = 0;
  let pending: Buffer[] = [];
  let pendingAt = 0;
  const flush = async () => {
    if (pending.length > 0) await fh.writev(pending, pendingAt);
    pending = [];
  };
  try {
    for await (const chunk of zipArchive(entries, opts)) {
      if (chunk.buffer === ZEROS.buffer) {
        await flush();
      } else {
        if (pending.length === 0) pendingAt = at;
        pending.push(chunk);
        if (pending.length >= 1024) await flush();
      }
      at += chunk.length;
    }
    await flush();
    await fh.truncate(at);
  } finally {
    await fh.close();
  }
  return file;
}

interface Read {
  name: string;
  crc32: number;
  size: number;
  method: number;
  utf8: boolean;
  crcOk: boolean;
  sha256: string;
}

/**
 * Every member's central directory entry; the bytes (checked against the CRC-32) of those `open` accepts, else
 * `crcOk` and `sha256` are left out (reading a sparse 4 GiB member costs ~30 s here; `unzip -t` checks it).
 */
async function readBack(
  file: string,
  open: (name: string) => boolean = () => true,
): Promise<{ entryCount: number; members: Partial<Read>[] }> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(file, { lazyEntries: true, strictFileNames: true, validateEntrySizes: true }, (err, z) =>
      err ? reject(err) : resolve(z!),
    ),
  );
  const members: Partial<Read>[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (e: yauzl.Entry) => {
        const listed = {
          name: e.fileName,
          size: e.uncompressedSize,
          method: e.compressionMethod,
          utf8: (e.generalPurposeBitFlag & 0x800) !== 0,
          crc32: e.crc32,
        };
        if (!open(e.fileName)) {
          members.push(listed);
          return zip.readEntry();
        }
        zip.openReadStream(e, (err, stream) => {
          if (err) return reject(err);
          let crc = 0;
          const sha = crypto.createHash('sha256');
          stream!.on('data', (c: Buffer) => {
            crc = crc32(c, crc);
            sha.update(c);
          });
          stream!.on('error', reject);
          stream!.on('end', () => {
            members.push({ ...listed, crcOk: crc === e.crc32, sha256: sha.digest('hex') });
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
    return { entryCount: zip.entryCount, members };
  } finally {
    zip.close();
  }
}

/** `unzip -t` (every member's CRC checked); skipped where unzip is not installed. */
function unzipTest(file: string): void {
  try {
    execFileSync('unzip', ['-tqq', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new Error(
      `unzip -t failed: ${(err as { stdout?: Buffer }).stdout?.toString()} ${(err as { stderr?: Buffer }).stderr?.toString()}`,
    );
  }
}

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');
const tail = (file: string) => {
  const size = fs.statSync(file).size;
  const len = Math.min(size, 1024);
  const b = Buffer.alloc(len);
  const fd = fs.openSync(file, 'r');
  fs.readSync(fd, b, 0, len, size - len);
  fs.closeSync(fd);
  return b;
};
const ZIP64_EOCD = Buffer.from([0x50, 0x4b, 0x06, 0x06]);

test('stored members with unicode names, zero-byte members and nested paths read back byte for byte', async () => {
  const parts = [
    ['a.bin', crypto.randomBytes(300_000)],
    ['empty.txt', Buffer.alloc(0)],
    ['日本語/モデル.safetensors', crypto.randomBytes(1234)],
    ['émoji 🎨/naïve café.png', crypto.randomBytes(70_001)],
    ['deep/er/path/x', Buffer.from('hello')],
    ['another empty', Buffer.alloc(0)],
  ] as const;
  const file = await writeZip(parts.map(([n, b]) => entry(n, b)));
  const { entryCount, members } = await readBack(file);
  expect(entryCount).toBe(parts.length);
  expect(members).toEqual(
    parts.map(([name, b]) => ({
      name,
      size: b.length,
      method: 0,
      utf8: true,
      crc32: crc32(b),
      crcOk: true,
      sha256: sha(b),
    })),
  );
  expect(tail(file).includes(ZIP64_EOCD)).toBe(false);
  unzipTest(file);
  // Info-ZIP reads the UTF-8 names too.
  try {
    const listing = execFileSync('unzip', ['-Z1', file], { encoding: 'utf8' }).trim().split('\n');
    expect(listing).toEqual(parts.map(([n]) => n));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
});

test('an empty archive is valid', async () => {
  const file = await writeZip([]);
  expect(fs.statSync(file).size).toBe(22);
  expect((await readBack(file)).entryCount).toBe(0);
});

test('forced ZIP64 records at small sizes read back', async () => {
  const parts = [crypto.randomBytes(100_000), Buffer.alloc(0), crypto.randomBytes(5)];
  const file = await writeZip(
    parts.map((b, i) => entry(`m${i}`, b)),
    { forceZip64: true },
  );
  const t = tail(file);
  expect(t.includes(ZIP64_EOCD)).toBe(true);
  expect(t.includes(Buffer.from([0x50, 0x4b, 0x06, 0x07]))).toBe(true);
  const { members } = await readBack(file);
  expect(members.map((m) => [m.name, m.size, m.crcOk, m.sha256])).toEqual(
    parts.map((b, i) => [`m${i}`, b.length, true, sha(b)]),
  );
  unzipTest(file);
});

test('more than 65,535 members: ZIP64 end records, every member listed', async () => {
  const n = 70_000;
  const entries = function* (): Generator<ZipEntry> {
    for (let i = 0; i < n; i++) yield entry(`f/${i}.txt`, i % 1000 === 0 ? Buffer.from(String(i)) : Buffer.alloc(0));
  };
  const file = await writeZip(entries());
  expect(tail(file).includes(ZIP64_EOCD)).toBe(true);
  // Every entry listed; the bytes of one in a thousand read (`unzip -t` reads them all).
  const { entryCount, members } = await readBack(file, (name) => /^f\/(0|\d+000)\.txt$/.test(name));
  expect(entryCount).toBe(n);
  expect(members.length).toBe(n);
  expect(members.every((m, i) => m.name === `f/${i}.txt` && m.size === (i % 1000 === 0 ? String(i).length : 0))).toBe(
    true,
  );
  expect(members.filter((m) => m.crcOk).length).toBe(n / 1000);
  expect(members[5000]!.sha256).toBe(sha(Buffer.from('5000')));
  unzipTest(file);
});

test('an archive over 4 GiB: a ZIP64 member (size), one after it (offset), ZIP64 end records', async () => {
  const big = 4 * GiB + 1;
  const small = crypto.randomBytes(4096);
  const file = await writeZip([
    { name: 'big.bin', size: big, mtime: new Date(), data: sparse(big) },
    entry('after.bin', small),
    entry('empty', Buffer.alloc(0)),
  ]);
  expect(fs.statSync(file).size).toBeGreaterThan(4 * GiB);
  expect(tail(file).includes(ZIP64_EOCD)).toBe(true);
  let zerosCrc = 0;
  for await (const c of sparse(big)) zerosCrc = crc32(c, zerosCrc);
  const { members } = await readBack(file, (name) => name !== 'big.bin');
  expect(members.map((m) => [m.name, m.size, m.crc32, m.crcOk])).toEqual([
    ['big.bin', big, zerosCrc, undefined],
    ['after.bin', small.length, crc32(small), true],
    ['empty', 0, 0, true],
  ]);
  expect(members[1]!.sha256).toBe(sha(small));
  unzipTest(file);
});

test('a member whose bytes are fewer or more than its size fails the archive', async () => {
  const run = async (entries: ZipEntry[]) => {
    for await (const _ of zipArchive(entries)) void _;
  };
  await expect(run([{ name: 'short', size: 10, mtime: new Date(), data: bytesOf(Buffer.alloc(9)) }])).rejects.toThrow(
    /only 9 of its 10 bytes/,
  );
  await expect(
    run([{ name: 'long', size: 10, mtime: new Date(), data: bytesOf(Buffer.alloc(11), 4) }]),
  ).rejects.toThrow(/more than/);
});

test('the archive is pulled: nothing is read ahead of what the consumer took', async () => {
  let read = 0;
  async function* counted(): AsyncGenerator<Buffer> {
    for (let i = 0; i < 100; i++) {
      read += 1000;
      yield Buffer.alloc(1000);
    }
  }
  const it = zipArchive([{ name: 'x', size: 100_000, mtime: new Date(), data: counted() }]);
  await it.next(); // the local header
  expect(read).toBe(0);
  for (let i = 0; i < 5; i++) await it.next();
  expect(read).toBe(5000);
  await it.return(undefined);
});
