/**
 * openapi.yaml is the published REST contract: it must be a structurally valid OpenAPI 3.1 document, list exactly
 * the routes the app serves (read from the real express app, extensions included), and agree with the code's
 * error-code table and JSON presenters.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Express } from 'express';
import { parse } from 'yaml';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { buildContainer, type Container } from '../../src/container';
import { assetJson } from '../../src/http/rest/asset.presenter';
import { STATUS_OF } from '../../src/http/shared/errors';
import { ERROR_CODES } from '../../src/domain/errors';
import { TASK_STATUSES } from '../../src/domain/tasks/task.types';
import { taskJson } from '../../src/http/rest/task.presenter';
import { createLogger } from '../../src/infra/logger';
import { createTestDatabase, KEYS } from '../helpers/harness';
import { servedRoutes, stepCodesOfRoutes, type Served } from '../helpers/route-table';
import { PARSER_CODES } from '../../src/http/client-error';

const SPEC_PATH = path.join(__dirname, '..', '..', 'openapi.yaml');
const SPEC_TEXT = fs.readFileSync(SPEC_PATH, 'utf8');
type Doc = any;
const doc: Doc = parse(SPEC_TEXT);

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
/** GraphQL (and its IDE's assets) is documented in schema.graphql, not here. */
const isGraphqlPath = (p: string) => p === '/graphql' || p.startsWith('/graphql/');

function operations(): { path: string; method: string; op: Doc; pathItem: Doc }[] {
  const out: { path: string; method: string; op: Doc; pathItem: Doc }[] = [];
  for (const [p, item] of Object.entries<Doc>(doc.paths ?? {})) {
    for (const m of HTTP_METHODS)
      if (item[m]) out.push({ path: p, method: m.toUpperCase(), op: item[m], pathItem: item });
  }
  return out;
}

/**
 * Why `op` does not declare `code` (its status, and the code in that status's code list when it has one), or
 * undefined. A HEAD answer has no body: its status is enough.
 */
function undeclared(op: Doc, method: string, code: string): string | undefined {
  const status = String(STATUS_OF[code as keyof typeof STATUS_OF]);
  const response = op.responses?.[status];
  if (!response) return `${status} (${code}) is not declared`;
  if (method === 'HEAD') return undefined;
  const schema = resolve(response).content?.['application/json']?.schema;
  if (!schema) return `${status} declares no JSON error body for ${code}`;
  const codes: string[] | undefined = schema.allOf?.map(resolve).find((s: Doc) => s.properties?.code?.enum)?.properties
    .code.enum;
  return codes && !codes.includes(code) ? `${status} does not list ${code}` : undefined;
}

/** Resolves a local `#/a/b` reference; throws with the reference when it does not. */
function deref(ref: string): Doc {
  if (!ref.startsWith('#/')) throw new Error(`only local references are used here: ${ref}`);
  let node: Doc = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(key in node)) throw new Error(`unresolved $ref ${ref}`);
    node = node[key];
  }
  return node;
}
const resolve = (node: Doc): Doc =>
  node && typeof node === 'object' && typeof node.$ref === 'string' ? resolve(deref(node.$ref)) : node;

