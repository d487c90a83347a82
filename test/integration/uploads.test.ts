import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Client } from 'pg';
import { blake3Of, json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';

let svc: TestService;
let db: Client;
beforeAll(async () => {
  svc = await startTestService(
    { MAX_UPLOAD_BYTES: String(4 * 1024 * 1024), CONTENT_GC_GRACE_SECONDS: '0' },
    { validateResponses: true },
  );
  db = new Client({ connectionString: svc.databaseUrl });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await svc?.stop();
});

const blobsDir = () => path.join(svc.dataDir, 'blobs');
const tempFiles = () => fs.readdirSync(path.join(blobsDir(), '.tmp'));
const blobFile = (hash: string) => {
  const hex = hash.replace(/^blake3:/, '');
  return path.join(blobsDir(), hex.slice(0, 2), hex.slice(2, 4), hex);
};
const count = async (sql: string, params: unknown[] = []) => Number((await db.query(sql, params)).rows[0].n);

/** Sends a raw multipart request and lets the test decide what to write and when to stop. */
function rawUpload(opts: { headers?: Record<string, string>; key?: string }) {
  const u = new URL(svc.url);
  return http.request({
    host: u.hostname,
    port: u.port,
    path: '/api/assets',
    method: 'POST',
    headers: { 'x-api-key': opts.key ?? KEYS.alice, ...opts.headers },
  });
}

function responseOf(req: http.ClientRequest): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
  });
}

describe('concurrency', () => {
  test('50 simultaneous uploads of the same new content: one blob, one asset per owner', async () => {
    const bytes = crypto.randomBytes(256 * 1024);
    const hash = blake3Of(bytes);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        svc
          .fetch('/api/assets', {
            method: 'POST',
            key: i % 2 ? KEYS.bob : KEYS.alice,
            body: uploadForm(bytes, {}, `same-${i}.bin`),
          })
          .then(async (r) => ({
            status: r.status,
            body: await json(r),
          })),
      ),
    );
    expect(results.filter((r) => r.status !== 200 && r.status !== 201)).toEqual([]);
    expect(results.filter((r) => r.status === 201)).toHaveLength(2);
    const ids = new Set(results.map((r) => r.body.id));
    expect(ids.size).toBe(2);
    expect(await count('SELECT count(*) AS n FROM content WHERE blake3 = $1', [hash.slice(7)])).toBe(1);
    expect(await count('SELECT count(*) AS n FROM asset WHERE content_hash = $1', [hash.slice(7)])).toBe(2);
    expect(fs.existsSync(blobFile(hash))).toBe(true);
    await waitFor(async () => (tempFiles().length === 0 ? true : undefined), { what: 'temporaries to be gone' });
  });

  test('concurrent uploads with the same id: one asset, every answer 200 or 201', async () => {
    const id = crypto.randomUUID();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        svc
          .fetch('/api/assets', { method: 'POST', body: uploadForm(crypto.randomBytes(1000 + i), { id }) })
          .then(async (r) => ({
            status: r.status,
            body: await json(r),
          })),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(results.map((r) => r.body.id))).toEqual(new Set([id]));
    expect(await count('SELECT count(*) AS n FROM asset WHERE id = $1', [id])).toBe(1);
  });
});

