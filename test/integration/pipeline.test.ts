import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { createApp } from '../../src/app';
import type { Logger } from '../../src/infra/logger';
import { blake3Of, KEYS, sha256Of, startTestService, uploadForm, type TestService } from '../helpers/harness';

// One request pipeline (createApp): the hottest routes, GET /api/assets/{id} and HEAD /api/assets/hash/{hash}, are
// ordinary handlers of it, in every spelling. Each request passes the same steps once: metrics and access log →
// request id → rate limit and authentication → route → error rendering. (They used to be answered by a second
// listener in front of Express, which repeated the request id, authentication and error rendering.)

const LIMIT = 30;
let svc: TestService;
const logLines: string[] = [];
let asset: { id: string; hash: string; sha256: string };

beforeAll(async () => {
  svc = await startTestService(
    { LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: String(LIMIT) },
    { log: (l) => logLines.push(l), validateResponses: true },
  );
  const bytes = Buffer.from(`pipeline ${crypto.randomUUID()}`);
  const up = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
  expect(up.status).toBe(201);
  asset = { id: ((await up.json()) as { id: string }).id, hash: blake3Of(bytes), sha256: sha256Of(bytes) };
});
afterAll(async () => {
  await svc?.stop();
});

const accessLines = (requestId: string) =>
  logLines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((r) => r.msg === 'request' && r.request_id === requestId);

