/**
 * OpenTelemetry tracing of the built service (dist/: `npm run build` first), against an OTLP/HTTP receiver on
 * 127.0.0.1 that takes the JSON encoding (OTEL_EXPORTER_OTLP_PROTOCOL=http/json, so the spans can be read as they
 * came): an upload with an incoming `traceparent` makes ONE trace (that id) holding the upload's HTTP server span,
 * its database statements, the enqueue of its thumbnail job and the job itself, run by the worker; a GraphQL request
 * gets a span per operation. Without OTEL settings (and with OTEL_SDK_DISABLED=true) nothing is sent and no module
 * of the OpenTelemetry SDK is even loaded: a preload records every module the process resolves.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { startDownload, waitTask } from '../helpers/downloads';
import { bytes, startFakeProviders, type FakeProviders } from '../helpers/fake-providers';
import { createTestDatabase, json, KEYS, uploadForm, waitFor } from '../helpers/harness';
import { spawnService, type ServiceProcess } from '../helpers/service-process';

jest.setTimeout(120_000);

/** A span as OTLP/JSON encodes it (ids in hex), with its instrumentation scope. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
  scope: string;
  service: string;
}

const SPAN_KIND = { server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** An OTLP/HTTP trace receiver: `POST /v1/traces` with a JSON body, every span kept. */
async function startReceiver(): Promise<{
  url: string;
  spans: OtlpSpan[];
  posts: () => number;
  close(): Promise<void>;
}> {
  const spans: OtlpSpan[] = [];
  let posts = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts++;
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { scope: { name: string }; spans: Omit<OtlpSpan, 'scope' | 'service'>[] }[];
        }[];
      };
      for (const rs of body.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, scope: ss.scope.name, service });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    posts: () => posts,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A preload (`node --require`) that writes, at exit, every OpenTelemetry module the process resolved (required or
 * imported): module.registerHooks sees both.
 */
function modulesProbe(dir: string): { env: Record<string, string>; loaded(): string[] } {
  const script = path.join(dir, 'otel-modules-probe.cjs');
  const out = path.join(dir, 'otel-modules.json');
  fs.writeFileSync(
    script,
    `const { registerHooks } = require('node:module');
const fs = require('node:fs');
const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const r = next(specifier, context);
    if (r.url.includes('/@opentelemetry/')) seen.add(r.url.replace(/^.*\\/node_modules\\//, ''));
    return r;
  },
});
process.on('exit', () => fs.writeFileSync(${JSON.stringify(out)}, JSON.stringify([...seen])));
`,
  );
  return {
    env: { NODE_OPTIONS: `--require ${script}` },
    loaded: () => JSON.parse(fs.readFileSync(out, 'utf8')) as string[],
  };
}

/** Packages of OpenTelemetry other than its API (which prom-client loads for exemplars, tracing or not). */
const sdkModules = (loaded: string[]) =>
  [...new Set(loaded.map((m) => /^@opentelemetry\/[^/]+/.exec(m)?.[0] ?? m))].filter((p) => p !== '@opentelemetry/api');

const hex = (bytes: number) => crypto.randomBytes(bytes).toString('hex');
const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v && (v.stringValue ?? v.intValue ?? v.boolValue ?? v.arrayValue);
};

async function png(): Promise<Buffer> {
  return sharp({ create: { width: 48, height: 32, channels: 3, background: '#a63' } })
    .png()
    .toBuffer();
}

/** Uploads a PNG (with `headers`) and waits until its thumbnail is made; returns the asset's id. */
async function uploadWithThumbnail(svc: ServiceProcess, headers: Record<string, string> = {}): Promise<string> {
  const res = await svc.fetch('/api/assets', {
    method: 'POST',
    headers,
    body: uploadForm(await png(), { tags: 'output' }, 'traced.png'),
  });
  expect(res.status).toBe(201);
  const { id } = (await json(res)) as { id: string };
  await waitFor(
    async () => {
      const a = (await json(await svc.fetch(`/api/assets/${id}`))) as { thumbnail_url?: string | null };
      return a.thumbnail_url ? true : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, what: 'the thumbnail of the upload' },
  );
  return id;
}

