import crypto from 'node:crypto';
import http from 'node:http';
import { Client } from 'pg';
import {
  blake3Of,
  createTestDatabase,
  json,
  KEYS,
  startTestService,
  uploadForm,
  waitFor,
  type TestService,
} from '../helpers/harness';
import { CountingProxy } from '../helpers/counting-proxy';
import { startS3Server, type TestS3Server } from '../helpers/rgw';

/**
 * The service on S3 (Ceph RGW): presigned downloads, multipart-sized uploads, client disconnects, delete + GC, the
 * orphan sweeper, and the GC race across two service instances sharing one database and one bucket.
 */
const MiB = 1024 * 1024;
let s3: TestS3Server;
beforeAll(async () => {
  s3 = await startS3Server();
});
afterAll(async () => {
  await s3?.stop();
});

const unique = (label = 'x') => Buffer.from(`${label}-${crypto.randomUUID()}`);
const hexOf = (b: Buffer) => blake3Of(b).slice('blake3:'.length);
const contentKeys = async () =>
  (await s3.objectKeys()).filter((k) => /^[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}$/.test(k));
const tempKeys = async () => (await s3.objectKeys()).filter((k) => k.startsWith('.tmp/') || k.startsWith('.partial/'));

async function upload(
  svc: TestService,
  body: Buffer,
  fields: Record<string, string> = {},
  key: string = KEYS.alice,
  name = 'f.bin',
) {
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(body, fields, name), key });
  return { status: res.status, body: await json(res) };
}
async function fromHash(svc: TestService, hash: string, key: string) {
  const res = await svc.fetch('/api/assets/from-hash', {
    method: 'POST',
    key,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ hash, tags: ['race'] }),
  });
  return { status: res.status, body: await json(res) };
}

