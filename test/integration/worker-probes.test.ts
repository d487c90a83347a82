import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase, json, KEYS } from '../helpers/harness';
import { parseExposition, samplesOf } from '../helpers/prometheus';
import { spawnService, type ServiceProcess } from '../helpers/service-process';

// A `--role worker` process serves /healthz, /readyz and /metrics on its PORT, for an orchestrator's probes and
// Prometheus, and nothing else: no API, GraphQL, UI or version route answers there.

let worker: ServiceProcess | undefined;
let dataDir: string;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-worker-'));
  worker = await spawnService(
    { DATABASE_URL: await createTestDatabase(), DATA_DIR: dataDir, METRICS_TOKEN: 'worker-metrics-token' },
    { role: 'worker' },
  );
});
afterAll(async () => {
  await worker?.kill('SIGTERM');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

test('the probes answer as on an API instance', async () => {
  const w = worker!;
  expect(w.logs().some((l) => l.msg === 'workers started')).toBe(true);
  const health = await fetch(`${w.url}/healthz`);
  expect([health.status, await json(health)]).toEqual([200, { status: 'ok' }]);
  const ready = await fetch(`${w.url}/readyz`);
  expect([ready.status, await json(ready)]).toEqual([
    200,
    { status: 'ok', checks: { database: 'ok', storage: 'ok', queue: 'ok' } },
  ]);
});

test("/metrics with its token: the worker's own process metrics and build", async () => {
  const w = worker!;
  expect((await fetch(`${w.url}/metrics`)).status).toBe(401);
  const res = await fetch(`${w.url}/metrics`, { headers: { authorization: 'Bearer worker-metrics-token' } });
  expect(res.status).toBe(200);
  const e = parseExposition(await res.text());
  expect(samplesOf(e, 'assets_build_info')).toHaveLength(1);
  expect(samplesOf(e, 'assets_downloads_in_flight')).toEqual([expect.objectContaining({ value: 0 })]);
  expect(samplesOf(e, 'process_cpu_seconds_total').length).toBeGreaterThan(0);
});

test('every other path is 404 NOT_FOUND, with a key or without', async () => {
  const w = worker!;
  for (const [method, p] of [
    ['GET', '/api/assets'],
    ['POST', '/api/uploads'],
    ['POST', '/graphql'],
    ['GET', '/ui'],
    ['GET', '/version'],
    ['GET', '/openapi.yaml'],
    ['POST', '/healthz'],
  ] as const) {
    const res = await fetch(w.url + p, { method, headers: { 'x-api-key': KEYS.alice } });
    expect([method, p, res.status]).toEqual([method, p, 404]);
    expect(await json(res)).toMatchObject({ code: 'NOT_FOUND', message: expect.any(String) });
  }
});
