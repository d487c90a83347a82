import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/app';
import { withFastLane } from '../../src/http/rest/fast-lane';
import type { Logger } from '../../src/infra/logger';
import { blake3Of, KEYS, sha256Of, startTestService, uploadForm, type TestService } from '../helpers/harness';

// The fast lane (src/http/rest/fast-lane.ts) answers GET /api/assets/{id} and HEAD /api/assets/hash/{hash} before
// Express. Every answer must be the one the Express routes give, header by header.

let svc: TestService;
let expressOnly: { url: string; close(): Promise<void> };
let laned: { url: string; close(): Promise<void>; toExpress: () => number };
let mine: { id: string; hash: string; sha256: string };
let bobs: { id: string };

async function listen(listener: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(listener);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

beforeAll(async () => {
  svc = await startTestService({}, { validateResponses: true });
  const app = await createApp(svc.container);
  expressOnly = await listen(app);
  let passed = 0;
  const lane = withFastLane({ assets: svc.container.assets, auth: svc.container.requestAuth, logger: svc.container.logger, config: svc.container.config }, ((req: http.IncomingMessage, res: http.ServerResponse) => {
    passed++;
    app(req, res);
  }) as unknown as Parameters<typeof withFastLane>[1]);
  laned = { ...(await listen(lane)), toExpress: () => passed };
  const bytes = Buffer.from(`fast lane ${crypto.randomUUID()}`);
  const up = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes, { tags: 'models' }) });
  const body = (await up.json()) as { id: string };
  mine = { id: body.id, hash: blake3Of(bytes), sha256: sha256Of(bytes) };
  const other = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(Buffer.from(crypto.randomUUID())), key: KEYS.bob });
  bobs = (await other.json()) as { id: string };
});
afterAll(async () => {
  await laned?.close();
  await expressOnly?.close();
  await svc?.stop();
});

type Answer = { status: number; headers: Record<string, string>; body: string };

async function ask(base: string, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(base + path, { method, headers });
  const h: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (k !== 'date') h[k] = v;
  });
  return { status: res.status, headers: h, body: await res.text() };
}

/** The same request to both servers; generated request ids are compared by shape. */
async function both(method: string, path: string, headers: Record<string, string> = { 'x-api-key': KEYS.alice }) {
  const before = laned.toExpress();
  const a = await ask(laned.url, method, path, headers);
  const b = await ask(expressOnly.url, method, path, headers);
  const fast = laned.toExpress() === before;
  for (const x of [a, b]) {
    if (x.headers['x-request-id'] !== headers['x-request-id']) {
      expect(x.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      x.body = x.body.replaceAll(x.headers['x-request-id']!, '<id>');
      x.headers['x-request-id'] = '<generated>';
    }
  }
  expect(a).toEqual(b);
  return { answer: a, fast };
}

const cases: Array<[string, string, () => string, Record<string, string>?, number?, boolean?]> = [
  ['GET own asset', 'GET', () => `/api/assets/${mine.id}`, undefined, 200, true],
  ['GET own asset, upper-case id', 'GET', () => `/api/assets/${mine.id.toUpperCase()}`, undefined, 200, true],
  ['GET with a query string', 'GET', () => `/api/assets/${mine.id}?x=1&y`, undefined, 200, true],
  ['GET with Authorization: Bearer', 'GET', () => `/api/assets/${mine.id}`, { authorization: `Bearer ${KEYS.alice}` }, 200, true],
  ['GET with a client request id', 'GET', () => `/api/assets/${mine.id}`, { 'x-api-key': KEYS.alice, 'x-request-id': 'trace-42' }, 200, true],
  ['GET with a malformed request id', 'GET', () => `/api/assets/${mine.id}`, { 'x-api-key': KEYS.alice, 'x-request-id': 'bad id!' }, 200, true],
  ["GET another owner's asset", 'GET', () => `/api/assets/${bobs.id}`, undefined, 404, true],
  ['GET an unknown id', 'GET', () => `/api/assets/${crypto.randomUUID()}`, undefined, 404, true],
  ['GET without a key', 'GET', () => `/api/assets/${mine.id}`, {}, 401, true],
  ['GET with a wrong key', 'GET', () => `/api/assets/${mine.id}`, { 'x-api-key': 'nope' }, 401, true],
  ['GET a trailing-slash id (Express)', 'GET', () => `/api/assets/${mine.id}/`, undefined, 200, false],
  ['GET a percent-encoded id (Express)', 'GET', () => `/api/assets/${mine.id.replace('-', '%2D')}`, undefined, 200, false],
  ['GET a malformed id (Express)', 'GET', () => '/api/assets/not-a-uuid', undefined, 400, false],
  ['HEAD stored content by blake3', 'HEAD', () => `/api/assets/hash/${mine.hash}`, undefined, 200, true],
  ['HEAD stored content by sha256', 'HEAD', () => `/api/assets/hash/${mine.sha256}`, undefined, 200, true],
  ['HEAD unknown content', 'HEAD', () => `/api/assets/hash/blake3:${'0'.repeat(64)}`, undefined, 404, true],
  ['HEAD without a key', 'HEAD', () => `/api/assets/hash/${mine.hash}`, {}, 401, true],
  ['HEAD a percent-encoded hash (Express)', 'HEAD', () => `/api/assets/hash/${mine.hash.replace(':', '%3A')}`, undefined, 200, false],
  ['HEAD a malformed hash (Express)', 'HEAD', () => '/api/assets/hash/md5:abc', undefined, 400, false],
];

test.each(cases)('%s: the same answer as Express', async (_name, method, path, headers, status, fast) => {
  const { answer, fast: wasFast } = await both(method, path(), headers);
  expect(answer.status).toBe(status);
  expect(wasFast).toBe(fast);
});

test('an unexpected error is logged and answered 500 INTERNAL with the request id, as by the error middleware', async () => {
  const logged: unknown[] = [];
  const logger = { error: (...a: unknown[]) => logged.push(a), warn() {}, info() {}, debug() {} } as unknown as Logger;
  const assets = { get: () => Promise.reject(new Error('database on fire')) } as unknown as TestService['container']['assets'];
  const broken = await listen(withFastLane({ assets, auth: svc.container.requestAuth, logger, config: svc.container.config }, await createApp(svc.container)));
  try {
    const res = await fetch(`${broken.url}/api/assets/${mine.id}`, { headers: { 'x-api-key': KEYS.alice } });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { code: string; message: string; details: { request_id: string } };
    expect(body).toEqual({ code: 'INTERNAL', message: 'internal error', details: { request_id: res.headers.get('x-request-id') } });
    expect(JSON.stringify(body)).not.toContain('on fire');
    expect(logged).toHaveLength(1);
  } finally {
    await broken.close();
  }
});
