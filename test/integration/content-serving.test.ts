import crypto from 'node:crypto';
import http from 'node:http';
import type { FsBlobStore } from '../../src/infra/blob-store/fs';
import { KEYS, startTestService, uploadForm, type TestService } from '../helpers/harness';

// GET /api/assets/{id}/content on the disk store writes each read through a small pool of reusable buffers
// (src/infra/blob-store/file-body.ts): a buffer goes back to the pool only once the socket has taken its bytes.
// These tests serve several bodies at once through the same pool and compare every byte, including ranges that
// start and end inside a read and clients that leave mid-transfer.

let svc: TestService;
const files: Array<{ id: string; bytes: Buffer }> = [];

beforeAll(async () => {
  svc = await startTestService({}, { validateResponses: true });
  // Not multiples of the 256 KiB read size, so the last read of each is short.
  for (const size of [3 * 1024 * 1024 + 1234, 2 * 1024 * 1024 + 77]) {
    const bytes = crypto.randomBytes(size);
    const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes, {}, `f${size}.bin`) });
    expect(res.status).toBe(201);
    files.push({ id: ((await res.json()) as { id: string }).id, bytes });
  }
});
afterAll(async () => {
  await svc?.stop();
});

async function body(
  id: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; bytes: Buffer; headers: Headers }> {
  const res = await svc.fetch(`/api/assets/${id}/content`, { headers });
  return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

/** A GET that reads until `after` bytes arrived, then destroys the connection. */
function leaveAfter(id: string, after: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${svc.url}/api/assets/${id}/content`, { headers: { 'x-api-key': KEYS.alice } }, (res) => {
      let got = 0;
      res.on('data', (d: Buffer) => {
        got += d.length;
        if (got >= after) {
          req.destroy();
          resolve(got);
        }
      });
      res.on('error', () => undefined);
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
  });
}

test('many bodies at once through the same read buffers, every byte as stored', async () => {
  const pool = (svc.container.blobStore as FsBlobStore).readBuffers;
  const before = pool.allocated;
  const answers = await Promise.all(
    Array.from({ length: 8 }, (_, i) => files[i % 2]!).map(async (f) => ({ f, r: await body(f.id) })),
  );
  for (const { f, r } of answers) {
    expect(r.status).toBe(200);
    expect(r.headers.get('content-length')).toBe(String(f.bytes.length));
    expect(r.bytes.equals(f.bytes)).toBe(true);
  }
  // 8 bodies of 9 to 13 reads each: a few buffers per body in flight at most, not one per read.
  expect(pool.allocated - before).toBeLessThanOrEqual(8 * 3);
});

test('ranges that start and end inside a read', async () => {
  const f = files[0]!;
  for (const [a, b] of [
    [262_143, 786_433],
    [1, 1],
    [3 * 1024 * 1024, f.bytes.length - 1],
  ] as const) {
    const r = await body(f.id, { range: `bytes=${a}-${b}` });
    expect(r.status).toBe(206);
    expect(r.headers.get('content-range')).toBe(`bytes ${a}-${b}/${f.bytes.length}`);
    expect(r.bytes.equals(f.bytes.subarray(a, b + 1))).toBe(true);
  }
  const suffix = await body(f.id, { range: 'bytes=-300000' });
  expect(suffix.bytes.equals(f.bytes.subarray(f.bytes.length - 300_000))).toBe(true);
});

test('clients that leave mid-transfer do not disturb the bodies sent beside and after them', async () => {
  const [left, beside] = await Promise.all([
    Promise.all([leaveAfter(files[0]!.id, 300_000), leaveAfter(files[1]!.id, 1)]),
    Promise.all([body(files[1]!.id), body(files[0]!.id)]),
  ]);
  expect(left[0]).toBeGreaterThanOrEqual(300_000);
  expect(beside[0].bytes.equals(files[1]!.bytes)).toBe(true);
  expect(beside[1].bytes.equals(files[0]!.bytes)).toBe(true);
  const after = await Promise.all(files.map((f) => body(f.id)));
  after.forEach((r, i) => expect(r.bytes.equals(files[i]!.bytes)).toBe(true));
});