describe('openapi.yaml is valid OpenAPI 3.1', () => {
  test('top level', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(typeof doc.info?.title).toBe('string');
    expect(typeof doc.info?.version).toBe('string');
    expect(Object.keys(doc.paths ?? {}).length).toBeGreaterThan(0);
    for (const p of Object.keys(doc.paths)) expect(p).toMatch(/^\/[\w\-./{}]*$/);
  });

  test('every $ref resolves', () => {
    const refs: string[] = [];
    (function walk(n: Doc) {
      if (Array.isArray(n)) n.forEach(walk);
      else if (n && typeof n === 'object') {
        if (typeof n.$ref === 'string') refs.push(n.$ref);
        Object.values(n).forEach(walk);
      }
    })(doc);
    expect(refs.length).toBeGreaterThan(20);
    const broken = refs.filter((r) => {
      try {
        deref(r);
        return false;
      } catch {
        return true;
      }
    });
    expect(broken).toEqual([]);
  });

  test('every operation has an id, responses with descriptions, and declares its path parameters', () => {
    const problems: string[] = [];
    const ids = new Set<string>();
    for (const { path: p, method, op, pathItem } of operations()) {
      const where = `${method} ${p}`;
      if (typeof op.operationId !== 'string') problems.push(`${where}: no operationId`);
      else if (ids.has(op.operationId)) problems.push(`${where}: duplicate operationId ${op.operationId}`);
      else ids.add(op.operationId);
      const responses = Object.entries<Doc>(op.responses ?? {});
      if (responses.length === 0) problems.push(`${where}: no responses`);
      // A success, or for a link that only redirects (GET /api/s/{id}) a 3xx.
      if (!responses.some(([s]) => /^[23]\d\d$/.test(s))) problems.push(`${where}: no 2xx response`);
      for (const [status, r] of responses) {
        if (!/^[1-5]\d\d$/.test(status) && status !== 'default') problems.push(`${where}: bad status ${status}`);
        if (typeof resolve(r).description !== 'string') problems.push(`${where} ${status}: no description`);
      }
      const params = [...(pathItem.parameters ?? []), ...(op.parameters ?? [])].map(resolve);
      for (const [, name] of p.matchAll(/\{(\w+)\}/g)) {
        const decl = params.find((x: Doc) => x.in === 'path' && x.name === name);
        if (!decl || decl.required !== true) problems.push(`${where}: path parameter ${name} not declared as required`);
      }
      for (const x of params) {
        if (x.in === 'path' && !p.includes(`{${x.name}}`))
          problems.push(`${where}: declares path parameter ${x.name} not in the path`);
        if (!['path', 'query', 'header', 'cookie'].includes(x.in))
          problems.push(`${where}: parameter ${x.name} in ${x.in}`);
        if (!x.schema && !x.content) problems.push(`${where}: parameter ${x.name} has no schema`);
      }
      if (op.requestBody && !resolve(op.requestBody).content) problems.push(`${where}: requestBody without content`);
    }
    expect(problems).toEqual([]);
  });

  test('security: X-API-Key (or bearer) on every /api operation, none on the open routes', () => {
    const schemes = doc.components?.securitySchemes ?? {};
    expect(schemes.ApiKeyAuth).toEqual({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
    expect(schemes.BearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ ApiKeyAuth: [] }, { BearerAuth: [] }]);
    const problems: string[] = [];
    for (const { path: p, method, op } of operations()) {
      const effective: Doc[] = op.security ?? doc.security;
      for (const req of effective)
        for (const name of Object.keys(req))
          if (!schemes[name]) problems.push(`${method} ${p}: unknown scheme ${name}`);
      const open = effective.length === 0;
      // The disk store's signed export URLs: the signature is the credential.
      if (op['x-signed-url'] === true && open) continue;
      // tus discovery (OPTIONS /api/uploads): capabilities only, answered without a key as tus servers do.
      if (op['x-open-discovery'] === true && open && method === 'OPTIONS') continue;
      // ComfyUI's feature flags (GET /api/features), which its frontend reads before it has a key.
      if (op['x-open-discovery'] === true && open && p === '/api/features') continue;
      if (p.startsWith('/api/') && open) problems.push(`${method} ${p}: /api routes need a key`);
      if (!p.startsWith('/api/') && !open) problems.push(`${method} ${p}: open route should have security: []`);
      if (p.startsWith('/api/') && !op.responses?.['401']) problems.push(`${method} ${p}: no 401 response`);
    }
    expect(problems).toEqual([]);
  });

  test('the error codes and their statuses agree with the code (ERROR_CODES, STATUS_OF)', () => {
    expect(resolve(doc.components.schemas.Error).required).toEqual(['code', 'message']);
    expect([...deref('#/components/schemas/ErrorCode').enum].sort()).toEqual([...ERROR_CODES].sort());
    const problems: string[] = [];
    let checked = 0;
    for (const { path: p, method, op } of operations()) {
      for (const [status, r] of Object.entries<Doc>(op.responses ?? {})) {
        const schema = resolve(r)?.content?.['application/json']?.schema;
        if (!schema || !/^[45]/.test(status) || !p.startsWith('/api/')) continue;
        // ComfyUI's seed answers 409 {"status": "already_running"}, which its frontend reads.
        if (resolve(r)['x-comfyui-answer'] === true) continue;
        const codes: string[] | undefined = schema.allOf?.find((s: Doc) => s.properties?.code?.enum)?.properties.code
          .enum;
        if (!codes) {
          problems.push(`${method} ${p} ${status}: error response without a code enum`);
          continue;
        }
        if (resolve(schema.allOf[0]) !== resolve(doc.components.schemas.Error))
          problems.push(`${method} ${p} ${status}: not the Error schema`);
        for (const code of codes) {
          checked++;
          const expected = STATUS_OF[code as keyof typeof STATUS_OF];
          if (expected === undefined) problems.push(`${method} ${p} ${status}: unknown code ${code}`);
          else if (String(expected) !== status)
            problems.push(`${method} ${p}: ${code} is ${expected} in STATUS_OF, documented under ${status}`);
        }
      }
    }
    expect(checked).toBeGreaterThan(40);
    expect(problems).toEqual([]);
  });

  test('Asset lists exactly the fields the presenter can send; only preview_id/prompt_id/job_id are nullable', () => {
    const asset = {
      id: '00000000-0000-4000-8000-000000000000',
      ownerId: 'o',
      name: 'SDXL/base.safetensors',
      size: 1,
      blake3: 'a'.repeat(64),
      mimeType: 'image/png',
      tags: ['models', 'checkpoints'],
      userMetadata: {},
      previewId: '00000000-0000-4000-8000-000000000001',
      previewRemoved: false,
      promptId: null,
      isImmutable: false,
      createdAt: new Date(),
      updatedAt: new Date(),
      lastAccessTime: new Date(),
      hasThumbnail: true,
      metadata: { filename: 'base.safetensors', content_length: 1 },
    };
    const schemas = doc.components.schemas;
    const props = (s: Doc) => Object.keys(resolve(s).properties).sort();
    // Every optional field present: the schema lists exactly these.
    expect(props(schemas.Asset)).toEqual(Object.keys(assetJson(asset, { base: 'http://h', access: 'grant' })).sort());
    expect(resolve(schemas.Asset).required).toEqual(['id', 'name', 'size', 'created_at', 'updated_at']);
    const created = schemas.AssetCreated.allOf;
    expect(resolve(created[0])).toBe(resolve(schemas.Asset));
    expect(created[1].required).toEqual(['created_new']);
    expect([...props(schemas.Asset), ...Object.keys(created[1].properties)].sort()).toEqual(
      Object.keys(assetJson(asset, { base: 'http://h', access: 'grant' }, true)).sort(),
    );
    // The null rule: no optional field is nullable except these.
    const nullable = Object.entries<Doc>(resolve(schemas.Asset).properties)
      .filter(([, p]) => Array.isArray(p.type) && p.type.includes('null'))
      .map(([k]) => k)
      .sort();
    expect(nullable).toEqual(['job_id', 'preview_id', 'prompt_id']);
  });

  test("no schema of openapi.yaml allows null except preview_id, prompt_id, job_id, JobOutputAsset's output fields and a quota's cleared limit", () => {
    const found: string[] = [];
    (function walk(n: Doc, where: string) {
      if (Array.isArray(n)) n.forEach((x, i) => walk(x, `${where}/${i}`));
      else if (n && typeof n === 'object') {
        if ((Array.isArray(n.type) && n.type.includes('null')) || n.type === 'null') found.push(where);
        for (const [k, v] of Object.entries(n)) walk(v, `${where}/${k}`);
      }
    })(doc, '');
    // Comfy Cloud's JobOutputAsset makes node_id, output_key and output_index nullable (contract 3.7); a quota
    // request's `null` clears a limit (contract 8: a request body, never an answer).
    const allowed =
      /\/(preview_id|prompt_id|job_id)$|^\/components\/schemas\/JobOutputAsset\/properties\/(node_id|output_key|output_index)$|^\/components\/schemas\/QuotaRequest\/properties\/(max_bytes|max_assets)$/;
    expect(found.filter((w) => !allowed.test(w))).toEqual([]);
  });

  test('Task lists exactly the fields the task presenter sends', () => {
    const task = taskJson({
      id: '00000000-0000-4000-8000-000000000000',
      ownerId: 'o',
      idempotencyKey: 'k',
      taskName: 'download_file',
      payload: { sourceUrl: 'https://huggingface.co/x', tags: [], userMetadata: {}, previewId: null },
      status: 'completed',
      createTime: new Date(),
      updateTime: new Date(),
      startedAt: new Date(),
      completedAt: new Date(),
      progress: { bytesDownloaded: 1, bytesTotal: 1, progress: 1 },
      result: {
        success: true,
        assetId: '00000000-0000-4000-8000-000000000002',
        assetHash: 'blake3:' + 'a'.repeat(64),
        filename: 'f',
        bytesDownloaded: 1,
      },
      errorMessage: 'e',
    }) as Record<string, Record<string, unknown>>;
    const schema = resolve(doc.components.schemas.Task);
    const keys = (o: object) => Object.keys(o).sort();
    // Every optional field present: the schema lists exactly these; only the always-present ones are required.
    expect(keys(schema.properties)).toEqual(keys(task));
    expect([...schema.required].sort()).toEqual([
      'create_time',
      'id',
      'idempotency_key',
      'payload',
      'progress',
      'status',
      'task_name',
      'update_time',
    ]);
    expect(keys(schema.properties.payload.anyOf[0].properties)).toEqual(keys(task.payload!));
    expect(keys(schema.properties.progress.properties)).toEqual(keys(task.progress!));
    expect(keys(schema.properties.result.oneOf[0].properties)).toEqual(keys(task.result!));
    expect(deref('#/components/schemas/TaskStatus').enum).toEqual([...TASK_STATUSES]);
  });
});