describe('the hot routes pass every step of the pipeline, once', () => {
  const spellings: Array<[string, string, () => string, number]> = [
    ['GET by id', 'GET', () => `/api/assets/${asset.id}`, 200],
    ['GET by id, upper case', 'GET', () => `/api/assets/${asset.id.toUpperCase()}`, 200],
    ['GET by id, trailing slash', 'GET', () => `/api/assets/${asset.id}/`, 200],
    ['GET by id, with a query string', 'GET', () => `/api/assets/${asset.id}?x=1`, 200],
    ['GET an unknown id', 'GET', () => `/api/assets/${crypto.randomUUID()}`, 404],
    ['HEAD by blake3', 'HEAD', () => `/api/assets/hash/${asset.hash}`, 200],
    ['HEAD by sha256', 'HEAD', () => `/api/assets/hash/${asset.sha256}`, 200],
    ['HEAD by hash, percent-encoded', 'HEAD', () => `/api/assets/hash/${asset.hash.replace(':', '%3A')}`, 200],
    ['HEAD unknown content', 'HEAD', () => `/api/assets/hash/blake3:${'0'.repeat(64)}`, 404],
  ];
  let remaining = LIMIT - 1; // the upload above was alice's first request

  test.each(spellings)(
    '%s: request id, one rate-limit point, one access-log line with the route template',
    async (_name, method, path, status) => {
      const requestId = `pipe-${crypto.randomUUID()}`;
      const res = await svc.fetch(path(), { method, headers: { 'x-request-id': requestId } });
      await res.arrayBuffer();
      expect(res.status).toBe(status);
      expect(res.headers.get('x-request-id')).toBe(requestId);
      // The limiter counted this request exactly once (a second authentication would take two points).
      remaining -= 1;
      expect(res.headers.get('ratelimit-policy')).toBe(`"per-key";q=${LIMIT};w=60`);
      expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"per-key";r=${remaining};t=\\d+$`));
      const lines = accessLines(requestId);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        method,
        status,
        route: method === 'GET' ? '/api/assets/:id' : '/api/assets/hash/:hash',
      });
    },
  );

  test('past the limit, both routes answer 429 from the rate-limit step, before the route runs', async () => {
    for (;;) {
      const res = await svc.fetch(`/api/assets/${asset.id}`);
      await res.arrayBuffer();
      if (res.status === 429) break;
      expect(res.status).toBe(200);
    }
    for (const [method, path] of [
      ['GET', `/api/assets/${asset.id}`],
      ['HEAD', `/api/assets/hash/${asset.hash}`],
    ] as const) {
      const res = await svc.fetch(path, { method });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      if (method === 'GET') expect(((await res.json()) as { code: string }).code).toBe('RATE_LIMITED');
    }
  });
});

test('the route table and the routers give the same answers (canonical spellings vs others)', async () => {
  type Answer = { status: number; headers: Record<string, string>; body: string };
  const ask = async (method: string, path: string, key: string | null = KEYS.bob): Promise<Answer> => {
    const res = await svc.fetch(path, { method, key, headers: { 'x-request-id': 'same' } });
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      if (k !== 'date' && k !== 'ratelimit') headers[k] = v;
    });
    return { status: res.status, headers, body: await res.text() };
  };
  const up = await svc.fetch('/api/assets', {
    method: 'POST',
    body: uploadForm(Buffer.from(`bob ${crypto.randomUUID()}`)),
    key: KEYS.bob,
  });
  const bobs = ((await up.json()) as { id: string }).id;
  const unknown = crypto.randomUUID();
  const pairs: Array<[string, string, string, (string | null)?]> = [
    ['GET', `/api/assets/${bobs}`, `/api/assets/${bobs}/`],
    ['GET', `/api/assets/${bobs}`, `/api/assets/${bobs.replace('-', '%2D')}`],
    ['GET', `/api/assets/${asset.id}`, `/api/assets/${asset.id}/`], // alice's: 404 for bob
    ['GET', `/api/assets/${unknown}`, `/api/assets/${unknown}/`],
    ['GET', `/api/assets/${bobs}`, `/api/assets/${bobs}/`, null],
    ['GET', `/api/assets/${bobs}`, `/api/assets/${bobs}/`, 'wrong-key'],
    ['HEAD', `/api/assets/hash/${asset.hash}`, `/api/assets/hash/${asset.hash.replace(':', '%3A')}`],
    ['HEAD', `/api/assets/hash/blake3:${'0'.repeat(64)}`, `/api/assets/hash/blake3%3A${'0'.repeat(64)}`],
  ];
  for (const [method, table, router, key] of pairs) {
    const a = await ask(method, table, key);
    const b = await ask(method, router, key);
    expect(a).toEqual(b);
  }
  const own = await ask('GET', `/api/assets/${bobs}`);
  expect(own.status).toBe(200);
  expect(own.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(own.headers['content-length']).toBe(String(Buffer.byteLength(own.body)));
  expect((JSON.parse(own.body) as { id: string }).id).toBe(bobs);
});

test('an unexpected error on the hot route is rendered by the error step: 500 INTERNAL with the request id, logged once', async () => {
  const logged: Array<[string, Record<string, unknown> | undefined]> = [];
  const logger = {
    error: (m: string, f?: Record<string, unknown>) => logged.push([m, f]),
    warn() {},
    info() {},
    debug() {},
    child: () => logger,
  } as unknown as Logger;
  const real = svc.container.assets;
  const assets = Object.assign(Object.create(real) as typeof real, {
    get: () => Promise.reject(new Error('database on fire')),
  });
  const app = await createApp({ ...svc.container, assets, logger, metrics: undefined });
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/assets/${asset.id}`, {
      headers: { 'x-api-key': KEYS.bob },
    });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { code: string; message: string; details: { request_id: string } };
    expect(body).toEqual({
      code: 'INTERNAL',
      message: 'internal error',
      details: { request_id: res.headers.get('x-request-id') },
    });
    expect(JSON.stringify(body)).not.toContain('on fire');
    expect(logged).toHaveLength(1);
    expect(logged[0]![1]).toMatchObject({
      request_id: body.details.request_id,
      method: 'GET',
      path: `/api/assets/${asset.id}`,
    });
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('the server has one request listener, the app; a step put at the head of its pipeline sees the hot routes', async () => {
  const listeners = svc.server!.listeners('request');
  expect(listeners).toHaveLength(1);
  const app = listeners[0] as unknown as Express;
  // An Express app, not a function in front of one.
  expect(typeof app.use).toBe('function');
  const stack = (app as unknown as { router: { stack: unknown[] } }).router.stack;
  const seen: string[] = [];
  app.use((req, _res, next) => {
    seen.push(`${req.method} ${req.originalUrl}`);
    next();
  });
  stack.unshift(stack.pop());
  try {
    const paths: Array<[string, string]> = [
      ['GET', `/api/assets/${asset.id}`],
      ['HEAD', `/api/assets/hash/${asset.hash}`],
      ['GET', `/api/assets/${asset.id}/content`],
    ];
    for (const [method, path] of paths) {
      const res = await svc.fetch(path, { method, key: KEYS.bob });
      await res.arrayBuffer();
    }
    expect(seen).toEqual(paths.map(([m, p]) => `${m} ${p}`));
  } finally {
    stack.shift();
  }
});

test("the server hands the app Node's own requests and responses (no constructor swapped in)", async () => {
  const server = svc.server!;
  const seen: boolean[] = [];
  // Runs before the app (prepended): what the server built, before app.handle.
  const probe = (req: http.IncomingMessage, res: http.ServerResponse) => {
    seen.push(
      Object.getPrototypeOf(req) === http.IncomingMessage.prototype &&
        Object.getPrototypeOf(res) === http.ServerResponse.prototype,
    );
  };
  server.prependListener('request', probe);
  try {
    const res = await svc.fetch('/healthz');
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  } finally {
    server.removeListener('request', probe);
  }
  expect(seen).toEqual([true]);
});
