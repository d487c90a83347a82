import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { FsBlobStore } from '../../src/infra/blob-store/fs';
import { IngestWorkers } from '../../src/infra/blob-store/ingest-pool';
import { boundaryOf, MultipartParser } from '../../src/http/rest/multipart-parser';
import { blake3Of, sha256Of } from '../helpers/harness';

const hexOf = (prefixed: string) => prefixed.split(':')[1];

/**
 * FsBlobStore.writeTempHashed: hashing and writing on a worker thread, with the chunks moved (transferred) there.
 * What must hold: the same bytes and hashes as the inline path, nothing left behind on any failure, and the fast
 * path (transfer, not copy) really taken for request bodies as Node's HTTP parser delivers them.
 */
const MiB = 1024 * 1024;

let dir: string;
let store: FsBlobStore;

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-ingest-'));
  store = new FsBlobStore(dir, new IngestWorkers());
  await store.init();
});

afterEach(async () => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const temps = () => fs.readdirSync(path.join(dir, '.tmp'));

/** Chunks that each own their ArrayBuffer, as Node's HTTP parser delivers them. */
async function* owned(buf: Buffer, size = 64 * 1024): AsyncIterable<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield Buffer.from(new Uint8Array(buf.subarray(i, i + size)).buffer);
}

describe('FsBlobStore.writeTempHashed (worker thread)', () => {
  it('writes the bytes and returns the same BLAKE3 and SHA-256 as the inline hashers, moving owned chunks', async () => {
    const data = crypto.randomBytes(20 * MiB + 20000);
    const given: Buffer[] = [];
    async function* recording() {
      for await (const c of owned(data)) {
        given.push(c);
        yield c;
      }
    }
    const { temp, digest } = await store.writeTempHashed(recording(), { ownsChunks: true });
    expect(digest).toEqual({ blake3: hexOf(blake3Of(data)), sha256: hexOf(sha256Of(data)), size: data.length });
    expect(temp.size).toBe(data.length);
    expect(fs.readFileSync(path.join(dir, temp.key)).equals(data)).toBe(true);
    // Moved, not copied: the caller's chunks are detached now.
    expect(given.every((c) => c.buffer.byteLength === 0)).toBe(true);
    expect(store.ingestStats.copiedBytes).toBe(0);
  });

  it('copies chunks it does not own (views of a larger buffer), leaving them intact', async () => {
    const data = crypto.randomBytes(3 * MiB);
    async function* views() {
      for (let i = 0; i < data.length; i += 100_000) yield data.subarray(i, i + 100_000);
    }
    const { digest } = await store.writeTempHashed(views(), { ownsChunks: true });
    expect(digest.sha256).toBe(hexOf(sha256Of(data)));
    expect(data.buffer.byteLength).toBeGreaterThan(0);
    expect(store.ingestStats).toEqual({ transferredBytes: 0, copiedBytes: data.length });
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
    await expect(store.writeTempHashed(failing(), { ownsChunks: true })).rejects.toThrow('client went away');
    expect(temps()).toEqual([]);
  });

  it('reports a write error and leaves nothing behind', async () => {
    // The temp directory is replaced by a file: opening the temporary fails in the worker.
    fs.rmSync(path.join(dir, '.tmp'), { recursive: true });
    fs.writeFileSync(path.join(dir, '.tmp'), 'not a directory');
    await expect(store.writeTempHashed(owned(crypto.randomBytes(2 * MiB)), { ownsChunks: true })).rejects.toThrow(/ENOTDIR/);
    fs.rmSync(path.join(dir, '.tmp'));
    fs.mkdirSync(path.join(dir, '.tmp'));
    // The worker is still usable afterwards.
    const ok = crypto.randomBytes(MiB);
    expect((await store.writeTempHashed(owned(ok), { ownsChunks: true })).digest.blake3).toBe(hexOf(blake3Of(ok)));
  });

  it('fails cleanly when the worker thread dies, and starts a new one for the next file', async () => {
    const data = crypto.randomBytes(16 * MiB);
    async function* slow() {
      let n = 0;
      for await (const c of owned(data)) {
        if ((n += c.length) === 4 * MiB) {
          // Kill the worker under the running job (the pool's first worker serves the first job).
          const w = (store as unknown as { workers: { workers: Array<{ worker: { terminate(): Promise<number> } }> } }).workers.workers;
          await Promise.all(w.filter(Boolean).map((x) => x.worker.terminate()));
        }
        yield c;
      }
    }
    await expect(store.writeTempHashed(slow(), { ownsChunks: true })).rejects.toThrow(/ingest worker stopped/);
    expect(temps()).toEqual([]);
    const ok = crypto.randomBytes(MiB);
    expect((await store.writeTempHashed(owned(ok), { ownsChunks: true })).digest.sha256).toBe(hexOf(sha256Of(ok)));
  });

  it("moves (does not copy) the file chunks of a real multipart request body as Node's HTTP server delivers them", async () => {
    const file = crypto.randomBytes(8 * MiB);
    const boundary = 'test-boundary-1234';
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="tags"\r\n\r\nmodels\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="w.bin"\r\n\r\n`),
      file,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const server = http.createServer((req, res) => {
      const queue: Buffer[] = [];
      let wake: (() => void) | undefined;
      let ended = false;
      const parser = new MultipartParser(boundaryOf(req.headers['content-type']), {
        partBegin: () => undefined,
        partData: (d) => {
          queue.push(d);
          wake?.();
        },
        partEnd: () => undefined,
      });
      req.on('data', (c: Buffer) => parser.write(c));
      req.on('end', () => {
        ended = true;
        wake?.();
      });
      async function* source() {
        for (;;) {
          const c = queue.shift();
          if (c) yield c;
          else if (ended) return;
          else await new Promise<void>((r) => (wake = r));
        }
      }
      // Only the file part's bytes are queued after the small tags part: skip that one chunk.
      void store.writeTempHashed(source(), { ownsChunks: true }).then(({ digest }) => res.end(JSON.stringify(digest)));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const got = await new Promise<string>((resolve, reject) => {
      const req = http.request({ port, host: '127.0.0.1', method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.end(body);
    });
    server.close();
    // Both parts were queued (the tags bytes too): compare against their concatenation.
    const expected = Buffer.concat([Buffer.from('models'), file]);
    expect(JSON.parse(got).sha256).toBe(hexOf(sha256Of(expected)));
    // Socket reads shorter than 16 KiB are copied (cheap); the bulk must be moved.
    const { transferredBytes, copiedBytes } = store.ingestStats;
    expect(transferredBytes + copiedBytes).toBe(expected.length);
    expect(transferredBytes).toBeGreaterThan(0.8 * expected.length);
  });
});

test('a worker with a job keeps the process alive until the answer comes; an idle one lets it exit', () => {
  // Uses the build (npm test builds first): a plain script, with no server holding the process open.
  const script = `
    const { IngestWorkers } = require(${JSON.stringify(path.resolve(__dirname, '../../dist/src/infra/blob-store/ingest-pool.js'))});
    const job = new IngestWorkers().open(undefined, { ownsChunks: false, blake3OnWorker: true });
    job.write(Buffer.from('abc'));
    job.finish().then((d) => console.log(d.sha256));`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
  expect(r.signal).toBeNull(); // not killed by the timeout: the idle worker did not hold the process
  expect(r.stdout.trim()).toBe(hexOf(sha256Of(Buffer.from('abc')))); // the busy one did, until the digest came
});
