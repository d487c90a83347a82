import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Client } from 'pg';
import { createLogger } from '../../src/infra/logger';
import { blake3Of, json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { ownPostgres, type OwnPostgres } from '../helpers/own-postgres';

/**
 * PostgreSQL stopped, killed and frozen under a running
 * service, on a cluster of this file's own. Every request answers 503 SERVICE_UNAVAILABLE with Retry-After (in
 * time when the database is frozen), the outage is logged once, /readyz names the failed check only, nothing of a
 * refused upload stays, and the service recovers without a restart.
 */
let pg: OwnPostgres;
let svc: TestService;
const lines: Record<string, unknown>[] = [];
let known: { id: string; hash: string };

beforeAll(async () => {
  pg = await ownPostgres();
  const logger = createLogger('info', {}, (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
  svc = await startTestService({}, { databaseUrl: pg.url, logger, validateResponses: true });
  const bytes = crypto.randomBytes(1000);
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
  expect(res.status).toBe(201);
  known = { id: (await json(res)).id, hash: blake3Of(bytes) };
}, 90_000);

afterEach(async () => {
  pg.thaw();
  await pg.ensureRunning();
});

afterAll(async () => {
  pg?.thaw();
  await svc?.stop();
  await pg?.destroy();
});

const logged = (msg: string) => lines.filter((l) => l.msg === msg).length;

/** Paths of the blobs and temporary files on disk. */
function blobFiles(): { blobs: string[]; temps: string[] } {
  const root = path.join(svc.dataDir, 'blobs');
  const blobs: string[] = [];
  for (const a of fs.readdirSync(root).filter((n) => /^[0-9a-f]{2}$/.test(n)))
    for (const b of fs.readdirSync(path.join(root, a))) blobs.push(...fs.readdirSync(path.join(root, a, b)));
  return { blobs, temps: fs.readdirSync(path.join(root, '.tmp')) };
}

async function expectUnavailable(res: Response): Promise<void> {
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe('5');
  const body = await json(res);
  expect(body.code).toBe('SERVICE_UNAVAILABLE');
  expect(JSON.stringify(body)).not.toMatch(/127\.0\.0\.1|ECONN|prisma|stack/i);
}

async function expectEveryRouteUnavailable(): Promise<void> {
  await expectUnavailable(await svc.fetch('/api/assets'));
  await expectUnavailable(await svc.fetch(`/api/assets/${known.id}`));
  await expectUnavailable(await svc.fetch(`/api/assets/${known.id}/`)); // the same through Express
  await expectUnavailable(await svc.fetch('/api/tags'));
  await expectUnavailable(
    await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(crypto.randomBytes(5000)) }),
  );
  const head = await svc.fetch(`/api/assets/hash/${known.hash}`, { method: 'HEAD' });
  expect(head.status).toBe(503);
  const gql = await svc.fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ assets { total } }' }),
  });
  expect(JSON.stringify(await json(gql))).toContain('SERVICE_UNAVAILABLE');
  const ready = await fetch(`${svc.url}/readyz`);
  expect(ready.status).toBe(503);
  const body = await json(ready);
  expect(body).toEqual({
    status: 'unavailable',
    checks: { database: 'unavailable', storage: 'ok', queue: 'unavailable' },
  });
}

/** Ready again; and the blobs of the uploads refused during the outage are gone once rows can be checked. */
async function expectRecovered(): Promise<void> {
  await waitFor(async () => ((await fetch(`${svc.url}/readyz`)).status === 200 ? true : undefined), {
    timeoutMs: 30_000,
    what: 'readiness',
  });
  expect((await svc.fetch(`/api/assets/${known.id}`)).status).toBe(200);
  expect((await svc.fetch('/api/assets')).status).toBe(200);
  await waitFor(async () => (blobFiles().blobs.length === 1 ? true : undefined), {
    timeoutMs: 20_000,
    what: 'refused blobs to be removed',
  });
  expect(blobFiles()).toEqual({ blobs: [known.hash.slice(7)], temps: [] });
}

test('PostgreSQL stopped: 503 + Retry-After everywhere, one log line per transition, no stack traces, recovery', async () => {
  const before = lines.length;
  await pg.stop();
  for (let i = 0; i < 3; i++) await expectEveryRouteUnavailable();
  const during = lines.slice(before);
  expect(during.filter((l) => l.msg === 'database unavailable')).toHaveLength(1);
  expect(during.filter((l) => l.level === 'error')).toEqual([]);
  expect(JSON.stringify(during)).not.toContain('"stack"');
  expect(blobFiles().temps).toEqual([]);
  await pg.start();
  await expectRecovered();
  expect(logged('database available again')).toBe(1);
}, 60_000);

test('PostgreSQL killed: the same, and recovery without a restart', async () => {
  await pg.kill();
  await expectEveryRouteUnavailable();
  await pg.start();
  await expectRecovered();
  expect(logged('database unavailable')).toBe(2);
}, 60_000);

