import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { FsBlobStore } from '../../src/infra/blob-store/fs';
import { IngestWorkers } from '../../src/infra/blob-store/ingest-pool';
import type { Request } from 'express';
import type { ReceivedFile } from '../../src/domain/assets/asset.service';
import { parseMultipartUpload } from '../../src/http/rest/multipart';
import { blake3Of, sha256Of } from '../helpers/harness';

const hexOf = (prefixed: string) => prefixed.split(':')[1];

/**
 * FsBlobStore.writeTempHashed: hashing and writing on a worker thread, the bytes copied into the pool's own batch
 * buffers (which go to the worker and come back). What must hold: the same bytes and hashes as the inline path,
 * nothing left behind on any failure, and the caller's chunks never touched (they are the HTTP parser's).
 */
const MiB = 1024 * 1024;

let dir: string;
let store: FsBlobStore;
/** Every pool a test builds, closed after it (each started thread would otherwise stay until the process exits). */
const pools: IngestWorkers[] = [];
const newPool = (size?: number) => {
  const pool = new IngestWorkers(size);
  pools.push(pool);
  return pool;
};

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-ingest-'));
  store = new FsBlobStore(dir, newPool());
  await store.init();
});

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
  fs.rmSync(dir, { recursive: true, force: true });
});

const temps = () => fs.readdirSync(path.join(dir, '.tmp'));

/** Chunks that each have their own ArrayBuffer, as Node's HTTP parser delivers them. */
async function* owned(buf: Buffer, size = 64 * 1024): AsyncIterable<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield Buffer.from(new Uint8Array(buf.subarray(i, i + size)).buffer);
}