describe('one instance on S3', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ ...s3.env, S3_PRESIGNED_DOWNLOADS: 'true', CONTENT_GC_GRACE_SECONDS: '0' });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  test('readiness checks the bucket', async () => {
    const res = await svc.fetch('/readyz', { key: null });
    expect(res.status).toBe(200);
    expect((await json(res)).checks.storage).toBe('ok');
  });

  test('content answers 302 to a presigned URL that serves the bytes, name and type', async () => {
    const bytes = unique('presigned');
    const { body: a } = await upload(svc, bytes, {}, KEYS.alice, 'hello.txt');
    const res = await svc.fetch(`/api/assets/${a.id}/content`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = res.headers.get('location')!;
    expect(location).toContain(`/${s3.bucket}/${hexOf(bytes).slice(0, 2)}/`);
    const direct = await fetch(location);
    expect(Buffer.from(await direct.arrayBuffer()).equals(bytes)).toBe(true);
    expect(direct.headers.get('content-type')).toBe('text/plain');
    // attachment by default; inline when asked for.
    expect(direct.headers.get('content-disposition')).toBe(
      `attachment; filename="hello.txt"; filename*=UTF-8''hello.txt`,
    );
    const inline = await fetch(
      (await svc.fetch(`/api/assets/${a.id}/content?disposition=inline`, { redirect: 'manual' })).headers.get(
        'location',
      )!,
    );
    expect(inline.headers.get('content-disposition')).toBe(`inline; filename="hello.txt"; filename*=UTF-8''hello.txt`);
    // Active content stays an attachment on the bucket's origin too.
    const { body: h } = await upload(
      svc,
      Buffer.from(`<!DOCTYPE html><p>${crypto.randomUUID()}`),
      {},
      KEYS.alice,
      'x.html',
    );
    const html = await fetch(
      (await svc.fetch(`/api/assets/${h.id}/content`, { redirect: 'manual' })).headers.get('location')!,
    );
    expect(html.headers.get('content-disposition')).toMatch(/^attachment; /);
    expect(html.headers.get('content-type')).toBe('application/octet-stream');
    // HEAD and conditional requests are still answered by the service.
    expect((await svc.fetch(`/api/assets/${a.id}/content`, { method: 'HEAD' })).status).toBe(200);
  });

  test('a multipart-sized upload round-trips, with ranges across parts', async () => {
    const bytes = crypto.randomBytes(9 * MiB + 5);
    const { status, body: a } = await upload(svc, bytes);
    expect(status).toBe(201);
    expect(a.asset_hash).toBe(blake3Of(bytes));
    const part = await svc.fetch(`/api/assets/${a.id}/content`, {
      headers: { range: `bytes=${8 * MiB - 3}-${8 * MiB + 2}` },
    });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(8 * MiB - 3, 8 * MiB + 3))).toBe(true);
    expect(await tempKeys()).toEqual([]);
  });

  test('a client that disconnects mid-upload leaves no temporary object or multipart upload', async () => {
    const boundary = 'xxBOUNDARYxx';
    const url = new URL('/api/assets', svc.url);
    const req = http.request(url, {
      method: 'POST',
      headers: {
        'x-api-key': KEYS.alice,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'transfer-encoding': 'chunked',
      },
    });
    req.on('error', () => undefined);
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\n`);
    for (let i = 0; i < 12; i++)
      await new Promise<void>((resolve) => req.write(crypto.randomBytes(MiB), () => resolve()));
    // Wait until the service has begun a multipart upload, then vanish.
    await waitFor(async () => ((await s3.pendingUploads()) > 0 ? true : undefined), {
      what: 'a multipart upload to begin',
    });
    req.destroy();
    await waitFor(
      async () => ((await tempKeys()).length === 0 && (await s3.pendingUploads()) === 0 ? true : undefined),
      { what: 'no temporaries' },
    );
  });

  test('delete + GC removes the row and the blob; from-hash then answers 404', async () => {
    const bytes = unique('gc');
    const { body: a } = await upload(svc, bytes);
    const key = `${hexOf(bytes).slice(0, 2)}/${hexOf(bytes).slice(2, 4)}/${hexOf(bytes)}`;
    expect(await s3.objectKeys()).toContain(key);
    expect((await svc.fetch(`/api/assets/${a.id}`, { method: 'DELETE' })).status).toBe(204);
    await waitFor(async () => (!(await s3.objectKeys()).includes(key) ? true : undefined), {
      what: 'the blob to be collected',
    });
    expect((await svc.fetch(`/api/assets/hash/${blake3Of(bytes)}`, { method: 'HEAD' })).status).toBe(404);
    expect((await fromHash(svc, blake3Of(bytes), KEYS.bob)).status).toBe(404);
    // Uploading it again stores it anew.
    const again = await upload(svc, bytes, {}, KEYS.bob);
    expect(again.status).toBe(201);
    expect(await s3.objectKeys()).toContain(key);
  });

  test('the orphan sweeper removes blobs without a content row, and only those', async () => {
    const { blobStore, content } = svc.container;
    const stray = unique('stray');
    await blobStore.commit(
      await blobStore.writeTemp(
        (async function* () {
          yield stray;
        })(),
      ),
      hexOf(stray),
    );
    const kept = unique('kept');
    await upload(svc, kept);
    expect(await content.sweepOrphanBlobs(3600_000)).toBe(0); // too young
    expect(await content.sweepOrphanBlobs(-60_000)).toBeGreaterThanOrEqual(1);
    expect(await blobStore.exists(hexOf(stray))).toBe(false);
    expect(await blobStore.exists(hexOf(kept))).toBe(true);
  });
});

describe('the store unreachable', () => {
  let svc: TestService;
  let proxy: CountingProxy;
  beforeAll(async () => {
    // The service reaches RGW through a proxy that can drop every connection and refuse new ones.
    proxy = await new CountingProxy(s3.endpoint).start();
    svc = await startTestService({ ...s3.env, S3_ENDPOINT: proxy.url });
  });
  afterAll(async () => {
    await svc?.stop();
    await proxy?.close();
  });

  test('uploads and content answer 503 SERVICE_UNAVAILABLE with Retry-After (not 500), /readyz names storage; all work again after', async () => {
    const before = unique('before');
    const stored = await upload(svc, before);
    expect(stored.status).toBe(201);
    proxy.cutNow();
    try {
      const unavailable = async (res: Response) => {
        const body = await json(res);
        expect([res.status, res.headers.get('retry-after'), body.code]).toEqual([503, '5', 'SERVICE_UNAVAILABLE']);
        expect(JSON.stringify(body)).not.toMatch(/ECONN|127\.0\.0\.1|at .*\.js/);
      };
      await unavailable(
        await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(unique('during'), {}, 'f.bin') }),
      );
      await unavailable(await svc.fetch(`/api/assets/${stored.body.id}/content`));
      const gone = await svc.fetch('/readyz', { key: null });
      expect([gone.status, (await json(gone)).checks?.storage]).toEqual([503, 'unavailable']);
    } finally {
      proxy.restore();
    }
    const after = unique('after');
    expect((await upload(svc, after)).status).toBe(201);
    const content = await svc.fetch(`/api/assets/${stored.body.id}/content`);
    expect(Buffer.from(await content.arrayBuffer())).toEqual(before);
    expect(await tempKeys()).toEqual([]);
  });
});

describe('the store failing on its side', () => {
  let svc: TestService;
  let proxy: CountingProxy;
  beforeAll(async () => {
    proxy = await new CountingProxy(s3.endpoint).start();
    svc = await startTestService({ ...s3.env, S3_ENDPOINT: proxy.url });
  });
  afterAll(async () => {
    await svc?.stop();
    await proxy?.close();
  });

  test.each([500, 502, 504])(
    'every store request answered %i (after the SDK retries): uploads and content answer 503 with Retry-After, nothing kept',
    async (status) => {
      const before = unique('before');
      const stored = await upload(svc, before);
      expect(stored.status).toBe(201);
      const temps = (await tempKeys()).length;
      proxy.refuse = () => status;
      try {
        for (const res of [
          await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(unique('during'), {}, 'f.bin') }),
          await svc.fetch(`/api/assets/${stored.body.id}/content`),
        ]) {
          const body = await json(res);
          expect([res.status, res.headers.get('retry-after'), body.code]).toEqual([503, '5', 'SERVICE_UNAVAILABLE']);
        }
      } finally {
        proxy.refuse = undefined;
      }
      const content = await svc.fetch(`/api/assets/${stored.body.id}/content`);
      expect(Buffer.from(await content.arrayBuffer()).equals(before)).toBe(true);
      expect((await tempKeys()).length).toBe(temps);
    },
  );

  test('501 (a feature the store lacks) is not taken for an outage: no 503 with Retry-After for a retry that cannot help', async () => {
    proxy.refuse = () => 501;
    try {
      const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(unique('lacking'), {}, 'f.bin') });
      expect(res.status).not.toBe(503);
      expect(res.headers.get('retry-after')).toBeNull();
      expect(JSON.stringify(await json(res))).not.toMatch(/at .*\.js/);
    } finally {
      proxy.refuse = undefined;
    }
  });
});

describe('the store silent half-way through a body', () => {
  let svc: TestService;
  let proxy: CountingProxy;
  beforeAll(async () => {
    proxy = await new CountingProxy(s3.endpoint).start();
    svc = await startTestService({ ...s3.env, S3_ENDPOINT: proxy.url, S3_TIMEOUT_MS: '1500' });
  });
  afterAll(async () => {
    await svc?.stop();
    await proxy?.close();
  });

  test('content whose store stops sending is cut after S3_TIMEOUT_MS, not held for ever; the next request is served', async () => {
    const bytes = Buffer.concat([unique('stall'), crypto.randomBytes(4 * MiB)]);
    const stored = await upload(svc, bytes);
    expect(stored.status).toBe(201);
    proxy.stallRule = {
      direction: 'out',
      afterBytes: MiB,
      match: (method, p) => method === 'GET' && /\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}(\?|$)/.test(p),
    };
    const res = await svc.fetch(`/api/assets/${stored.body.id}/content`, { signal: AbortSignal.timeout(30_000) });
    expect(res.status).toBe(200);
    // The client's own 30 s limit would end it as a TimeoutError; the service's cut ends it as a terminated body.
    const err = await res.arrayBuffer().then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.name).toBe('TypeError');
    proxy.stallRule = undefined;
    const again = await svc.fetch(`/api/assets/${stored.body.id}/content`);
    expect(Buffer.from(await again.arrayBuffer()).equals(bytes)).toBe(true);
  });
});

describe('two instances on one database and one bucket: GC vs concurrent references', () => {
  let a: TestService;
  let b: TestService;
  let db: Client;
  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    // Grace 0: deleted content is collectable at once (the gc jobs of both instances also run in the background).
    const env = { ...s3.env, CONTENT_GC_GRACE_SECONDS: '0' };
    [a, b] = await Promise.all([startTestService(env, { databaseUrl }), startTestService(env, { databaseUrl })]);
    db = new Client({ connectionString: databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await Promise.all([a?.stop(), b?.stop()]);
  });

  /** Every asset's blob exists and reads back; every content row has its blob. */
  async function checkInvariant(): Promise<void> {
    const rows = await db.query<{ blake3: string; referenced: boolean }>(
      'SELECT c.blake3, EXISTS (SELECT 1 FROM asset a WHERE a.content_hash = c.blake3) AS referenced FROM content c',
    );
    const keys = new Set((await contentKeys()).map((k) => k.slice(6)));
    for (const r of rows.rows) expect([r.blake3.trim(), keys.has(r.blake3.trim())]).toEqual([r.blake3.trim(), true]);
    const dangling = await db.query(
      'SELECT 1 FROM asset a WHERE NOT EXISTS (SELECT 1 FROM content c WHERE c.blake3 = a.content_hash)',
    );
    expect(dangling.rowCount).toBe(0);
  }

  test('collect on one instance races uploads and from-hash of the same content on the other', async () => {
    const outcomes = { referenced: 0, collected: 0 };
    for (let i = 0; i < 24; i++) {
      const bytes = unique(`race-${i}`);
      const hex = hexOf(bytes);
      const seeded = await upload(a, bytes);
      expect((await a.fetch(`/api/assets/${seeded.body.id}`, { method: 'DELETE' })).status).toBe(204);
      // Stagger the start a little so both orders (and the overlaps in between) occur.
      const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const [gc, ref] = await Promise.all([
        delay(i % 4).then(() => b.container.content.collect(hex)),
        delay((i >> 2) % 3).then(() =>
          i % 2 === 0 ? upload(a, bytes, {}, KEYS.bob) : fromHash(a, blake3Of(bytes), KEYS.bob),
        ),
      ]);
      if (gc) outcomes.collected++;
      if (ref.status === 201 || ref.status === 200) {
        outcomes.referenced++;
        const got = await b.fetch(`/api/assets/${ref.body.id}/content`, { key: KEYS.bob });
        expect([i, got.status]).toEqual([i, 200]);
        expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
        expect(await b.container.blobStore.exists(hex)).toBe(true);
      } else {
        // Only from-hash can lose the race, and only to a GC that really removed the content: this one, or the
        // background gc job of either instance (grace 0), which can come first.
        expect([i, ref.status]).toEqual([i, 404]);
        const row = await db.query('SELECT 1 FROM content WHERE blake3 = $1', [hex]);
        expect([i, gc || row.rowCount === 0]).toEqual([i, true]);
      }
    }
    expect(outcomes.referenced).toBeGreaterThan(0);
    await checkInvariant();
  });

  test('a blob removed between the copy before the lock and the transaction is committed again', async () => {
    const bytes = unique('window');
    const hex = hexOf(bytes);
    const seeded = await upload(a, bytes);
    await a.fetch(`/api/assets/${seeded.body.id}`, { method: 'DELETE' });
    // Deterministic worst case: right after instance A's precommit found the blob present (and so copied nothing),
    // instance B collects the content, row and blob.
    const content = a.container.content;
    const original = content.precommit.bind(content);
    // The background GC of either instance may have collected the content already (grace 0); the row is gone then and
    // only the blob precommit just copied remains: removing it directly makes the same window.
    let blobGone = false;
    content.precommit = async (ingested) => {
      await original(ingested);
      if (ingested.digest.blake3 !== hex) return;
      if (!(await b.container.content.collect(hex))) {
        const row = await db.query('SELECT 1 FROM content WHERE blake3 = $1', [hex]);
        if (row.rowCount === 0) await b.container.blobStore.quarantine(hex, '2026-01-01');
      }
      blobGone = !(await b.container.blobStore.exists(hex));
    };
    try {
      const res = await upload(a, bytes, {}, KEYS.bob);
      expect(blobGone).toBe(true);
      expect(res.status).toBe(201);
    } finally {
      content.precommit = original;
    }
    expect(await b.container.blobStore.exists(hex)).toBe(true);
    await checkInvariant();
    expect(await tempKeys()).toEqual([]);
  });
});