test('the route walker sees nested routers, mount paths and mounted middleware', () => {
  const express = require('express') as typeof import('express');
  const a = express();
  a.get('/up', (_q, r) => void r.end());
  const inner = express.Router();
  inner
    .route('/tasks/:task_id')
    .get((_q, r) => void r.end())
    .delete((_q, r) => void r.end());
  const api = express.Router();
  api.use((_q, _r, n) => n());
  api.use(inner);
  api.use(
    '/nested',
    express.Router().post('/:id/x', (_q, r) => void r.end()),
  );
  a.use('/api', api);
  a.use('/graphql', (_q, r) => void r.end());
  a.get('/graphql/{*rest}', (_q, r) => void r.end());
  expect(servedRoutes(a, isGraphqlPath)).toEqual([
    { method: 'GET', path: '/up' },
    { method: 'GET', path: '/api/tasks/{task_id}' },
    { method: 'DELETE', path: '/api/tasks/{task_id}' },
    { method: 'POST', path: '/api/nested/{id}/x' },
  ]);
  a.get('/files/{*rest}', (_q, r) => void r.end());
  expect(() => servedRoutes(a, isGraphqlPath)).toThrow(/cannot express/);
  a.router.stack.pop();
  a.router.stack.pop();
  expect(servedRoutes(a)).toEqual([
    { method: 'GET', path: '/up' },
    { method: 'GET', path: '/api/tasks/{task_id}' },
    { method: 'DELETE', path: '/api/tasks/{task_id}' },
    { method: 'POST', path: '/api/nested/{id}/x' },
    { method: 'USE', path: '/graphql' },
  ]);
});

