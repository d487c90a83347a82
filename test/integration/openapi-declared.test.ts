/**
 * What a route answers is what openapi.yaml says it answers (issue 31, items 3 and 4): every status, code and limit
 * of a refusal is declared, and a request the service refuses is one the document's schemas refuse too, so a client
 * generated from the document does not send it. Answers are checked against the document as they arrive.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { encodeCursor, MAX_CURSOR_LENGTH } from '../../src/domain/assets/cursor';
import { json, KEYS, startTestService, uploadForm, type TestService } from '../helpers/harness';
import { operationOf, requestBodyErrors, validateResponse } from '../helpers/openapi-validator';
import { rawRequest } from '../helpers/raw-http';

let svc: TestService;
let mine: { id: string; asset_hash: string };
beforeAll(async () => {
  svc = await startTestService({}, { validateResponses: true });
  mine = await json(
    await svc.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(`declared ${Date.now()}`, { tags: 'declared' }),
    }),
  );
});
afterAll(async () => {
  await svc?.stop();
});

const spec = parse(fs.readFileSync(path.join(__dirname, '..', '..', 'openapi.yaml'), 'utf8'));

describe('every query parameter of every operation: a refused value is answered as declared', () => {
  test('NUL, and one character over the limit, in each query parameter of each GET', async () => {
    const concrete = (template: string) =>
      template
        .replace('{id}', mine.id)
        .replace('{hash}', mine.asset_hash)
        .replace('{task_id}', mine.id)
        .replace('{job_id}', mine.id)
        .replace('{export_name}', 'x.zip')
        .replace('{file}', 'app.js');
    const resolve = (p: any): any =>
      p.$ref
        ? p.$ref
            .slice(2)
            .split('/')
            .reduce((n: any, k: string) => n[k], spec)
        : p;
    const sent: string[] = [];
    for (const [template, item] of Object.entries<any>(spec.paths)) {
      if (!item.get || !template.startsWith('/api/')) continue;
      const params = [...(item.parameters ?? []), ...(item.get.parameters ?? [])]
        .map(resolve)
        .filter((p) => p.in === 'query');
      for (const p of params) {
        const max = p.schema?.maxLength ?? p.schema?.items?.maxLength ?? 1024;
        for (const value of ['%00', 'a'.repeat(max + 1)]) {
          const url = `${concrete(template)}?${p.name}=${value}`;
          // svc.fetch validates the answer: an undeclared status or code fails here.
          const res = await svc.fetch(url);
          await res.arrayBuffer();
          sent.push(`${url.slice(0, 60)} ${res.status}`);
        }
      }
    }
    expect(sent.length).toBeGreaterThan(30);
  });

  test('disposition=%00 is INVALID_QUERY, declared on the content route', async () => {
    const res = await svc.fetch(`/api/assets/${mine.id}/content?disposition=%00`);
    expect([res.status, (await json(res)).code]).toEqual([400, 'INVALID_QUERY']);
  });
});

describe('after: the document and the code have one limit, and it holds every cursor the service mints', () => {
  test('openapi.yaml states the limit the code applies', () => {
    const after = operationOf('GET', '/api/assets').parameters.find((p: { name?: string }) => p.name === 'after');
    expect(after.schema.maxLength).toBe(MAX_CURSOR_LENGTH);
  });

  test('the longest cursor a name can make is within the limit, and accepted back', async () => {
    // Each UTF-16 unit of a name costs at most 6 bytes of JSON (a control character, escaped) before base64url.
    for (const unit of ['\u0001', '漢', 'a']) {
      const cursor = encodeCursor('name', 'desc', { value: unit.repeat(512), id: mine.id });
      expect(cursor.length).toBeLessThanOrEqual(MAX_CURSOR_LENGTH);
    }
    // A real one, over the former limits (1,024 of every query parameter, 2,048 of the schema).
    const name = '漢'.repeat(512);
    await json(
      await svc.fetch('/api/assets', {
        method: 'POST',
        body: uploadForm(`cursor ${Date.now()}`, { tags: 'cursor', name }),
      }),
    );
    await json(
      await svc.fetch('/api/assets', {
        method: 'POST',
        body: uploadForm(`cursor2 ${Date.now()}`, { tags: 'cursor', name }),
      }),
    );
    const first = await json(await svc.fetch('/api/assets?include_tags=cursor&sort=name&limit=1'));
    expect(first.next_cursor.length).toBeGreaterThan(2048);
    const next = await svc.fetch(`/api/assets?include_tags=cursor&sort=name&limit=1&after=${first.next_cursor}`);
    expect(next.status).toBe(200);
    expect((await json(next)).assets).toHaveLength(1);
  });

  test('over the limit is INVALID_QUERY; within it, a text that is no cursor is INVALID_CURSOR', async () => {
    const over = await svc.fetch(`/api/assets?after=${'a'.repeat(MAX_CURSOR_LENGTH + 1)}`);
    expect([over.status, (await json(over)).code]).toEqual([400, 'INVALID_QUERY']);
    const junk = await svc.fetch(`/api/assets?after=${'a'.repeat(1025)}`);
    expect([junk.status, (await json(junk)).code]).toEqual([400, 'INVALID_CURSOR']);
  });
});

describe('tus: a POST standing for another method declares what that method answers', () => {
  test('every status and code of PATCH, DELETE and HEAD, and the headers PATCH takes', () => {
    const post = operationOf('POST', '/api/uploads/{id}');
    const problems: string[] = [];
    for (const m of ['PATCH', 'DELETE', 'HEAD']) {
      const op = operationOf(m, '/api/uploads/{id}');
      for (const [status, r] of Object.entries<any>(op.responses)) {
        if (!post.responses[status]) problems.push(`${m} ${status}`);
        const codes = (x: any): string[] =>
          x?.content?.['application/json']?.schema?.allOf?.[1]?.properties?.code?.enum ?? [];
        const missing = codes(r).filter(
          (c) => !codes(post.responses[status]).includes(c) && !post.responses[status]?.$ref,
        );
        if (missing.length) problems.push(`${m} ${status} ${missing.join()}`);
      }
      for (const p of op.parameters ?? []) {
        if (p.name && !post.parameters.some((q: { name?: string }) => q.name === p.name))
          problems.push(`${m} parameter ${p.name}`);
      }
    }
    expect(problems).toEqual([]);
  });

  test('X-HTTP-Method-Override: PATCH without Content-Type is 415, as declared', async () => {
    const created = await rawRequest(svc.url, 'POST', '/api/uploads', [
      ['X-API-Key', KEYS.alice],
      ['Tus-Resumable', '1.0.0'],
      ['Upload-Length', '3'],
    ]);
    const id = new URL(created.headers.location![0]!).pathname.split('/').pop()!;
    const res = await rawRequest(
      svc.url,
      'POST',
      `/api/uploads/${id}`,
      [
        ['X-API-Key', KEYS.alice],
        ['Tus-Resumable', '1.0.0'],
        ['X-HTTP-Method-Override', 'PATCH'],
        ['Upload-Offset', '0'],
      ],
      Buffer.from('abc'),
    );
    expect(res.status).toBe(415);
    validateResponse('POST', `/api/uploads/${id}`, res.status, JSON.parse(res.body.toString()));
  });
});

describe('rules in code are rules of the schemas: what the service refuses, the document refuses', () => {
  const cases: [string, string, Record<string, unknown>][] = [
    ['POST', '/api/assets/{id}/tags', { tags: ['', ''] }],
    ['POST', '/api/assets/{id}/tags', { tags: ['  '] }],
    ['DELETE', '/api/assets/{id}/tags', { tags: [''] }],
    ['POST', '/api/assets/export', {}],
    ['POST', '/api/assets/export', { asset_ids: [], job_ids: [] }],
    ['PUT', '/api/assets/{id}', { preview_id: '' }],
    ['PUT', '/api/assets/{id}', { name: '   ' }],
    ['POST', '/api/assets/download', { source_url: 'ftp://huggingface.co/x' }],
  ];
  test.each(cases)('%s %s %j: 400, and invalid by the document', async (method, template, body) => {
    const res = await svc.fetch(template.replace('{id}', mine.id), {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(400);
    await res.arrayBuffer();
    expect(requestBodyErrors(method, template, body)).toBeDefined();
  });

  test('the same bodies with a valid value are valid by the document (the rules are not too wide)', () => {
    expect(requestBodyErrors('POST', '/api/assets/{id}/tags', { tags: ['', 'a'] })).toBeUndefined();
    expect(requestBodyErrors('POST', '/api/assets/export', { job_ids: [mine.id] })).toBeUndefined();
    expect(requestBodyErrors('PUT', '/api/assets/{id}', { preview_id: null, name: ' a ' })).toBeUndefined();
    expect(
      requestBodyErrors('POST', '/api/assets/download', { source_url: 'HTTPS://huggingface.co/x' }),
    ).toBeUndefined();
  });

  test('an origin that is not an allowed provider: declared as 400 SOURCE_NOT_ALLOWED, its rule in the description', async () => {
    const res = await svc.fetch('/api/assets/download', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source_url: 'https://com' }),
    });
    expect([res.status, (await json(res)).code]).toEqual([400, 'SOURCE_NOT_ALLOWED']);
    const schema = spec.components.schemas.DownloadRequest;
    expect(schema.properties.source_url.description).toMatch(/SOURCE_NOT_ALLOWED/);
  });

  test('Idempotency-Key: the pattern refuses what the HTTP parser refuses (control characters)', () => {
    for (const [m, t] of [
      ['POST', '/api/assets/download'],
      ['POST', '/api/assets/export'],
    ] as const) {
      const header = operationOf(m, t).parameters.find((p: { name?: string }) => p.name === 'Idempotency-Key');
      const pattern = new RegExp(header.schema.pattern, 'u');
      expect([pattern.test('k\u0000'), pattern.test('k\u0001'), pattern.test('key-1 ok\t')]).toEqual([
        false,
        false,
        true,
      ]);
    }
  });
});
