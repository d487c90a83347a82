import crypto from 'node:crypto';
import http from 'node:http';
import { DeleteObjectCommand, ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { blake3Of, json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { startRgw, type Gateway, type Rgw, type TestS3Server } from '../helpers/rgw';

/**
 * S3 outages on a real server (Ceph RGW): the service talks to a radosgw of this file's own, which is SIGKILLed
 * mid-upload and mid-download, frozen (SIGSTOP) mid-upload, and restarted; an object is removed behind the service's
 * back. Each time the client gets 503 (or a cut body once content flows), /readyz names `storage`, nothing
 * half-written is left, and once the gateway is back the service recovers by itself: /readyz 200, uploads work, and no
 * incomplete multipart upload is left on the server. The bucket over its quota: 507, the same otherwise.
 */
const MiB = 1024 * 1024;
let rgw: Rgw;
let s3: TestS3Server;
let gw: Gateway;
let svc: TestService;

beforeAll(async () => {
  rgw = await startRgw();
  [s3, gw] = await Promise.all([rgw.newBucket(), rgw.startGateway()]);
  // A short silence limit, so a frozen gateway fails requests within seconds (the default is two minutes).
  svc = await startTestService({
    ...s3.env,
    S3_ENDPOINT: gw.endpoint,
    S3_TIMEOUT_MS: '1000',
    CONTENT_GC_GRACE_SECONDS: '0',
  });
});
afterAll(async () => {
  gw?.thaw();
  await svc?.stop();
  await gw?.stop();
  await s3?.stop();
});

const readyz = async () => {
  const res = await svc.fetch('/readyz', { key: null });
  return { status: res.status, storage: (await json(res)).checks?.storage as string };
};

/** Once the gateway is back: ready again, no temporary object, no incomplete multipart upload; an upload works. */
async function recovered(): Promise<void> {
  await waitFor(async () => ((await readyz()).status === 200 ? true : undefined), {
    timeoutMs: 60_000,
    what: '/readyz 200',
  });
  await waitFor(
    async () => {
      const uploads = (await s3.client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }))).Uploads ?? [];
      const temps = (await s3.objectKeys()).filter((k) => k.startsWith('.tmp/'));
      return uploads.length === 0 && temps.length === 0 ? true : undefined;
    },
    { timeoutMs: 30_000, what: 'no incomplete multipart upload and no temporary object' },
  );
  const bytes = crypto.randomBytes(100_000);
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
  expect(res.status).toBe(201);
  expect((await json(res)).asset_hash).toBe(blake3Of(bytes));
}

/**
 * A multipart POST that sends 1 MiB at a time, up to 64 MiB, for as long as the connection lasts; resolves with the
 * answer. `started` resolves once the service has begun its multipart upload on the store (its parts are 8 MiB).
 */
