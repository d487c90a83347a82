/**
 * `Allow` names the methods of the route a path belongs to, for OPTIONS and for 405 alike, on every route of the
 * table (read from the app): a literal route (/api/assets/download) is its own resource, whatever the template beside
 * it (/api/assets/{id}) takes (issue 31: OPTIONS answered with the template's methods).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { buildContainer, type Container } from '../../src/container';
import { createLogger } from '../../src/infra/logger';
import { createTestDatabase, KEYS } from '../helpers/harness';
import { servedRoutes } from '../helpers/route-table';

let container: Container;
let server: http.Server;
let base: string;
/** The methods of each route path of the table (OpenAPI form), HEAD with GET as Express serves it. */
let table: Map<string, Set<string>>;

beforeAll(async () => {
  const config = loadConfig({
    PORT: '0',
    DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'allow-test-')),
    DATABASE_URL: await createTestDatabase(),
    API_KEYS: `alice:${KEYS.alice}`,
    METRICS_TOKEN: 'metrics-token',
    LOG_LEVEL: 'silent',
  });
  container = await buildContainer(config, createLogger('silent'), config.databaseUrl!);
  const app = await createApp(container);
  table = new Map();
  for (const r of servedRoutes(app, (p) => p === '/graphql' || p.startsWith('/graphql/'))) {
    const methods = table.get(r.path) ?? new Set<string>();
    methods.add(r.method);
    if (r.method === 'GET') methods.add('HEAD');
    table.set(r.path, methods);
  }
  server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await container?.close();
  fs.rmSync(container.config.dataDir, { recursive: true, force: true });
});

/** A concrete path of a route template, each parameter a value its handler accepts. */
const VALUES: Record<string, string> = {
  id: '00000000-0000-4000-8000-000000000031',
  task_id: '00000000-0000-4000-8000-000000000031',
  job_id: '00000000-0000-4000-8000-000000000031',
  hash: `blake3:${'a'.repeat(64)}`,
  export_name: 'export.zip',
  file: 'app.js',
  owner: 'alice',
};
const concrete = (template: string) =>
  template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    if (!VALUES[name]) throw new Error(`no value for the parameter ${name} of ${template}`);
    return VALUES[name];
  });

const allowOf = (res: Response) => (res.headers.get('allow') ?? '').split(/,\s*/).filter(Boolean).sort();
const send = (p: string, method: string) => fetch(base + p, { method, headers: { 'x-api-key': KEYS.alice } });

test('the table has the literal routes beside /api/assets/{id} (the walk sees them)', () => {
  for (const p of [
    '/api/assets/{id}',
    '/api/assets/download',
    '/api/assets/export',
    '/api/assets/from-hash',
    '/api/assets/remote-metadata',
  ]) {
    expect([p, table.has(p)]).toEqual([p, true]);
  }
});

test('OPTIONS answers Allow with exactly the methods of the route the path belongs to, on every route', async () => {
  const wrong: unknown[] = [];
  for (const [template, methods] of table) {
    // tus discovery answers OPTIONS itself (its capabilities): a route of its own.
    if (methods.has('OPTIONS')) continue;
    const p = concrete(template);
    const res = await send(p, 'OPTIONS');
    await res.arrayBuffer();
    const expected = [...methods].sort();
    if (res.status >= 300 || allowOf(res).join() !== expected.join())
      wrong.push({ p, status: res.status, allow: allowOf(res), expected });
  }
  expect(wrong).toEqual([]);
});

test('a method the route does not take is 405 with the same Allow, on every route', async () => {
  const wrong: unknown[] = [];
  for (const [template, methods] of table) {
    const p = concrete(template);
    const method = ['PUT', 'PATCH', 'POST', 'DELETE', 'GET'].find((m) => !methods.has(m))!;
    const res = await send(p, method);
    const body = (await res.json()) as { code?: string };
    const expected = [...methods].sort();
    if (res.status !== 405 || body.code !== 'METHOD_NOT_ALLOWED' || allowOf(res).join() !== expected.join()) {
      wrong.push({ p, method, status: res.status, code: body.code, allow: allowOf(res), expected });
    }
  }
  expect(wrong).toEqual([]);
});

test('the cases of the issue, by hand', async () => {
  for (const [p, allow] of [
    ['/api/assets/download', ['POST']],
    ['/api/assets/export', ['POST']],
    ['/api/assets/remote-metadata', ['GET', 'HEAD']],
    ['/api/assets/from-hash', ['POST']],
    [`/api/assets/${VALUES.id}`, ['DELETE', 'GET', 'HEAD', 'PUT']],
  ] as const) {
    const res = await send(p, 'OPTIONS');
    expect({ p, status: res.status, allow: allowOf(res) }).toEqual({ p, status: 204, allow });
  }
  // Without a key an /api path is 401, as every other request there; open paths answer.
  expect((await fetch(`${base}/api/assets/download`, { method: 'OPTIONS' })).status).toBe(401);
  const open = await fetch(`${base}/healthz`, { method: 'OPTIONS' });
  expect([open.status, allowOf(open)]).toEqual([204, ['GET', 'HEAD']]);
});