describe('tracing on (OTLP/HTTP JSON to a local receiver)', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let svc: ServiceProcess | undefined;
  let dir: string;
  let probe: ReturnType<typeof modulesProbe>;
  let fake: FakeProviders;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-tracing-'));
    receiver = await startReceiver();
    fake = await startFakeProviders();
    probe = modulesProbe(dir);
    svc = await spawnService({
      ...fake.env,
      DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'false',
      DATABASE_URL: await createTestDatabase(),
      DATA_DIR: dir,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      ...probe.env,
    });
  });
  afterAll(async () => {
    await svc?.kill('SIGTERM');
    await receiver?.close();
    await fake?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('an upload with a traceparent: one trace holds its HTTP span, its statements and its thumbnail job', async () => {
    const traceId = hex(16);
    const callerSpan = hex(8);
    await uploadWithThumbnail(svc!, { traceparent: `00-${traceId}-${callerSpan}-01` });
    const inTrace = () => receiver.spans.filter((s) => s.traceId === traceId);
    const job = await waitFor(async () => inTrace().find((s) => s.name === 'process thumbnail.make'), {
      timeoutMs: 15_000,
      intervalMs: 100,
      what: 'the thumbnail job span in the trace',
    });
    const spans = inTrace();
    const byId = new Map(spans.map((s) => [s.spanId, s]));

    // The upload's server span continues the caller's span, and names the route.
    const server = spans.find((s) => s.kind === SPAN_KIND.server && s.parentSpanId === callerSpan);
    expect(server).toMatchObject({ name: 'POST /api/assets', service: 'asset-service' });
    expect(attr(server!, 'http.route')).toBe('/api/assets');
    // Statements of the upload (its transaction) are in the trace, below the server span.
    const ancestors = (s: OtlpSpan): OtlpSpan[] => {
      const up: OtlpSpan[] = [];
      for (let p = s.parentSpanId && byId.get(s.parentSpanId); p; p = p.parentSpanId && byId.get(p.parentSpanId))
        up.push(p);
      return up;
    };
    const statements = spans.filter(
      (s) => s.scope === '@opentelemetry/instrumentation-pg' && s.name.startsWith('pg.query'),
    );
    expect(statements.length).toBeGreaterThan(0);
    expect(statements.some((s) => ancestors(s).includes(server!))).toBe(true);
    expect(statements.some((s) => /^INSERT/i.test(String(attr(s, 'db.query.text') ?? attr(s, 'db.statement'))))).toBe(
      true,
    );
    // The job: a consumer span whose parent is the producer span of its enqueue, inside the upload's request.
    const send = byId.get(job.parentSpanId ?? '');
    expect(send).toMatchObject({ name: 'send thumbnail.make', kind: SPAN_KIND.producer });
    expect(job.kind).toBe(SPAN_KIND.consumer);
    expect(ancestors(job)).toContain(server);
    expect(attr(job, 'messaging.destination.name')).toBe('thumbnail.make');
    // The job's own statements (it records the thumbnail) are its children: the worker ran in the job's context.
    expect(spans.some((s) => s.scope === '@opentelemetry/instrumentation-pg' && ancestors(s).includes(job))).toBe(true);
  });

  test('a GraphQL request: a span per operation, named by it, in the request trace', async () => {
    const traceId = hex(16);
    const res = await svc!.fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${hex(8)}-01` },
      body: JSON.stringify({ query: 'query TracedAssets { assets(limit: 1) { total } }' }),
    });
    expect(res.status).toBe(200);
    expect((await json(res)).errors).toBeUndefined();
    const badTrace = hex(16);
    const bad = await svc!.fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${badTrace}-${hex(8)}-01` },
      body: JSON.stringify({ query: '{ noSuchField }' }),
    });
    expect(bad.status).toBe(400);

    const op = await waitFor(
      async () => receiver.spans.find((s) => s.traceId === traceId && s.name === 'query TracedAssets'),
      { timeoutMs: 15_000, intervalMs: 100, what: 'the GraphQL operation span' },
    );
    expect([attr(op, 'graphql.operation.type'), attr(op, 'graphql.operation.name')]).toEqual(['query', 'TracedAssets']);
    const server = receiver.spans.find((s) => s.traceId === traceId && s.kind === SPAN_KIND.server);
    expect(server?.name).toBe('POST /graphql');
    expect(op.status?.code ?? 0).not.toBe(2);
    // A request that fails validation still has its span, marked as an error.
    const failed = await waitFor(
      async () => receiver.spans.find((s) => s.traceId === badTrace && s.scope === 'asset-service'),
      { timeoutMs: 15_000, intervalMs: 100, what: 'the failed GraphQL operation span' },
    );
    expect(failed).toMatchObject({ name: 'GraphQL Operation', status: { code: 2 } });
    expect(attr(failed, 'graphql.error.codes')).toBeDefined();
  });

  test("a download's outgoing requests (undici, from its job) carry the request's trace in traceparent", async () => {
    const traceId = hex(16);
    const data = bytes(64 * 1024, 7);
    const url = fake.hf.lfs('org/traced/model.safetensors', data);
    const res = await startDownload(svc!, { source_url: url }, KEYS.alice, {
      traceparent: `00-${traceId}-${hex(8)}-01`,
    });
    expect(res.status).toBe(202);
    const task = await waitTask(svc!, (await json(res)).task_id);
    expect(task.status).toBe('completed');
    const gets = fake.cdn
      .requestsFor(fake.hf.cdnKeyOf('org/traced/model.safetensors'))
      .filter((r) => r.method === 'GET');
    expect(gets.length).toBeGreaterThan(0);
    // W3C traceparent: version-traceid-spanid-flags; the span is the undici client span, in the request's trace.
    for (const g of gets) expect(g.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    // The GETs come from the download job's span (the HEAD probe, from the request's): a span ends, and is
    // exported, after the task is seen done, so both are waited for.
    const job = await waitFor(
      async () => receiver.spans.find((s) => s.traceId === traceId && s.name === 'process download.transfer'),
      { timeoutMs: 15_000, intervalMs: 100, what: 'the download job span' },
    );
    const clientGets = await waitFor(
      async () => {
        const found = receiver.spans.filter(
          (s) => s.traceId === traceId && s.kind === SPAN_KIND.client && s.scope.includes('undici') && s.name === 'GET',
        );
        return found.length >= gets.length ? found : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 100, what: 'the undici client spans' },
    );
    expect(clientGets.every((s) => s.parentSpanId === job.spanId)).toBe(true);
    // Each request the store's CDN saw names, as its parent, the client span that sent it.
    for (const g of gets)
      expect(clientGets.map((s) => s.spanId)).toContain(String(g.headers.traceparent).split('-')[2]);
  });

  test('probes are not traced, and the SDK is loaded (the probe of the tests without tracing sees it)', async () => {
    expect((await fetch(`${svc!.url}/healthz`)).status).toBe(200);
    expect(receiver.spans.some((s) => s.name.includes('/healthz') || s.name.includes('/readyz'))).toBe(false);
    await svc!.kill('SIGTERM');
    expect(sdkModules(probe.loaded())).toEqual(
      expect.arrayContaining(['@opentelemetry/sdk-trace-node', '@opentelemetry/instrumentation-pg']),
    );
  });
});