function streamingUpload(): {
  answer: Promise<{ status: number; code?: string }>;
  started: Promise<void>;
  stop(): void;
} {
  const boundary = 'faultBoundary';
  const req = http.request(new URL('/api/assets', svc.url), {
    method: 'POST',
    headers: {
      'x-api-key': KEYS.alice,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'transfer-encoding': 'chunked',
    },
  });
  let stopped = false;
  const answer = new Promise<{ status: number; code?: string }>((resolve) => {
    req.on('response', (res) => {
      stopped = true;
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () =>
        resolve({ status: res.statusCode!, code: text ? (JSON.parse(text) as { code?: string }).code : undefined }),
      );
      res.on('error', () => resolve({ status: res.statusCode! }));
    });
    req.on('error', () => resolve({ status: 0 }));
  });
  req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n`);
  void (async () => {
    for (let i = 0; i < 64 && !stopped; i++)
      await new Promise<void>((resolve) => req.write(crypto.randomBytes(MiB), () => resolve()));
    if (!stopped) req.end(`\r\n--${boundary}--\r\n`);
  })();
  const started = waitFor(async () => ((await s3.pendingUploads()) > 0 ? true : undefined), {
    what: 'a multipart upload to begin',
  }).then(() => undefined);
  return { answer, started, stop: () => ((stopped = true), req.destroy()) };
}

test('radosgw killed mid-upload: 503, /readyz names storage; restarted, the service recovers and leaves nothing', async () => {
  const up = streamingUpload();
  await up.started;
  await gw.kill();
  const answer = await up.answer;
  up.stop();
  expect(answer).toEqual({ status: 503, code: 'SERVICE_UNAVAILABLE' });
  expect(await readyz()).toEqual({ status: 503, storage: 'unavailable' });
  const refused = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(crypto.randomBytes(1000)) });
  expect(refused.status).toBe(503);
  await gw.start();
  await recovered();
});

test('radosgw frozen (SIGSTOP) mid-upload: 503 within the silence limit, /readyz names storage; thawed, it recovers', async () => {
  const up = streamingUpload();
  await up.started;
  gw.freeze();
  try {
    const answer = await up.answer;
    up.stop();
    expect(answer).toEqual({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect(await readyz()).toEqual({ status: 503, storage: 'unavailable' });
  } finally {
    gw.thaw();
  }
  await recovered();
});

test('radosgw killed mid-download: the body is cut, /readyz names storage; restarted, the content is served again', async () => {
  const bytes = crypto.randomBytes(48 * MiB);
  const created = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
  expect(created.status).toBe(201);
  const { id } = await json(created);
  const res = await svc.fetch(`/api/assets/${id}/content`);
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  await reader.read();
  await gw.kill();
  let received = 0;
  const end = await (async () => {
    for (;;) {
      const r = await reader.read();
      if (r.done) return 'complete';
      received += r.value.length;
    }
  })().catch(() => 'cut');
  // Whatever the socket buffers held still arrives; the rest never does, and the body ends in an error.
  expect(end).toBe('cut');
  expect(received).toBeLessThan(bytes.length);
  expect(await readyz()).toEqual({ status: 503, storage: 'unavailable' });
  expect((await svc.fetch(`/api/assets/${id}/content`)).status).toBe(503);
  await gw.start();
  await recovered();
  const again = await svc.fetch(`/api/assets/${id}/content`);
  expect(Buffer.from(await again.arrayBuffer()).equals(bytes)).toBe(true);
});

test("an object removed behind the service's back: 500 INTERNAL as JSON, as on the disk store; the rest is served", async () => {
  const bytes = crypto.randomBytes(5000);
  const a = await json(
    await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes, { name: 'lost.bin' }) }),
  );
  const h = (a.asset_hash as string).slice(7);
  await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: `${h.slice(0, 2)}/${h.slice(2, 4)}/${h}` }));
  const res = await svc.fetch(`/api/assets/${a.id}/content`);
  expect(res.status).toBe(500);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('content-disposition')).toBeNull();
  expect((await json(res)).code).toBe('INTERNAL');
  expect((await readyz()).status).toBe(200);
  // Uploading the same bytes again puts the object back.
  const again = await svc.fetch('/api/assets', { method: 'POST', key: KEYS.bob, body: uploadForm(bytes) });
  expect(again.status).toBe(201);
  expect(Buffer.from(await (await svc.fetch(`/api/assets/${a.id}/content`)).arrayBuffer()).equals(bytes)).toBe(true);
});

test('the bucket over its quota: 507 and nothing kept, /readyz names storage; space freed, the service recovers', async () => {
  const kept = crypto.randomBytes(2 * MiB);
  expect((await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(kept) })).status).toBe(201);
  // RGW's bucket quota, set below what the bucket holds: every write is refused (403 QuotaExceeded).
  await rgw.admin('quota', 'set', '--quota-scope=bucket', `--bucket=${s3.bucket}`, '--max-size=1048576');
  await rgw.admin('quota', 'enable', '--quota-scope=bucket', `--bucket=${s3.bucket}`);
  try {
    for (const size of [50_000, 20 * MiB]) {
      const bytes = crypto.randomBytes(size);
      const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
      expect([size, res.status, (await json(res)).code]).toEqual([size, 507, 'INSUFFICIENT_STORAGE']);
      expect((await svc.fetch(`/api/assets/hash/${blake3Of(bytes)}`, { method: 'HEAD' })).status).toBe(404);
    }
    expect(await readyz()).toEqual({ status: 503, storage: 'unavailable' });
    // What is stored is still served.
    expect((await svc.fetch(`/api/assets/hash/${blake3Of(kept)}`, { method: 'HEAD' })).status).toBe(200);
  } finally {
    await rgw.admin('quota', 'disable', '--quota-scope=bucket', `--bucket=${s3.bucket}`);
  }
  await recovered();
});
