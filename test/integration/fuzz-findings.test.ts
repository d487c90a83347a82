/**
 * December's fuzz findings: requests generated from openapi.yaml that the service answered otherwise than the document
 * says. For each, either the document now states the rule the service applies (a schema keyword where one can say it,
 * else the description), or the service now follows the document. Every answer is checked against openapi.yaml as it
 * arrives (validateResponses), so a status or code the document does not declare fails here too.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { json, KEYS, startTestService, uploadForm, type TestService } from '../helpers/harness';
import { operationOf, requestBodyErrors, validateResponse } from '../helpers/openapi-validator';
import { rawRequest } from '../helpers/raw-http';

const MAX_UPLOAD_BYTES = 4096;
const ORIGIN = 'https://app.example';

let svc: TestService;
let mine: { id: string; asset_hash: string };
beforeAll(async () => {
  svc = await startTestService(
    { MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES), CORS_ORIGINS: ORIGIN },
    { validateResponses: true },
  );
  mine = await json(
    await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(`fuzz ${Date.now()}`, { tags: 'fuzz' }) }),
  );
});
afterAll(async () => {
  await svc?.stop();
});

const spec = parse(fs.readFileSync(path.join(__dirname, '..', '..', 'openapi.yaml'), 'utf8'));
const schemas = spec.components.schemas;

/** A JSON request; `raw` is sent as it is (a lone surrogate escape, which JSON.stringify would keep too). */
const send = (method: string, url: string, body: unknown, raw?: string) =>
  svc.fetch(url, { method, headers: { 'content-type': 'application/json' }, body: raw ?? JSON.stringify(body) });

const answer = async (res: Response) => {
  const text = await res.text();
  return [res.status, text === '' ? undefined : (JSON.parse(text).code ?? 'ok')];
};

/** The document's query parameter `name` of `method` `template`. */
const queryParam = (method: string, template: string, name: string) =>
  operationOf(method, template).parameters.find((p: { name?: string }) => p.name === name);