describe('FsBlobStore.writeTempHashed (worker thread)', () => {
  it('writes the bytes and returns the same BLAKE3 and SHA-256 as the inline hashers, leaving the chunks intact', async () => {
    const data = crypto.randomBytes(20 * MiB + 20000);
    const given: Buffer[] = [];
    async function* recording() {
      for await (const c of owned(data)) {
        given.push(c);
        yield c;
      }
    }
    const { temp, digest } = await store.writeTempHashed(recording());
    expect(digest).toEqual({ blake3: hexOf(blake3Of(data)), sha256: hexOf(sha256Of(data)), size: data.length });
    expect(temp.size).toBe(data.length);
    expect(fs.readFileSync(path.join(dir, temp.key)).equals(data)).toBe(true);
    // Copied, never moved or freed: the caller's chunks still hold their bytes.
    expect(given.every((c) => c.buffer.byteLength > 0)).toBe(true);
    expect(Buffer.concat(given).equals(data)).toBe(true);
  });

  it('takes views of a larger buffer, leaving it intact', async () => {
    const data = crypto.randomBytes(3 * MiB);
    async function* views() {
      for (let i = 0; i < data.length; i += 100_000) yield data.subarray(i, i + 100_000);
    }
    const { digest } = await store.writeTempHashed(views());
    expect(digest.sha256).toBe(hexOf(sha256Of(data)));
    expect(data.buffer.byteLength).toBeGreaterThan(0);
  });

  it('removes the temporary when the source fails midway', async () => {
    const data = crypto.randomBytes(12 * MiB);
    async function* failing() {
      let n = 0;
      for await (const c of owned(data)) {
        if ((n += c.length) > 9 * MiB) throw new Error('client went away');
        yield c;
      }
    }
    await expect(store.writeTempHashed(failing())).rejects.toThrow('client went away');
    expect(temps()).toEqual([]);
  });

  it('reports a write error and leaves nothing behind', async () => {
    // The temp directory is replaced by a file: opening the temporary fails in the worker.
    fs.rmSync(path.join(dir, '.tmp'), { recursive: true });
    fs.writeFileSync(path.join(dir, '.tmp'), 'not a directory');
    await expect(store.writeTempHashed(owned(crypto.randomBytes(2 * MiB)))).rejects.toThrow(/ENOTDIR/);
    fs.rmSync(path.join(dir, '.tmp'));
    fs.mkdirSync(path.join(dir, '.tmp'));
    // The worker is still usable afterwards.
    const ok = crypto.randomBytes(MiB);
    expect((await store.writeTempHashed(owned(ok))).digest.blake3).toBe(hexOf(blake3Of(ok)));
  });

  it('fails cleanly when the worker thread dies, and starts a new one for the next file', async () => {
    const data = crypto.randomBytes(16 * MiB);
    async function* slow() {
      let n = 0;
      for await (const c of owned(data)) {
        if ((n += c.length) === 4 * MiB) {
          // Kill the worker under the running job (the pool's first worker serves the first job).
          const w = (store as unknown as { workers: { workers: Array<{ worker: { terminate(): Promise<number> } }> } })
            .workers.workers;
          await Promise.all(w.filter(Boolean).map((x) => x.worker.terminate()));
        }
        yield c;
      }
    }
    await expect(store.writeTempHashed(slow())).rejects.toThrow(/ingest worker stopped/);
    expect(temps()).toEqual([]);
    const ok = crypto.randomBytes(MiB);
    expect((await store.writeTempHashed(owned(ok))).digest.sha256).toBe(hexOf(sha256Of(ok)));
  });

  it("hashes a real multipart request body as Node's HTTP server delivers it, leaving the parser's chunks intact", async () => {
    const file = crypto.randomBytes(8 * MiB);
    const boundary = 'test-boundary-1234';
    const body = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="tags"\r\n\r\nmodels\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="w.bin"\r\n\r\n`,
      ),
      file,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const seen: Buffer[] = [];
    const server = http.createServer((req, res) => {
      // The service's own multipart reading (busboy), its file part's chunks handed to the ingest as they come.
      const receiver = {
        receiveFile: async (bytes: AsyncIterable<Buffer>) => {
          async function* watched() {
            for await (const c of bytes) {
              seen.push(c);
              yield c;
            }
          }
          const { digest } = await store.writeTempHashed(watched());
          return digest as unknown as ReceivedFile;
        },
        discardFile: async () => undefined,
      };
      void parseMultipartUpload(req as Request, receiver).then(({ file, fields }) =>
        res.end(JSON.stringify({ ...file, tags: fields.get('tags') })),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const got = await new Promise<string>((resolve, reject) => {
      const req = http.request(
        {
          port,
          host: '127.0.0.1',
          method: 'POST',
          headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        },
        (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    server.close();
    expect(JSON.parse(got)).toMatchObject({ sha256: hexOf(sha256Of(file)), tags: ['models'] });
    // The parser's chunks were copied for the worker, never detached or changed.
    expect(Buffer.concat(seen).equals(file)).toBe(true);
  });
});

test('a worker with a job keeps the process alive until the answer comes; an idle one lets it exit', () => {
  // Uses the build (npm test builds first): a plain script, with no server holding the process open.
  const script = `
    const { IngestWorkers } = require(${JSON.stringify(path.resolve(__dirname, '../../dist/src/infra/blob-store/ingest-pool.js'))});
    const job = new IngestWorkers().open();
    job.write(Buffer.from('abc'));
    job.finish().then((d) => console.log(d.sha256));`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
  expect(r.signal).toBeNull(); // not killed by the timeout: the idle worker did not hold the process
  expect(r.stdout.trim()).toBe(hexOf(sha256Of(Buffer.from('abc')))); // the busy one did, until the digest came
});

describe('HashSession (a resumable upload: hashes kept on a worker between PATCHes)', () => {
  it('appends in several jobs to one part and gives the hashes of the whole', async () => {
    const data = crypto.randomBytes(9 * MiB + 12345);
    const partial = await store.openPartial('upload-s1');
    await partial.append((async function* () {})());
    const session = newPool().session();
    const cuts = [0, 1, 3 * MiB + 7, 6 * MiB, data.length];
    for (let i = 1; i < cuts.length; i++) {
      const p = await store.openPartial('upload-s1');
      const t = await store.appendHashed(p, owned(data.subarray(cuts[i - 1], cuts[i])), session);
      expect(t.size).toBe(cuts[i]);
      expect(session.size).toBe(cuts[i]);
      expect(session.usable).toBe(true);
    }
    expect(fs.readFileSync(path.join(dir, partial.key)).equals(data)).toBe(true);
    expect(await session.digest()).toEqual({
      blake3: hexOf(blake3Of(data)),
      sha256: hexOf(sha256Of(data)),
      size: data.length,
    });
    expect(session.usable).toBe(false);
  });

  it('keeps (durably) and counts what a failing source gave before it failed', async () => {
    const data = crypto.randomBytes(6 * MiB);
    await (await store.openPartial('upload-s2')).append((async function* () {})());
    const session = newPool().session({ blake3OnWorker: true });
    async function* failing() {
      let n = 0;
      for await (const c of owned(data)) {
        yield c;
        if ((n += c.length) >= 2 * MiB) throw new Error('client went away');
      }
    }
    const p = await store.openPartial('upload-s2');
    await expect(store.appendHashed(p, failing(), session)).rejects.toThrow('client went away');
    expect(session.size).toBe(2 * MiB);
    expect((await store.openPartial('upload-s2')).size).toBe(2 * MiB);
    const rest = await store.openPartial('upload-s2');
    await store.appendHashed(rest, owned(data.subarray(2 * MiB)), session);
    expect((await session.digest()).blake3).toBe(hexOf(blake3Of(data)));
  });

  it('is unusable after a failed job, or once its worker died', async () => {
    const pool = newPool();
    const session = pool.session();
    // Appending to a part that cannot be opened fails in the worker.
    fs.writeFileSync(path.join(dir, '.partial', 'upload-s3'), 'x');
    fs.chmodSync(path.join(dir, '.partial', 'upload-s3'), 0o400);
    const p = await store.openPartial('upload-s3');
    const attempt = store.appendHashed(p, owned(crypto.randomBytes(MiB)), session);
    if (process.getuid?.() === 0)
      await attempt; // root opens it anyway
    else await expect(attempt).rejects.toThrow(/EACCES/);
    if (process.getuid?.() !== 0) expect(session.usable).toBe(false);

    const other = pool.session();
    const job = other.append(undefined);
    job.write(Buffer.from('abc'));
    await job.finish();
    expect(other.usable).toBe(true);
    const w = (pool as unknown as { workers: Array<{ worker: { terminate(): Promise<number> } } | undefined> }).workers;
    await Promise.all(w.filter(Boolean).map((x) => x!.worker.terminate()));
    await waitUntil(() => !other.usable);
    expect(() => other.append(undefined)).toThrow(/not usable/);
  });
});

async function waitUntil(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(cond()).toBe(true);
}

test('an idle hash session (an unfinished upload between PATCHes) does not keep the process alive', () => {
  const script = `
    const { IngestWorkers } = require(${JSON.stringify(path.resolve(__dirname, '../../dist/src/infra/blob-store/ingest-pool.js'))});
    const session = new IngestWorkers().session();
    const job = session.append(undefined);
    job.write(Buffer.from('abc'));
    job.finish().then(() => console.log('hashed', session.size, session.usable));`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
  expect(r.signal).toBeNull(); // exited by itself, the session still open on its worker
  expect(r.stdout.trim()).toBe('hashed 3 true');
});

describe('copyFileHashed: a local file copied and hashed on a worker in one piece (the import)', () => {
  test('the same bytes and hashes as the streamed path, the head, and the file as it was before and after', async () => {
    const src = path.join(dir, 'src.bin');
    const data = crypto.randomBytes(3 * MiB + 17);
    fs.writeFileSync(src, data);
    const c = await store.copyFileHashed(src, { headBytes: MiB });
    expect(c.digest).toEqual({ blake3: hexOf(blake3Of(data)), sha256: hexOf(sha256Of(data)), size: data.length });
    expect(c.head.equals(data.subarray(0, MiB))).toBe(true);
    expect(fs.readFileSync(path.join(dir, c.temp.key)).equals(data)).toBe(true);
    const st = fs.statSync(src, { bigint: true });
    expect(c.before).toEqual({ size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, ino: st.ino, dev: st.dev });
    expect(c.after).toEqual(c.before);
    expect(c.committed).toBe(false);
    // With `precommit`, also under its content address (a second name: the temporary stays).
    const p = await store.copyFileHashed(src, { headBytes: 16, precommit: true });
    expect(p.committed).toBe(true);
    expect(p.head.equals(data.subarray(0, 16))).toBe(true);
    expect(fs.readFileSync(store.contentPath(p.digest.blake3)).equals(data)).toBe(true);
    expect(fs.existsSync(path.join(dir, p.temp.key))).toBe(true);
    // Again: the address is taken by the same bytes already.
    expect((await store.copyFileHashed(src, { headBytes: 16, precommit: true })).committed).toBe(true);
  });

  test('an empty file, a FIFO, a missing file and a link loop: hashed, or refused by code with nothing left', async () => {
    const empty = path.join(dir, 'empty');
    fs.writeFileSync(empty, '');
    const e = await store.copyFileHashed(empty, { headBytes: MiB });
    expect(e.digest).toEqual({
      blake3: hexOf(blake3Of(Buffer.alloc(0))),
      sha256: hexOf(sha256Of(Buffer.alloc(0))),
      size: 0,
    });
    expect(e.head.length).toBe(0);
    await store.discard(e.temp);
    const fifo = path.join(dir, 'pipe');
    spawnSync('mkfifo', [fifo]);
    await expect(store.copyFileHashed(fifo, { headBytes: MiB })).rejects.toMatchObject({ code: 'NOT_A_FILE' });
    await expect(store.copyFileHashed(path.join(dir, 'none'), { headBytes: MiB })).rejects.toMatchObject({
      code: 'UNREADABLE',
    });
    fs.symlinkSync('loop', path.join(dir, 'loop'));
    await expect(store.copyFileHashed(path.join(dir, 'loop'), { headBytes: MiB })).rejects.toMatchObject({
      code: 'UNREADABLE',
    });
    expect(temps()).toEqual([]);
  });

  test('an in-place read (no copy) of a large file hashes it on the worker, and stops when its cancel flag is set', async () => {
    const big = path.join(dir, 'big-model');
    const data = crypto.randomBytes(5 * MiB + 7);
    fs.writeFileSync(big, data);
    const pool = newPool();
    const whole = await pool.copyHashed(big, undefined, 16, undefined, new Int32Array(new SharedArrayBuffer(4)));
    expect([whole.sha256, whole.size, whole.head.equals(data.subarray(0, 16))]).toEqual([
      hexOf(sha256Of(data)),
      data.length,
      true,
    ]);
    const cancel = new Int32Array(new SharedArrayBuffer(4));
    Atomics.store(cancel, 0, 1);
    await expect(pool.copyHashed(big, undefined, 16, undefined, cancel)).rejects.toMatchObject({ code: 'CANCELLED' });
  });
});

test('jobs one after another keep to one worker thread; a job beside a busy one starts another', async () => {
  const pool = newPool(2);
  // Each thread is an isolate of its own (~10 MB resident): a second starts only when the first has work.
  const started = () => (pool as unknown as { workers: unknown[] }).workers.filter(Boolean).length;
  for (let i = 0; i < 3; i++) {
    const job = pool.open();
    await job.write(Buffer.from(`one after another ${i}`));
    expect((await job.finish()).sha256).toBe(hexOf(sha256Of(Buffer.from(`one after another ${i}`))));
  }
  expect(started()).toBe(1);
  const a = pool.open();
  const b = pool.open();
  await a.write(Buffer.from('a'));
  await b.write(Buffer.from('b'));
  const [da, db] = await Promise.all([a.finish(), b.finish()]);
  expect([da.sha256, db.sha256]).toEqual([hexOf(sha256Of(Buffer.from('a'))), hexOf(sha256Of(Buffer.from('b')))]);
  expect(started()).toBe(2);
});

test('close stops the threads (a shutdown leaves none behind); a job after it starts a new one', async () => {
  // The process's threads Node names WorkerThread (worker_threads), read from /proc: what an exit has to tear down.
  const threads = () =>
    fs.readdirSync('/proc/self/task').filter((t) => {
      try {
        return fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() === 'WorkerThread';
      } catch {
        return false; // the thread ended between the listing and the read
      }
    }).length;
  const hashOf = async (pool: IngestWorkers, text: string) => {
    const job = pool.open();
    await job.write(Buffer.from(text));
    return (await job.finish()).sha256;
  };
  const before = threads();
  const pool = newPool(2);
  const [a, b] = await Promise.all([hashOf(pool, 'a'), hashOf(pool, 'b')]);
  expect([a, b]).toEqual([hexOf(sha256Of(Buffer.from('a'))), hexOf(sha256Of(Buffer.from('b')))]);
  expect(threads()).toBe(before + 2);
  await pool.close();
  for (let i = 0; i < 100 && threads() > before; i++) await new Promise((r) => setTimeout(r, 20));
  expect(threads()).toBe(before);
  expect(await hashOf(pool, 'after')).toBe(hexOf(sha256Of(Buffer.from('after'))));
  expect(threads()).toBe(before + 1);
  await pool.close();
});