describe('openapi.yaml lists exactly the routes the app serves', () => {
  let container: Container;
  let app: Express;
  let server: http.Server;
  let base: string;

  beforeAll(async () => {
    const config = loadConfig({
      PORT: '0',
      DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-test-')),
      DATABASE_URL: await createTestDatabase(),
      API_KEYS: `alice:${KEYS.alice}`,
      LOG_LEVEL: 'silent',
    });
    container = await buildContainer(config, createLogger('silent'), config.databaseUrl!);
    app = await createApp(container);
    server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await container?.close();
    fs.rmSync(container.config.dataDir, { recursive: true, force: true });
  });

  test('served and documented routes are the same set (except /graphql)', () => {
    const key = (r: Served) => `${r.method} ${r.path}`;
    const served = servedRoutes(app, isGraphqlPath);
    // Sanity check of the walker itself: routes of the app root, of /api and of the routers mounted under it.
    expect(served.map(key)).toEqual(
      expect.arrayContaining(['GET /healthz', 'GET /api/assets/{id}', 'HEAD /api/assets/{id}/content']),
    );
    const servedSet = new Set(served.map(key));
    const documented = new Set(operations().map((o) => `${o.method} ${o.path}`));
    const undocumented = [...servedSet].filter((r) => !documented.has(r)).sort();
    const notServed = [...documented].filter((r) => !servedSet.has(r)).sort();
    expect({ undocumented, notServed }).toEqual({ undocumented: [], notServed: [] });
  });

  test('every operation declares the status and code of each step its route passes (route table x error table)', () => {
    const problems: string[] = [];
    const routes = stepCodesOfRoutes(app, isGraphqlPath);
    expect(routes.get('POST /api/assets/download')).toEqual(expect.objectContaining({ size: expect.any(Number) }));
    for (const [key, codes] of routes) {
      const [method, p] = key.split(' ') as [string, string];
      const op = doc.paths[p]?.[method.toLowerCase()];
      // An undocumented route is the route-set test's to report.
      if (!op) continue;
      for (const code of new Set([...PARSER_CODES, ...codes])) {
        const problem = undeclared(op, method, code);
        if (problem) problems.push(`${key}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });

  test('GET /openapi.yaml serves this file without a key', async () => {
    const res = await fetch(`${base}/openapi.yaml`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/yaml/);
    expect(await res.text()).toBe(SPEC_TEXT);
  });

  test('an /api route without a key answers 401 UNAUTHORIZED, as documented', async () => {
    const res = await fetch(`${base}/api/assets`);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: 'UNAUTHORIZED' });
  });
});