test('shutdown exports the spans still buffered', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-tracing-exit-'));
  const receiver = await startReceiver();
  // A batch delay longer than the test: the spans can only come from the flush at shutdown.
  const svc = await spawnService({
    DATABASE_URL: await createTestDatabase(),
    DATA_DIR: dir,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '600000',
  });
  const traceId = hex(16);
  try {
    expect((await svc.fetch('/api/assets', { headers: { traceparent: `00-${traceId}-${hex(8)}-01` } })).status).toBe(
      200,
    );
    expect(receiver.spans.some((s) => s.traceId === traceId)).toBe(false);
  } finally {
    await svc.kill('SIGTERM');
  }
  expect(svc.proc.exitCode).toBe(0);
  expect(receiver.spans.find((s) => s.traceId === traceId && s.kind === SPAN_KIND.server)?.name).toBe(
    'GET /api/assets',
  );
  await receiver.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe.each([
  ['no OTEL settings', {}],
  ['OTEL_SDK_DISABLED=true beside an endpoint', { OTEL_SDK_DISABLED: 'true' }],
])('tracing off: %s', (_what, settings: Record<string, string>) => {
  test('the service works, sends no span, and loads nothing of the OpenTelemetry SDK', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-untraced-'));
    const receiver = await startReceiver();
    const probe = modulesProbe(dir);
    // With OTEL_SDK_DISABLED the endpoint names the receiver: were anything exported, it would arrive there.
    const endpoint: Record<string, string> = settings.OTEL_SDK_DISABLED
      ? { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }
      : {};
    const svc = await spawnService({
      DATABASE_URL: await createTestDatabase(),
      DATA_DIR: dir,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      ...settings,
      ...endpoint,
      ...probe.env,
    });
    try {
      await uploadWithThumbnail(svc, { traceparent: `00-${hex(16)}-${hex(8)}-01` });
      const gql = await svc.fetch('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ assets(limit: 1) { total } }' }),
      });
      expect(gql.status).toBe(200);
      expect(svc.logs().some((l) => l.msg === 'tracing on')).toBe(false);
    } finally {
      await svc.kill('SIGTERM');
      await receiver.close();
    }
    // The exit flushed whatever a batch processor would hold: nothing came.
    expect(receiver.posts()).toBe(0);
    expect(sdkModules(probe.loaded())).toEqual([]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
