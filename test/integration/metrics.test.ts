import crypto from 'node:crypto';
import os from 'node:os';
import { JOB } from '../../src/domain/job-map';
import { isLoopback } from '../../src/http/metrics';
import { startDownload, waitTask } from '../helpers/downloads';
import { bytes, startFakeProviders, type FakeProviders } from '../helpers/fake-providers';
import { gql } from '../helpers/graphql';
import { json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { parseExposition, samplesOf, valueOf, type Exposition } from '../helpers/prometheus';

// GET /metrics: exact counts after known traffic, bounded labels, access rules, access log.

const HTTP = 'assets_http_request_duration_seconds';
const GQL = 'assets_graphql_operation_duration_seconds';

let svc: TestService;
let fake: FakeProviders;
const logLines: string[] = [];
/** An address of this machine other than loopback, if it has one: requests from it are not local. */
const external = Object.values(os.networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

beforeAll(async () => {
  fake = await startFakeProviders();
  svc = await startTestService(
    {
      ...fake.env,
      DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'false',
      LOG_LEVEL: 'info',
      HOST: external ? '0.0.0.0' : '127.0.0.1',
    },
    { log: (l) => logLines.push(l) },
  );
  svc.url = svc.url.replace('0.0.0.0', '127.0.0.1');
});
afterAll(async () => {
  await svc?.stop();
  await fake?.close();
});

async function scrape(s: TestService = svc, init: RequestInit = {}): Promise<Exposition> {
  const res = await fetch(s.url + '/metrics', init);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

const count = (e: Exposition, labels: Record<string, string>) => valueOf(e, `${HTTP}_count`, labels) ?? 0;

describe('after known traffic', () => {
  const sizes = [100, 2_000, 30_000];
  const ids: string[] = [];
  let before: Exposition;
  let after: Exposition;
  let requestId = '';

  beforeAll(async () => {
    before = await scrape();
    for (const [i, n] of sizes.entries()) {
      const res = await svc.fetch('/api/assets', {
        method: 'POST',
        body: uploadForm(crypto.randomBytes(n), {}, `f${i}.bin`),
      });
      expect(res.status).toBe(201);
      ids.push((await json(res)).id);
    }
    // 4 GETs of 3 different ids, the content of two, one unknown id (404).
    for (const id of [...ids, ids[0]!]) {
      const res = await svc.fetch(`/api/assets/${id}`);
      expect(res.status).toBe(200);
      requestId = res.headers.get('x-request-id')!;
      await res.arrayBuffer();
    }
    for (const id of ids.slice(0, 2))
      expect((await (await svc.fetch(`/api/assets/${id}/content`)).arrayBuffer()).byteLength).toBeGreaterThan(0);
    expect((await svc.fetch(`/api/assets/${crypto.randomUUID()}`)).status).toBe(404);
    // A malformed id (the route matched, its error handled after leaving the /api router).
    expect((await svc.fetch('/api/assets/not-a-uuid')).status).toBe(400);
    expect((await svc.fetch('/api/no-such-route')).status).toBe(404);
    expect((await gql(svc, 'query OneAsset($id: ID!) { asset(id: $id) { id size } }', { id: ids[0] })).status).toBe(
      200,
    );
    expect((await gql(svc, '{ assets(limit: 5) { total } }')).status).toBe(200);
    expect((await gql(svc, 'query Broken { asset(id: "x") { nope } }')).status).toBe(400);
    after = await scrape();
  });

  test('request counts per route template and status, with latency histograms', () => {
    const delta = (labels: Record<string, string>) => count(after, labels) - count(before, labels);
    expect(delta({ method: 'POST', route: '/api/assets', status: '201' })).toBe(3);
    expect(delta({ method: 'GET', route: '/api/assets/:id', status: '200' })).toBe(4);
    expect(delta({ method: 'GET', route: '/api/assets/:id', status: '404' })).toBe(1);
    expect(delta({ method: 'GET', route: '/api/assets/:id', status: '400' })).toBe(1);
    expect(delta({ method: 'GET', route: '/api/assets/:id/content', status: '200' })).toBe(2);
    expect(delta({ method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(delta({ method: 'POST', route: '/graphql', status: '200' })).toBe(2);
    expect(delta({ method: 'POST', route: '/graphql', status: '400' })).toBe(1);
    // The scrape before this one is counted too, on its own route.
    expect(delta({ method: 'GET', route: '/metrics', status: '200' })).toBe(1);
    const buckets = samplesOf(after, `${HTTP}_bucket`, { method: 'POST', route: '/api/assets', status: '201' });
    expect(buckets.find((b) => b.labels.le === '+Inf')?.value).toBe(
      count(after, { method: 'POST', route: '/api/assets', status: '201' }),
    );
    expect(valueOf(after, `${HTTP}_sum`, { method: 'POST', route: '/api/assets', status: '201' })).toBeGreaterThan(0);
    // Never a raw path or an id in a label.
    for (const s of samplesOf(after, `${HTTP}_count`)) expect(s.labels.route).toMatch(/^(\/[\w:./-]*|unmatched)$/);
    for (const s of samplesOf(after, `${HTTP}_count`)) for (const id of ids) expect(s.labels.route).not.toContain(id);
  });

  test('GraphQL operations by name, anonymous and invalid ones under fixed labels', () => {
    expect(valueOf(after, `${GQL}_count`, { operation: 'OneAsset', outcome: 'ok' })).toBe(1);
    expect(valueOf(after, `${GQL}_count`, { operation: '(anonymous)', outcome: 'ok' })).toBe(1);
    expect(valueOf(after, `${GQL}_count`, { operation: '(invalid)', outcome: 'error' })).toBe(1);
  });

  test('bytes uploaded and served, nothing in flight', () => {
    const d = (name: string) => (valueOf(after, name) ?? 0) - (valueOf(before, name) ?? 0);
    expect(d('assets_uploaded_bytes_total')).toBe(sizes[0]! + sizes[1]! + sizes[2]!);
    expect(d('assets_served_bytes_total')).toBe(sizes[0]! + sizes[1]!);
    expect(d('assets_downloaded_bytes_total')).toBe(0);
    expect(valueOf(after, 'assets_uploads_in_flight')).toBe(0);
    expect(valueOf(after, 'assets_downloads_in_flight')).toBe(0);
  });

  test('tasks, queues, database pool, GC backlog, event loop and process metrics', async () => {
    expect(valueOf(after, 'assets_tasks', { task_name: 'download_file', status: 'running' })).toBe(0);
    expect(samplesOf(after, 'assets_job_queue_jobs', { queue: JOB.contentGc, state: 'ready' })).toHaveLength(1);
    expect(valueOf(after, 'assets_db_pool_max_connections')).toBe(10);
    expect(valueOf(after, 'assets_db_pool_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(0);
    expect(valueOf(after, 'assets_db_pool_waiting_requests')).toBe(0);
    expect(valueOf(after, 'assets_metrics_source_errors_total', { source: 'tasks' }) ?? 0).toBe(0);
    for (const name of [
      'nodejs_eventloop_lag_p99_seconds',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
    ]) {
      expect(samplesOf(after, name).length).toBeGreaterThan(0);
    }
    expect(after.types.get('nodejs_gc_duration_seconds')).toBe('histogram');

    // A deleted asset's content waits for collection: the backlog shows it with its bytes.
    const gcBefore = {
      n: valueOf(after, 'assets_content_gc_backlog_contents')!,
      bytes: valueOf(after, 'assets_content_gc_backlog_bytes')!,
    };
    expect((await svc.fetch(`/api/assets/${ids[2]}`, { method: 'DELETE' })).status).toBe(204);
    await waitFor(
      async () => {
        const e = await scrape();
        return valueOf(e, 'assets_content_gc_backlog_contents') === gcBefore.n + 1 ? e : undefined;
      },
      { what: 'the GC backlog to grow' },
    ).then((e) => expect(valueOf(e, 'assets_content_gc_backlog_bytes')).toBe(gcBefore.bytes + sizes[2]!));
  });

  test('one access-log line per request: route template, method, status, duration and request id', () => {
    const lines = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r.msg === 'request');
    const get = lines.find((r) => r.request_id === requestId);
    expect(get).toMatchObject({ level: 'info', method: 'GET', route: '/api/assets/:id', status: 200 });
    expect(typeof get!.duration_ms).toBe('number');
    expect(lines.filter((r) => r.route === '/api/assets' && r.method === 'POST' && r.status === 201)).toHaveLength(3);
    expect(lines.filter((r) => r.route === 'unmatched' && r.status === 404)).toHaveLength(1);
  });
});

test('a download task: bytes downloaded and tasks by status', async () => {
  const before = await scrape();
  const size = 300_000;
  const res = await startDownload(svc, { source_url: fake.hf.lfs('org/metrics/model.bin', bytes(size, 7)) });
  expect(res.status).toBe(202);
  expect((await waitTask(svc, (await json(res)).task_id)).status).toBe('completed');
  const after = await scrape();
  expect(
    (valueOf(after, 'assets_downloaded_bytes_total') ?? 0) - (valueOf(before, 'assets_downloaded_bytes_total') ?? 0),
  ).toBe(size);
  expect(valueOf(after, 'assets_tasks', { task_name: 'download_file', status: 'completed' })).toBe(1);
  expect(valueOf(after, 'assets_downloads_in_flight')).toBe(0);
  expect(valueOf(after, 'assets_uploaded_bytes_total')).toBe(valueOf(before, 'assets_uploaded_bytes_total'));
});

test('many different ids make one label set', async () => {
  const before = count(await scrape(), { method: 'GET', route: '/api/assets/:id', status: '404' });
  await Promise.all(
    Array.from({ length: 25 }, () => svc.fetch(`/api/assets/${crypto.randomUUID()}`).then((r) => r.arrayBuffer())),
  );
  await Promise.all(
    Array.from({ length: 5 }, () =>
      svc.fetch(`/api/assets/${crypto.randomUUID()}/content`).then((r) => r.arrayBuffer()),
    ),
  );
  const e = await scrape();
  expect(count(e, { method: 'GET', route: '/api/assets/:id', status: '404' }) - before).toBe(25);
  expect(count(e, { method: 'GET', route: '/api/assets/:id/content', status: '404' })).toBe(5);
  const routes = new Set(samplesOf(e, `${HTTP}_count`).map((s) => s.labels.route));
  expect(routes.size).toBeLessThan(12);
});

test('GraphQL operation names are capped', async () => {
  for (let i = 0; i < 105; i++) await gql(svc, `query Op${i} { contentExists(hash: "blake3:${'0'.repeat(64)}") }`);
  const e = await scrape();
  const names = new Set(samplesOf(e, `${GQL}_count`).map((s) => s.labels.operation));
  expect(names.size).toBeLessThanOrEqual(100 + 3);
  expect(valueOf(e, `${GQL}_count`, { operation: '(other)', outcome: 'ok' })).toBeGreaterThanOrEqual(5);
});

describe('access', () => {
  test('without METRICS_TOKEN: loopback clients only, no API key needed', async () => {
    expect((await fetch(svc.url + '/metrics')).status).toBe(200);
    // Relayed by a proxy on this host: not a local client.
    const proxied = await fetch(svc.url + '/metrics', { headers: { 'x-forwarded-for': '203.0.113.9' } });
    expect(proxied.status).toBe(403);
    expect(await proxied.json()).toMatchObject({ code: 'FORBIDDEN', message: expect.any(String) });
    if (external) {
      const remote = await fetch(svc.url.replace('127.0.0.1', external) + '/metrics', {
        headers: { 'x-api-key': KEYS.alice },
      });
      expect(remote.status).toBe(403);
      expect((await json(remote)).code).toBe('FORBIDDEN');
    } else {
      console.log(
        'metrics.test: this machine has no non-loopback IPv4 address; remote access checked through isLoopback only',
      );
    }
    expect([
      isLoopback('127.0.0.1'),
      isLoopback('::1'),
      isLoopback('::ffff:127.0.0.1'),
      isLoopback('10.0.0.1'),
      isLoopback('::ffff:10.0.0.1'),
      isLoopback(undefined),
    ]).toEqual([true, true, true, false, false, false]);
  });

  test('with METRICS_TOKEN: the bearer token, from anywhere; access log off at LOG_LEVEL=warn', async () => {
    const lines: string[] = [];
    const s = await startTestService(
      { METRICS_TOKEN: 'metrics-secret-1', LOG_LEVEL: 'warn' },
      { log: (l) => lines.push(l) },
    );
    try {
      const none = await fetch(s.url + '/metrics');
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await none.json()).toMatchObject({ code: 'UNAUTHORIZED' });
      expect((await fetch(s.url + '/metrics', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      expect(
        (
          await fetch(s.url + '/metrics', {
            headers: { 'x-api-key': KEYS.alice, authorization: `Bearer ${KEYS.alice}` },
          })
        ).status,
      ).toBe(401);
      await scrape(s, { headers: { authorization: 'Bearer metrics-secret-1', 'x-forwarded-for': '203.0.113.9' } });
      expect((await s.fetch('/api/assets')).status).toBe(200);
      expect(lines.filter((l) => l.includes('"msg":"request"'))).toEqual([]);
    } finally {
      await s.stop();
    }
  });

  test('METRICS_ENABLED=false: no /metrics', async () => {
    const s = await startTestService({ METRICS_ENABLED: 'false' });
    try {
      expect((await fetch(s.url + '/metrics')).status).toBe(404);
    } finally {
      await s.stop();
    }
  });
});
