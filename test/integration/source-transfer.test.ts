import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { SourceTransfer, type ResponseInfo } from '../../src/domain/downloads/source-transfer';
import { FsBlobStore } from '../../src/infra/blob-store/fs';
import { IngestWorkers } from '../../src/infra/blob-store/ingest-pool';
import { HttpFetcher } from '../../src/infra/http-fetch';
import { blake3Of } from '../helpers/harness';

/**
 * SourceTransfer against a file that changes between attempts, with the process "crashing" (onResponse throwing) at
 * the worst moment: right after the new validator is saved. The partial file must never hold the old version's
 * bytes next to the new validator, or the next attempt would resume the new file after them.
 */
const KiB = 1024;

let dir: string;
const workers = new IngestWorkers();
let store: FsBlobStore;
let server: http.Server;
let base: string;
const file = { data: Buffer.alloc(0), etag: '', dropAfter: 0 };

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-transfer-'));
  store = new FsBlobStore(dir, workers);
  await store.init();
  server = http.createServer((req, res) => {
    const { data, etag } = file;
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const start = m && req.headers['if-range'] === etag ? Number(m[1]) : 0;
    const body = data.subarray(start);
    res.writeHead(start ? 206 : 200, {
      etag,
      'content-length': body.length,
      ...(start ? { 'content-range': `bytes ${start}-${data.length - 1}/${data.length}` } : {}),
    });
    if (file.dropAfter && file.dropAfter < body.length) {
      res.write(body.subarray(0, file.dropAfter), () => setTimeout(() => res.destroy(), 50));
      return;
    }
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await workers.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const fetcher = new HttpFetcher({ blockPrivateNetworks: false, trustedOrigins: [] });

function transfer(validator: string | null, onResponse?: (r: ResponseInfo) => Promise<void>) {
  return new SourceTransfer(
    { fetcher, blobs: store, hashers: workers },
    { url: new URL(`${base}/f`), partialName: 'changing', validator, maxBytes: 1 << 30, onResponse },
  );
}

async function attempt(t: SourceTransfer) {
  try {
    return await t.attempt();
  } finally {
    t.close();
  }
}

test('a crash right after the new validator is saved never leaves the old bytes to be resumed', async () => {
  const v1 = crypto.randomBytes(512 * KiB);
  const v2 = crypto.randomBytes(512 * KiB);
  const partialFile = path.join(dir, '.partial', 'changing');

  // Attempt 1: version 1 breaks off after 200 KiB; the partial file keeps them, saved with validator "v1".
  Object.assign(file, { data: v1, etag: '"v1"', dropAfter: 200 * KiB });
  let saved: string | null = null;
  await expect(attempt(transfer(null, async (r) => void (saved = r.validator)))).rejects.toThrow(/connection broke/);
  expect(saved).toBe('"v1"');
  expect(fs.statSync(partialFile).size).toBe(200 * KiB);

  // Attempt 2, after a restart: the file changed, so If-Range gets all of version 2. The process dies just after
  // the new validator is saved: what is on disk at that moment must not be version 1's bytes.
  Object.assign(file, { data: v2, etag: '"v2"', dropAfter: 0 });
  let sizeWhenSaved = -1;
  const crash = async (r: ResponseInfo) => {
    saved = r.validator;
    sizeWhenSaved = fs.existsSync(partialFile) ? fs.statSync(partialFile).size : 0;
    throw new Error('killed');
  };
  await expect(attempt(transfer(saved, crash))).rejects.toThrow('killed');
  expect(saved).toBe('"v2"');
  expect(sizeWhenSaved).toBe(0);

  // Attempt 3, after another restart, resumes from what is there with the saved validator: exactly version 2.
  const done = await attempt(transfer(saved));
  expect(`blake3:${done.digest.blake3}`).toBe(blake3Of(v2));
  expect(fs.readFileSync(path.join(dir, done.temp.key)).equals(v2)).toBe(true);
});

/** The store as one that writes partial files itself (S3's parts): no `hashedWrites`, so this thread writes. */
function writingHere(): FsBlobStore {
  return Object.assign(Object.create(store) as FsBlobStore, { capabilities: {} });
}

test.each([
  ['the hash worker appends to the partial file (disk store)', () => store],
  ['this thread writes the partial file, copies go to the hash worker (S3)', writingHere],
])('a broken connection is resumed by the same transfer with the hash state it kept: %s', async (_, blobs) => {
  const data = crypto.randomBytes(3 * 1024 * KiB + 123);
  Object.assign(file, { data, etag: '"r1"', dropAfter: 1024 * KiB + 7 });
  const name = `resumed-${crypto.randomBytes(4).toString('hex')}`;
  const t = new SourceTransfer(
    { fetcher, blobs: blobs(), hashers: workers },
    { url: new URL(`${base}/f`), partialName: name, validator: null, maxBytes: 1 << 30 },
  );
  try {
    await expect(t.attempt()).rejects.toThrow(/connection broke/);
    expect(fs.statSync(path.join(dir, '.partial', name)).size).toBe(1024 * KiB + 7);
    file.dropAfter = 0;
    const done = await t.attempt();
    expect(`blake3:${done.digest.blake3}`).toBe(blake3Of(data));
    expect(done.digest.sha256).toBe(crypto.createHash('sha256').update(data).digest('hex'));
    expect(done.digest.size).toBe(data.length);
    expect(fs.readFileSync(path.join(dir, done.temp.key)).equals(data)).toBe(true);
  } finally {
    t.close();
  }
});
