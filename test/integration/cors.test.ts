/**
 * CORS (contract 3.8) as the protocol's messages, over real HTTP: preflights answered without a key and cached, the
 * key and tus headers allowed, the answer headers exposed, no credentials, and an origin not listed left without any
 * CORS header (its request answered as any other). The browser's side of it: browser-cors.test.ts.
 */
import { CORS_EXPOSED_HEADERS } from '../../src/http/cors';
import { json, KEYS, startTestService, type TestService } from '../helpers/harness';

const APP = 'http://app.example.com';
const OTHER = 'http://evil.example.com';
let svc: TestService;

const CORS_HEADERS = [
  'access-control-allow-origin',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-allow-credentials',
  'access-control-expose-headers',
  'access-control-max-age',
];
const corsOf = (r: Response) =>
  Object.fromEntries(CORS_HEADERS.filter((h) => r.headers.has(h)).map((h) => [h, r.headers.get(h)]));
const preflight = (path: string, origin: string, method: string, headers: string) =>
  svc.fetch(path, {
    method: 'OPTIONS',
    key: null,
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });

beforeAll(async () => {
  svc = await startTestService({ CORS_ORIGINS: `${APP},http://127.0.0.1:9` });
});
afterAll(async () => {
  await svc?.stop();
});

test('a preflight from a listed origin is answered 204 without a key, cached, for /api, /graphql and tus', async () => {
  const cases: Array<[string, string, string]> = [
    ['/graphql', 'POST', 'x-api-key,content-type'],
    ['/api/assets', 'GET', 'authorization'],
    ['/api/assets/00000000-0000-4000-8000-000000000000', 'DELETE', 'x-api-key'],
    ['/api/uploads', 'POST', 'x-api-key,tus-resumable,upload-length,upload-metadata,upload-defer-length,upload-concat'],
    ['/api/uploads/abc', 'PATCH', 'x-api-key,tus-resumable,upload-offset,content-type,x-http-method-override'],
    ['/api/assets/download', 'POST', 'x-api-key,content-type,idempotency-key'],
    ['/api/no-such-route', 'GET', 'x-api-key'],
  ];
  for (const [path, method, headers] of cases) {
    const r = await preflight(path, APP, method, headers);
    expect([path, r.status]).toEqual([path, 204]);
    const h = corsOf(r);
    expect(h['access-control-allow-origin']).toBe(APP);
    expect(h['access-control-allow-methods']!.split(',')).toEqual(expect.arrayContaining([method]));
    const allowed = h['access-control-allow-headers']!.toLowerCase().split(',');
    for (const one of headers.split(',')) expect([path, allowed.includes(one)]).toEqual([path, true]);
    expect(h['access-control-max-age']).toBe('7200');
    expect(h['access-control-allow-credentials']).toBeUndefined();
    expect(r.headers.get('vary')).toContain('Origin');
  }
});

test('answers to a listed origin expose the headers a client reads; errors (401) carry them too', async () => {
  const r = await svc.fetch('/api/assets?limit=1', { headers: { origin: APP } });
  expect(r.status).toBe(200);
  expect(corsOf(r)).toEqual({
    'access-control-allow-origin': APP,
    'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(','),
  });
  for (const h of [
    'ETag',
    'Location',
    'Content-Range',
    'Content-Disposition',
    'Upload-Offset',
    'Upload-Length',
    'Upload-Expires',
    'Tus-Resumable',
    'Tus-Version',
    'Tus-Extension',
    'Tus-Max-Size',
    'Asset-Id',
    'Asset-Created',
    'Retry-After',
    'RateLimit',
    'RateLimit-Policy',
  ]) {
    expect(CORS_EXPOSED_HEADERS).toContain(h);
  }
  const denied = await svc.fetch('/api/assets', { key: null, headers: { origin: APP } });
  expect([denied.status, corsOf(denied)['access-control-allow-origin']]).toEqual([401, APP]);
  // The hot route (GET /api/assets/{id}) and GraphQL go through the same step.
  const hot = await svc.fetch('/api/assets/00000000-0000-4000-8000-000000000000', { headers: { origin: APP } });
  expect([hot.status, corsOf(hot)['access-control-allow-origin']]).toEqual([404, APP]);
  const g = await svc.fetch('/graphql', {
    method: 'POST',
    headers: { origin: APP, 'content-type': 'application/json' },
    body: '{"query":"{ assets { total } }"}',
  });
  expect([g.status, corsOf(g)['access-control-allow-origin']]).toEqual([200, APP]);
  // tus's discovery (OPTIONS without Access-Control-Request-Method) is tus's own answer, with the CORS headers.
  const tus = await svc.fetch('/api/uploads', { method: 'OPTIONS', key: null, headers: { origin: APP } });
  expect([tus.status, tus.headers.get('tus-version'), corsOf(tus)['access-control-allow-origin']]).toEqual([
    204,
    '1.0.0',
    APP,
  ]);
  // tus's answers carry the service's exposed headers, not tus's own list.
  const created = await svc.fetch('/api/uploads', {
    method: 'POST',
    headers: { origin: APP, 'tus-resumable': '1.0.0', 'upload-length': '0' },
  });
  expect([created.status, corsOf(created)]).toEqual([
    201,
    { 'access-control-allow-origin': APP, 'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(',') },
  ]);
});

test('an origin not listed gets no CORS header, and its request is answered as any other', async () => {
  const pre = await preflight('/graphql', OTHER, 'POST', 'x-api-key,content-type');
  expect(corsOf(pre)).toEqual({});
  expect(pre.status).not.toBe(204);
  const r = await svc.fetch('/api/assets?limit=1', { headers: { origin: OTHER } });
  expect([r.status, corsOf(r)]).toEqual([200, {}]);
  expect(Array.isArray((await json(r)).assets)).toBe(true);
  const created = await svc.fetch('/api/uploads', {
    method: 'POST',
    headers: { origin: OTHER, 'tus-resumable': '1.0.0', 'upload-length': '0' },
  });
  expect([created.status, corsOf(created)]).toEqual([201, {}]);
  // A key is still a key: without one, 401 as for anyone.
  expect((await svc.fetch('/api/assets', { key: null, headers: { origin: OTHER } })).status).toBe(401);
  // Routes outside the API get no CORS headers even from a listed origin.
  expect(corsOf(await svc.fetch('/healthz', { headers: { origin: APP } }))).toEqual({});
});

test('CORS_ORIGINS=* allows any origin (no credentials), and without CORS_ORIGINS no origin is allowed', async () => {
  const any = await startTestService({ CORS_ORIGINS: '*' });
  const none = await startTestService({});
  try {
    const pre = await any.fetch('/api/uploads', {
      method: 'OPTIONS',
      key: null,
      headers: { origin: OTHER, 'access-control-request-method': 'POST' },
    });
    expect([
      pre.status,
      corsOf(pre)['access-control-allow-origin'],
      corsOf(pre)['access-control-allow-credentials'],
    ]).toEqual([204, '*', undefined]);
    const r = await any.fetch('/api/assets', { headers: { origin: OTHER } });
    expect(corsOf(r)['access-control-allow-origin']).toBe('*');
    const off = await none.fetch('/graphql', {
      method: 'OPTIONS',
      key: null,
      headers: { origin: APP, 'access-control-request-method': 'POST' },
    });
    expect(corsOf(off)).toEqual({});
    expect(corsOf(await none.fetch('/api/assets', { key: KEYS.alice, headers: { origin: APP } }))).toEqual({});
  } finally {
    await any.stop();
    await none.stop();
  }
});