describe('nothing is half-written', () => {
  test('a client that disconnects mid-upload leaves no blob, no asset, no temporary', async () => {
    const before = await count('SELECT count(*) AS n FROM content');
    const boundary = 'xBOUNDARYx';
    const req = rawUpload({
      headers: {
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(3 * 1024 * 1024),
      },
    });
    req.on('error', () => undefined);
    req.write(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    req.write(crypto.randomBytes(1024 * 1024));
    // Wait until the service is writing the temporary, then vanish.
    await waitFor(async () => (tempFiles().length > 0 ? true : undefined), { what: 'the upload to start' });
    req.destroy();
    await waitFor(async () => (tempFiles().length === 0 ? true : undefined), { what: 'the temporary to be removed' });
    expect(await count('SELECT count(*) AS n FROM content')).toBe(before);
    // The service is still healthy.
    expect((await svc.fetch('/api/tags')).status).toBe(200);
  });

  test('bodies over MAX_UPLOAD_BYTES get 413, declared or streamed, and leave nothing', async () => {
    const before = await count('SELECT count(*) AS n FROM content');
    const big = crypto.randomBytes(5 * 1024 * 1024);
    const declared = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(big) });
    expect(declared.status).toBe(413);
    expect((await json(declared)).code).toBe('PAYLOAD_TOO_LARGE');
    // Chunked: no Content-Length, so the limit is enforced while streaming.
    const boundary = 'chunkyBoundary';
    const req = rawUpload({
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' },
    });
    const answer = responseOf(req);
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n`);
    for (let i = 0; i < 5 && !req.destroyed; i++) req.write(big.subarray(i * 1024 * 1024, (i + 1) * 1024 * 1024));
    req.end(`\r\n--${boundary}--\r\n`);
    const res = await answer.catch(() => ({ status: 413, body: '{"code":"PAYLOAD_TOO_LARGE"}' }));
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).code).toBe('PAYLOAD_TOO_LARGE');
    await waitFor(async () => (tempFiles().length === 0 ? true : undefined), { what: 'temporaries to be removed' });
    expect(await count('SELECT count(*) AS n FROM content')).toBe(before);
  });
});

describe('bad multipart input answers 4xx with {code, message}', () => {
  const send = async (body: string | Buffer, contentType: string) => {
    const res = await svc.fetch('/api/assets', { method: 'POST', headers: { 'content-type': contentType }, body });
    const b = await json(res);
    expect(typeof b.message).toBe('string');
    return { status: res.status, code: b.code };
  };

  test.each([
    ['no boundary', 'x', 'multipart/form-data', 400, 'INVALID_BODY'],
    [
      'truncated body',
      '--b\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc',
      'multipart/form-data; boundary=b',
      400,
      'INVALID_BODY',
    ],
    ['garbage', 'this is not multipart at all', 'multipart/form-data; boundary=b', 400, 'INVALID_BODY'],
    [
      'no file part',
      '--b\r\nContent-Disposition: form-data; name="tags"\r\n\r\na\r\n--b--\r\n',
      'multipart/form-data; boundary=b',
      400,
      'MISSING_FILE',
    ],
    ['plain text', 'hello', 'text/plain', 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['invalid json', '{"url":', 'application/json', 400, 'INVALID_JSON'],
    ['json without url', '{"name":"x"}', 'application/json', 400, 'INVALID_BODY'],
  ])('%s', async (_label, body, ct, status, code) => {
    expect(await send(body, ct)).toEqual({ status, code });
  });

  test('invalid fields: bad id, bad user_metadata, bad tags, huge field, two files', async () => {
    const cases: [Record<string, string>, number, string][] = [
      [{ id: 'nope' }, 400, 'INVALID_BODY'],
      [{ user_metadata: '{bad json' }, 400, 'INVALID_BODY'],
      [{ user_metadata: '[1,2]' }, 400, 'INVALID_BODY'],
      [{ tags: '["a", 3]' }, 400, 'INVALID_BODY'],
      [{ tags: '[broken' }, 400, 'INVALID_BODY'],
      [{ name: 'x'.repeat(600) }, 400, 'INVALID_BODY'],
      [{ mime_type: 'not a mime' }, 400, 'INVALID_BODY'],
      [{ user_metadata: JSON.stringify({ x: 'y'.repeat(2 * 1024 * 1024) }) }, 413, 'PAYLOAD_TOO_LARGE'],
    ];
    const before = await count('SELECT count(*) AS n FROM content');
    for (const [fields, status, code] of cases) {
      const res = await svc.fetch('/api/assets', {
        method: 'POST',
        body: uploadForm(crypto.randomBytes(2000), fields),
      });
      expect([Object.keys(fields)[0], res.status, (await json(res)).code]).toEqual([
        Object.keys(fields)[0],
        status,
        code,
      ]);
    }
    const two = uploadForm(crypto.randomBytes(100));
    two.append('file', new Blob([crypto.randomBytes(100)]), 'second.bin');
    const res = await svc.fetch('/api/assets', { method: 'POST', body: two });
    expect(res.status).toBe(400);
    expect(await count('SELECT count(*) AS n FROM content')).toBe(before);
    await waitFor(async () => (tempFiles().length === 0 ? true : undefined), { what: 'temporaries to be removed' });
  });
});

describe('content garbage collection', () => {
  test('deleting the last asset of a content removes its blob after the grace period; shared content stays', async () => {
    const shared = crypto.randomBytes(5000);
    const a = await json(await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(shared) }));
    const b = await json(await svc.fetch('/api/assets', { method: 'POST', key: KEYS.bob, body: uploadForm(shared) }));
    const solo = await json(
      await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(crypto.randomBytes(5000)) }),
    );
    expect(fs.existsSync(blobFile(solo.asset_hash))).toBe(true);

    expect((await svc.fetch(`/api/assets/${solo.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await svc.fetch(`/api/assets/${a.id}`, { method: 'DELETE' })).status).toBe(204);
    await waitFor(async () => (fs.existsSync(blobFile(solo.asset_hash)) ? undefined : true), {
      what: 'the blob to be collected',
    });
    expect((await svc.fetch(`/api/assets/hash/${solo.asset_hash}`, { method: 'HEAD' })).status).toBe(404);
    // Still referenced by bob.
    expect(fs.existsSync(blobFile(a.asset_hash))).toBe(true);
    expect((await svc.fetch(`/api/assets/${b.id}/content`, { key: KEYS.bob })).status).toBe(200);
    // Re-uploading collected content stores it again.
    expect((await svc.fetch(`/api/assets/hash/${a.asset_hash}`, { method: 'HEAD' })).status).toBe(200);
  });
});