test('PostgreSQL frozen (SIGSTOP): a request answers 503 within 10 s, /readyz within 2 s', async () => {
  pg.freeze();
  try {
    let t = Date.now();
    const ready = await fetch(`${svc.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(Date.now() - t).toBeLessThan(2_000);
    t = Date.now();
    const [byId, list] = await Promise.all([svc.fetch(`/api/assets/${known.id}`), svc.fetch('/api/assets?limit=5')]);
    await expectUnavailable(byId);
    await expectUnavailable(list);
    expect(Date.now() - t).toBeLessThan(10_000);
  } finally {
    pg.thaw();
  }
  await expectRecovered();
}, 60_000);

test('an outage in the middle of an upload of new content: 503, and its blob and temporary file are removed', async () => {
  const bytes = crypto.randomBytes(3 * 1024 * 1024);
  const boundary = 'outageBoundary';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const req = http.request(`${svc.url}/api/assets`, {
    method: 'POST',
    headers: {
      'x-api-key': KEYS.alice,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + bytes.length + tail.length),
    },
  });
  const answer = new Promise<number>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (r) => {
      r.resume();
      resolve(r.statusCode!);
    });
  });
  req.write(head);
  req.write(bytes.subarray(0, 1024 * 1024));
  await waitFor(async () => (blobFiles().temps.length > 0 ? true : undefined), { what: 'the upload to start' });
  await pg.stop();
  req.end(Buffer.concat([bytes.subarray(1024 * 1024), tail]));
  expect(await answer).toBe(503);
  expect(blobFiles().temps).toEqual([]);
  await pg.start();
  // The blob it had put under the content address goes once the database can confirm no row names it.
  await expectRecovered();
  expect(blobFiles().blobs).not.toContain(blake3Of(bytes).slice(7));
}, 60_000);

test('a connection broken while GC holds a content session lock fails that step, never the process; the lock is freed', async () => {
  const hex = 'ab'.repeat(32);
  // The repository's session lock (GC, orphan blob removal), reached directly: its connection is terminated by the
  // server while it is checked out and idle (the blob step), which makes pg emit 'error' on the client.
  const repo = (
    svc.container.content as unknown as { repo: { withSessionLock<T>(h: string, fn: () => Promise<T>): Promise<T> } }
  ).repo;
  const admin = new Client({ connectionString: pg.url });
  await admin.connect();
  try {
    const result = await repo.withSessionLock(hex, async () => {
      const killed = await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_advisory_lock(%' AND pid <> pg_backend_pid()",
      );
      expect(killed.rowCount).toBeGreaterThanOrEqual(1);
      await new Promise((r) => setTimeout(r, 300));
      return 'blob step done';
    });
    expect(result).toBe('blob step done');
    // The session lock died with its connection; nothing holds it now, and the service goes on answering.
    const free = await admin.query('SELECT count(*)::int AS n FROM pg_locks WHERE locktype = $1 AND granted', [
      'advisory',
    ]);
    expect(free.rows[0].n).toBe(0);
    expect((await svc.fetch(`/api/assets/${known.id}`)).status).toBe(200);
  } finally {
    await admin.end();
  }
});

// Last in this file: the upload it finishes adds a blob that the tests above do not expect.
test('an outage in the middle of a tus PATCH: 503 {code, message}, HEAD never ahead of the stored part, and the upload resumes after', async () => {
  const MiB = 1024 * 1024;
  const bytes = crypto.randomBytes(3 * MiB);
  const tus = { 'Tus-Resumable': '1.0.0' };
  const created = await svc.fetch('/api/uploads', {
    method: 'POST',
    headers: { ...tus, 'Upload-Length': String(bytes.length) },
  });
  expect(created.status).toBe(201);
  const id = created.headers.get('location')!.split('/').pop()!;
  const part = path.join(svc.dataDir, 'blobs', '.partial', `upload-${id}`);
  const partSize = () => (fs.existsSync(part) ? fs.statSync(part).size : 0);
  const headOffset = async () =>
    Number((await svc.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: tus })).headers.get('upload-offset'));
  const patch = (offset: number, body: Buffer) =>
    svc.fetch(`/api/uploads/${id}`, {
      method: 'PATCH',
      headers: { ...tus, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' },
      body,
    });
  expect((await patch(0, bytes.subarray(0, MiB))).status).toBe(204);

  const req = http.request(`${svc.url}/api/uploads/${id}`, {
    method: 'PATCH',
    headers: {
      ...tus,
      'x-api-key': KEYS.alice,
      'Upload-Offset': String(MiB),
      'Content-Type': 'application/offset+octet-stream',
      'Content-Length': String(2 * MiB),
    },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (r) => {
      let body = '';
      r.on('data', (d) => (body += d));
      r.on('end', () => resolve({ status: r.statusCode!, body }));
    });
  });
  req.write(bytes.subarray(MiB, 2 * MiB));
  await waitFor(async () => (partSize() >= 2 * MiB ? true : undefined), { what: 'the PATCH to reach the part' });
  await pg.stop();
  req.end(bytes.subarray(2 * MiB));
  const refused = await answer;
  expect(refused.status).toBe(503);
  expect(JSON.parse(refused.body)).toMatchObject({ code: 'SERVICE_UNAVAILABLE', message: expect.any(String) });
  const headDuring = await svc.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: tus });
  expect([headDuring.status, headDuring.headers.get('retry-after')]).toEqual([503, '5']);

  await pg.start();
  await waitFor(async () => ((await fetch(`${svc.url}/readyz`)).status === 200 ? true : undefined), {
    timeoutMs: 30_000,
    what: 'readiness',
  });
  // The offset of the refused PATCH could not be recorded: HEAD still says where the last answered PATCH left it,
  // which the part holds (the bytes past it are cut back by the next PATCH).
  const offset = await headOffset();
  expect(offset).toBe(MiB);
  expect(partSize()).toBeGreaterThanOrEqual(offset);
  // The refused PATCH's lease lapses (it could not be let go while the database was away); the resume waits for it.
  const done = await patch(offset, bytes.subarray(offset));
  expect(done.status).toBe(204);
  const asset = await json(await svc.fetch(`/api/assets/${done.headers.get('asset-id')}`));
  expect(asset.asset_hash).toBe(blake3Of(bytes));
  expect(fs.existsSync(part)).toBe(false);
}, 90_000);
