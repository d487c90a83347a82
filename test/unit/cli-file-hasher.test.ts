import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileHasher } from '../../src/cli/assets/file-hasher';
import { blake3 } from '../../src/infra/blake3';

// The CLI's hashing thread reads the next block while it hashes the one before: these hold its answers to the
// file's bytes (block boundaries, a file followed as it grows, a file cut short) and its descriptors to what it opens.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'file-hasher-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function fileOf(name: string, size: number): { file: string; bytes: Buffer } {
  const bytes = crypto.randomBytes(size);
  const file = path.join(dir, name);
  fs.writeFileSync(file, bytes);
  return { file, bytes };
}

const b3 = (b: Buffer): string => {
  const h = blake3().create();
  h.update(b);
  return `blake3:${h.hex()}`;
};
const sha = (b: Buffer): string => `sha256:${crypto.createHash('sha256').update(b).digest('hex')}`;
/** Descriptors of this process (the hashing threads share its table). */
const openFds = (): number => fs.readdirSync('/proc/self/fd').length;

describe('FileHasher', () => {
  const hasher = new FileHasher(1);
  afterAll(() => hasher.close());

  it('hashes files around the 4 MiB block size with both algorithms', async () => {
    const M = 4 << 20;
    for (const size of [0, 1, M - 1, M, M + 1, 3 * M + 12345]) {
      const { file, bytes } = fileOf(`f${size}`, size);
      await expect(hasher.hashFile(file, 'blake3')).resolves.toBe(b3(bytes));
      await expect(hasher.hashFile(file, 'sha256')).resolves.toBe(sha(bytes));
      await expect(hasher.hashFile(file, 'blake3', { size: Math.floor(size / 2) })).resolves.toBe(
        b3(bytes.subarray(0, Math.floor(size / 2))),
      );
    }
  });

  it('follows a file as it is written, in steps that do not fall on block boundaries', async () => {
    const { bytes } = fileOf('source', 9 * (1 << 20) + 777);
    const file = path.join(dir, 'growing');
    const fd = fs.openSync(file, 'w');
    const seen: number[] = [];
    const f = hasher.follow(file, 'blake3', (n) => seen.push(n));
    for (let at = 0; at < bytes.length;) {
      const n = Math.min(bytes.length - at, 1_000_003);
      fs.writeSync(fd, bytes, at, n, at);
      at += n;
      f.grow(at);
      await new Promise((r) => setImmediate(r));
    }
    fs.closeSync(fd);
    await expect(f.finish()).resolves.toBe(b3(bytes));
    expect(seen.at(-1)).toBe(bytes.length);
  });

  it('fails a file that is shorter than it was said to be', async () => {
    const { file } = fileOf('short', 5 << 20);
    await expect(hasher.hashFile(file, 'blake3', { size: 6 << 20 })).rejects.toMatchObject({
      message: expect.stringContaining('the file ended at'),
    });
  });

  it('closes what it opens, also for files dropped while a read is in flight', async () => {
    const { file, bytes } = fileOf('big', 48 << 20);
    await hasher.hashFile(file, 'blake3'); // the thread is started and its first file closed
    const before = openFds();
    for (let i = 0; i < 20; i++) {
      const f = hasher.follow(file, 'blake3');
      f.grow(bytes.length);
      await new Promise((r) => setTimeout(r, i % 4));
      f.drop();
    }
    await expect(hasher.hashFile(file, 'blake3')).resolves.toBe(b3(bytes));
    for (let i = 0; i < 50 && openFds() > before; i++) await new Promise((r) => setTimeout(r, 20));
    // At most as many as before: the jest worker may close one of its own meanwhile (seen with the other unit files).
    expect(openFds()).toBeLessThanOrEqual(before);
  });
});