describe('schema-valid requests the service refused: the document now states the rule', () => {
  test('POST /api/assets/{id}/paths: every path is a TreePath (not empty, no empty segment), by the document too', async () => {
    const template = '/api/assets/{id}/paths';
    for (const paths of [[''], ['a//b'], ['/etc/x'], ['a/../b'], ['x\\y'], ['a/'], ['\u0001']]) {
      expect([paths, ...(await answer(await send('POST', `/api/assets/${mine.id}/paths`, { paths })))]).toEqual([
        paths,
        400,
        'INVALID_BODY',
      ]);
      expect(requestBodyErrors('POST', template, { paths })).toBeDefined();
    }
    // 1,024 characters are code points, as maxLength counts them: an astral character is one.
    const long = '😀'.repeat(1024);
    const ok = { paths: ['models/loras/a.safetensors', long, '...'] };
    expect(requestBodyErrors('POST', template, ok)).toBeUndefined();
    const res = await send('POST', `/api/assets/${mine.id}/paths`, ok);
    expect(res.status).toBe(200);
    expect((await json(res)).paths).toEqual(expect.arrayContaining(ok.paths));
    const over = { paths: [`${long}x`] };
    expect(requestBodyErrors('POST', template, over)).toBeDefined();
    expect(await answer(await send('POST', `/api/assets/${mine.id}/paths`, over))).toEqual([400, 'INVALID_BODY']);
    // from-hash's `paths` and the upload form's `path` are the same field.
    expect(schemas.FromHashRequest.properties.paths.items).toEqual({ $ref: '#/components/schemas/TreePath' });
    expect(
      requestBodyErrors('POST', '/api/assets/from-hash', { hash: mine.asset_hash, tags: ['a'], paths: [''] }),
    ).toBeDefined();
  });

  test('from-hash: tags of blanks only are refused, and the document says so (contains)', async () => {
    for (const tags of [[''], ['  ', '\t']]) {
      const body = { hash: mine.asset_hash, tags };
      expect(await answer(await send('POST', '/api/assets/from-hash', body))).toEqual([400, 'INVALID_BODY']);
      expect(requestBodyErrors('POST', '/api/assets/from-hash', body)).toBeDefined();
    }
    const body = { hash: mine.asset_hash, tags: ['', 'fuzz'] };
    expect(requestBodyErrors('POST', '/api/assets/from-hash', body)).toBeUndefined();
    expect((await send('POST', '/api/assets/from-hash', body)).status).toBe(200);
  });

  test('PUT user_metadata: keys with NUL or an unpaired surrogate are refused, by the document too', async () => {
    const template = '/api/assets/{id}';
    const refused: [unknown, string][] = [
      [{ user_metadata: { 'a\u0000': 1 } }, '{"user_metadata":{"a\\u0000":1}}'],
      [{ user_metadata: { '\ud800': 1 } }, '{"user_metadata":{"\\ud800":1}}'],
      [{ user_metadata: { x: '\udc00' } }, '{"user_metadata":{"x":"\\udc00"}}'],
    ];
    for (const [body, raw] of refused) {
      expect(await answer(await send('PUT', `/api/assets/${mine.id}`, body, raw))).toEqual([400, 'INVALID_BODY']);
    }
    // Keys are a schema keyword; the rule at any depth is in the description (no keyword says it of every level).
    expect(requestBodyErrors('PUT', template, refused[0]![0])).toBeDefined();
    expect(requestBodyErrors('PUT', template, refused[1]![0])).toBeDefined();
    expect(schemas.AssetUpdate.properties.user_metadata.description).toMatch(/NUL .*unpaired UTF-16 surrogates/);
    const ok = { user_metadata: { '😀': { 'key é': '😀' } } };
    expect(requestBodyErrors('PUT', template, ok)).toBeUndefined();
    expect((await send('PUT', `/api/assets/${mine.id}`, ok)).status).toBe(200);
  });

  test('DELETE /api/assets/{id}/tags: empty items are dropped; the limits once normalised are stated', async () => {
    const url = `/api/assets/${mine.id}/tags`;
    const ok = { tags: ['', 'not-there', ' '] };
    expect(requestBodyErrors('DELETE', '/api/assets/{id}/tags', ok)).toBeUndefined();
    const res = await send('DELETE', url, ok);
    expect([res.status, (await json(res)).not_present]).toEqual([200, ['not-there']]);
    const many = { tags: ['', ...Array.from({ length: 65 }, (_, i) => `t${i}`)] };
    expect(await answer(await send('DELETE', url, many))).toEqual([400, 'INVALID_BODY']);
    expect(await answer(await send('DELETE', url, { tags: ['', 'x'.repeat(129)] }))).toEqual([400, 'INVALID_BODY']);
    expect(schemas.TagEdit.properties.tags.description).toMatch(/at most 64 distinct tags of at most 128 characters/);
  });

  test('name_contains: maxLength is the service limit, in code points as the document counts them', async () => {
    for (const template of ['/api/assets', '/api/assets/tags/refine']) {
      expect(queryParam('GET', template, 'name_contains').schema.maxLength).toBe(1024);
      const at = await svc.fetch(`${template}?name_contains=${encodeURIComponent('😀'.repeat(1024))}`);
      expect(at.status).toBe(200);
      await at.arrayBuffer();
      const over = await svc.fetch(`${template}?name_contains=${'a'.repeat(1025)}`);
      expect(await answer(over)).toEqual([400, 'INVALID_QUERY']);
    }
  });

  test('GET /api/tasks: status is a list, repeated or comma-separated, of any length', async () => {
    const param = queryParam('GET', '/api/tasks', 'status');
    expect([param.style, param.explode]).toEqual(['form', true]);
    const item = new RegExp(param.schema.items.pattern, 'u');
    expect(['running', 'FAILED', 'failed,cancelled', ' created , ', ''].every((v) => item.test(v))).toBe(true);
    expect(['bogus', 'running failed', 'running,bogus'].some((v) => item.test(v))).toBe(false);
    for (const q of [
      Array(70).fill('status=running').join('&'),
      `status=${Array(70).fill('running').join(',')}`,
      'status=running,failed&status=CREATED',
    ]) {
      const res = await svc.fetch(`/api/tasks?${q}`);
      expect([q.slice(0, 40), res.status]).toEqual([q.slice(0, 40), 200]);
      await res.arrayBuffer();
    }
    expect(await answer(await svc.fetch('/api/tasks?status=running&status=bogus'))).toEqual([400, 'INVALID_QUERY']);
  });

  test('source_url and url: an absolute URL of an allowed provider (https by default), else SOURCE_NOT_ALLOWED', async () => {
    for (const desc of [schemas.DownloadRequest.properties.source_url, schemas.AssetUrlUpload.properties.url]) {
      expect(desc.description).toMatch(/`https:\/\/huggingface\.co` and `https:\/\/civitai\.com`/);
      expect(desc.description).toMatch(/http:` URL or any other host is 400\s+`SOURCE_NOT_ALLOWED`/);
    }
    expect(queryParam('GET', '/api/assets/remote-metadata', 'url').description).toMatch(/SOURCE_NOT_ALLOWED/);
    const refusedByBoth = ['ftp://huggingface.co/x', 'https://', 'https://u:p@huggingface.co/x', 'huggingface.co/x'];
    const refusedByService = ['http://huggingface.co/r/resolve/main/a.bin', 'https://example.com/a.bin'];
    for (const u of [...refusedByBoth, ...refusedByService]) {
      const download = await send('POST', '/api/assets/download', { source_url: u });
      expect([u, ...(await answer(download))]).toEqual([u, 400, 'SOURCE_NOT_ALLOWED']);
      const upload = await send('POST', '/api/assets', { url: u });
      expect([u, ...(await answer(upload))]).toEqual([u, 400, 'SOURCE_NOT_ALLOWED']);
    }
    for (const u of refusedByBoth) {
      expect(requestBodyErrors('POST', '/api/assets/download', { source_url: u })).toBeDefined();
      expect(requestBodyErrors('POST', '/api/assets', { url: u })).toBeDefined();
    }
    expect(
      requestBodyErrors('POST', '/api/assets/download', { source_url: 'https://huggingface.co:443/r/resolve/m/a' }),
    ).toBeUndefined();
  });

  test('unknown keys in the seed and export bodies are ignored, as in every body; their keys obey the text rule', async () => {
    const exportBody = { asset_ids: [mine.id], comment: { deep: [1, 'x'] } };
    expect(requestBodyErrors('POST', '/api/assets/export', exportBody)).toBeUndefined();
    expect((await send('POST', '/api/assets/export', exportBody)).status).toBe(202);
    const seedBody = { roots: ['models'], source: 'frontend' };
    expect(requestBodyErrors('POST', '/api/assets/seed', seedBody)).toBeUndefined();
    expect((await send('POST', '/api/assets/seed', seedBody)).status).toBe(200);
    for (const name of ['ExportRequest', 'SeedRequest']) {
      expect(schemas[name].additionalProperties).toBeUndefined();
      expect(schemas[name].description).toMatch(/other keys are ignored; keys and strings at any depth/);
    }
    for (const [template, body] of [
      ['/api/assets/export', { asset_ids: [mine.id], 'x\u0000': 1 }],
      ['/api/assets/seed', { 'x\u0000': 1 }],
    ] as const) {
      expect(await answer(await send('POST', template, body))).toEqual([400, 'INVALID_BODY']);
      expect(requestBodyErrors('POST', template, body)).toBeDefined();
    }
    expect(await answer(await send('POST', '/api/assets/seed', { roots: 'models' }))).toEqual([400, 'INVALID_BODY']);
    expect(requestBodyErrors('POST', '/api/assets/seed', { roots: 'models' })).toBeDefined();
  });

  test('POST /api/uploads: over MAX_UPLOAD_BYTES, or a body past Upload-Length, is the declared 413', async () => {
    const op = operationOf('POST', '/api/uploads');
    const length = op.parameters.find((p: { name?: string }) => p.name === 'Upload-Length');
    expect(length.description).toMatch(/at most `MAX_UPLOAD_BYTES` .*413 `PAYLOAD_TOO_LARGE`/s);
    expect(op.requestBody.description).toMatch(/at most `Upload-Length` .*413 `PAYLOAD_TOO_LARGE`/s);
    const headers: [string, string][] = [
      ['X-API-Key', KEYS.alice],
      ['Tus-Resumable', '1.0.0'],
    ];
    const over = await rawRequest(svc.url, 'POST', '/api/uploads', [
      ...headers,
      ['Upload-Length', String(MAX_UPLOAD_BYTES + 1)],
    ]);
    const overBody = JSON.parse(over.body.toString());
    expect([over.status, overBody.code, overBody.details.max_bytes]).toEqual([413, 'PAYLOAD_TOO_LARGE', 4096]);
    validateResponse('POST', '/api/uploads', over.status, overBody);
    const past = await rawRequest(
      svc.url,
      'POST',
      '/api/uploads',
      [...headers, ['Upload-Length', '10'], ['Content-Type', 'application/offset+octet-stream']],
      Buffer.alloc(MAX_UPLOAD_BYTES + 1),
    );
    expect([past.status, JSON.parse(past.body.toString()).code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    validateResponse('POST', '/api/uploads', past.status, JSON.parse(past.body.toString()));
  });

  test('POST /api/uploads/{id} standing for PATCH without Upload-Offset: the declared 400', async () => {
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
        ['Content-Type', 'application/offset+octet-stream'],
      ],
      Buffer.from('abc'),
    );
    const body = JSON.parse(res.body.toString());
    expect([res.status, body.code]).toEqual([400, 'INVALID_REQUEST']);
    validateResponse('POST', `/api/uploads/${id}`, res.status, body);
    const offset = operationOf('POST', '/api/uploads/{id}').parameters.find(
      (p: { name?: string }) => p.name === 'Upload-Offset',
    );
    expect(offset.description).toMatch(/without it that request is\s+400 `INVALID_REQUEST`/);
  });
});

describe('schema-violating requests the service accepted: it now refuses them, or the document allows them', () => {
  test('seed: wait is a boolean given once; anything else is 400 INVALID_QUERY', async () => {
    for (const q of ['wait=null&wait=null', 'wait=true&wait=true', 'wait=yes', 'wait=1']) {
      const res = await svc.fetch(`/api/assets/seed?${q}`, { method: 'POST', key: KEYS.admin });
      expect([q, ...(await answer(res))]).toEqual([q, 400, 'INVALID_QUERY']);
    }
    for (const q of ['wait=true', 'wait=false', 'wait=']) {
      const res = await svc.fetch(`/api/assets/seed?${q}`, { method: 'POST', key: KEYS.admin });
      expect([q, res.status]).toEqual([q, 200]);
      await res.arrayBuffer();
    }
    expect(queryParam('POST', '/api/assets/seed', 'wait').allowEmptyValue).toBe(true);
  });

  test('disposition=: the document allows the empty value, which is the default (attachment)', async () => {
    for (const template of ['/api/assets/{id}/content', '/api/s/{id}']) {
      const p = spec.paths[template].parameters.find((x: { name?: string }) => x.name === 'disposition');
      expect([template, p.allowEmptyValue]).toEqual([template, true]);
    }
    const res = await svc.fetch(`/api/assets/${mine.id}/content?disposition=`);
    expect([res.status, res.headers.get('content-disposition')]).toEqual([200, expect.stringMatching(/^attachment/)]);
    await res.arrayBuffer();
  });

  test('OPTIONS /api/uploads/{id}: an id that is no UUID is 404; a browser preflight is still answered', async () => {
    const id = spec.paths['/api/uploads/{id}'].parameters.find((p: { name?: string }) => p.name === 'id');
    expect(new RegExp(id.schema.pattern, 'u').test('null,null')).toBe(false);
    const res = await svc.fetch('/api/uploads/null,null', { method: 'OPTIONS', key: null });
    expect(await answer(res)).toEqual([404, 'NOT_FOUND']);
    const real = await svc.fetch(`/api/uploads/${mine.id}`, { method: 'OPTIONS', key: null });
    expect([real.status, real.headers.get('tus-version')]).toEqual([204, '1.0.0']);
    // CORS answers for the origin, not for the resource: a page's preflight must not fail before its request does.
    const preflight = await svc.fetch('/api/uploads/null,null', {
      method: 'OPTIONS',
      key: null,
      headers: { origin: ORIGIN, 'access-control-request-method': 'PATCH' },
    });
    expect([preflight.status, preflight.headers.get('access-control-allow-origin')]).toEqual([204, ORIGIN]);
  });
});
