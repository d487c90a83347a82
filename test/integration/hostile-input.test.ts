/**
 * Input a client can send that used to reach PostgreSQL or a header and become a 500 (REST) or
 * INTERNAL (GraphQL). Each is answered 4xx with `{code, message}` now. The property-based
 * version of the same classes is hostile-input.property.test.ts.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import { Client } from 'pg';
import { gql } from '../helpers/graphql';
import { blake3Of, json, KEYS, startTestService, uploadForm, type TestService } from '../helpers/harness';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({}, { validateResponses: true });
});
afterAll(async () => {
  await svc?.stop();
});

const NUL = '\u0000';
const LONE = '\ud800';
const unique = (label = 'x') => `${label}-${crypto.randomUUID()}`;

async function upload(
  body: Buffer | string,
  fields: Record<string, string | string[]> = {},
  name = 'file.bin',
  key: string = KEYS.alice,
) {
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(body, fields, name), key });
  return { status: res.status, body: await json(res) };
}

const sendJson = (path: string, method: string, body: unknown, key: string = KEYS.alice) =>
  svc.fetch(path, {
    method,
    key,
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** A JSON text of `{"a":{"a":…}}` nested `depth` levels, built as text (JSON.stringify would recurse). */
const deepJson = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

async function expectError(res: Response, status: number, code: string | RegExp) {
  const body = await json(res);
  expect({ status: res.status, code: body.code, message: typeof body.message }).toEqual({
    status,
    code: typeof code === 'string' ? code : expect.stringMatching(code),
    message: 'string',
  });
}

let mine: { id: string; asset_hash: string };
beforeAll(async () => {
  const r = await upload(unique('mine'), { tags: 'keep' }, 'mine.bin');
  mine = r.body;
});

describe('1, 2. NUL and unpaired surrogates in text', () => {
  test('query parameters: 400 INVALID_QUERY', async () => {
    const cases = [
      `/api/assets?name_contains=a%00b`,
      `/api/assets?include_tags=a%00`,
      `/api/assets?exclude_tags=x,%00`,
      `/api/assets?metadata_filter=${encodeURIComponent(JSON.stringify({ k: `v${NUL}` }))}`,
      `/api/assets?metadata_filter=${encodeURIComponent(JSON.stringify({ [`k${NUL}`]: 'v' }))}`,
      `/api/assets?metadata_filter=${encodeURIComponent(JSON.stringify({ k: { deep: [`v${NUL}`] } }))}`,
      `/api/assets?metadata_filter=${encodeURIComponent('{"k":"\\ud800"}')}`,
      `/api/tags?prefix=%00`,
      `/api/tasks?task_name=a%00`,
      `/api/tasks?idempotency_key=%00`,
    ];
    for (const path of cases) {
      const res = await svc.fetch(path);
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect(await json(res)).toMatchObject({ code: 'INVALID_QUERY', message: expect.any(String) });
    }
    // A lone surrogate percent-encoded (invalid UTF-8) reaches the server as U+FFFD: harmless text.
    expect((await svc.fetch('/api/assets?name_contains=%ED%A0%80')).status).toBe(200);
  });

  test('JSON bodies (PUT, from-hash, download): 400 INVALID_BODY', async () => {
    const put = (body: string) => sendJson(`/api/assets/${mine.id}`, 'PUT', body);
    for (const body of [
      JSON.stringify({ name: `a${NUL}b` }),
      JSON.stringify({ tags: [`t${NUL}`] }),
      JSON.stringify({ user_metadata: { k: `v${NUL}` } }),
      JSON.stringify({ user_metadata: { [`k${NUL}`]: 1 } }),
      JSON.stringify({ user_metadata: { a: [{ b: `x${NUL}` }] } }),
      '{"user_metadata":{"k":"\\ud800"}}',
      '{"user_metadata":{"\\udc00":1}}',
      '{"tags":["\\ud800x"]}',
      '{"name":"a\\udfffb"}',
      JSON.stringify({ mime_type: 'text/plain; charset=\u0001' }),
    ]) {
      await expectError(await put(body), 400, 'INVALID_BODY');
    }
    for (const body of [
      JSON.stringify({ hash: mine.asset_hash, tags: [`t${NUL}`] }),
      JSON.stringify({ hash: mine.asset_hash, tags: ['t'], name: `n${NUL}` }),
      '{"hash":"' + mine.asset_hash + '","tags":["\\ud800"]}',
      JSON.stringify({ hash: mine.asset_hash, tags: ['t'], user_metadata: { [NUL]: NUL } }),
    ]) {
      await expectError(await sendJson('/api/assets/from-hash', 'POST', body, KEYS.bob), 400, 'INVALID_BODY');
    }
    for (const body of [
      JSON.stringify({ source_url: 'https://huggingface.co/o/r/resolve/main/x.bin', tags: [`t${NUL}`] }),
      '{"source_url":"https://huggingface.co/o/r/resolve/main/x.bin","user_metadata":{"k":"\\ud800"}}',
    ]) {
      await expectError(await sendJson('/api/assets/download', 'POST', body), 400, 'INVALID_BODY');
    }
  });

  test('multipart fields: 400 INVALID_BODY, nothing stored', async () => {
    const cases: Record<string, string>[] = [
      { tags: `a,b${NUL}` },
      { tags: JSON.stringify([`x${NUL}`]) },
      { name: `n${NUL}` },
      { user_metadata: '{"k":"\\u0000"}' },
      { user_metadata: '{"k":"\\ud800"}' },
    ];
    for (const fields of cases) {
      const content = unique('never');
      const r = await upload(content, fields);
      expect({ fields, status: r.status, code: r.body.code }).toEqual({ fields, status: 400, code: 'INVALID_BODY' });
      expect((await svc.fetch(`/api/assets/hash/${blake3Of(Buffer.from(content))}`, { method: 'HEAD' })).status).toBe(
        404,
      );
    }
  });

  test('GraphQL arguments (queries and mutations): INVALID_BODY, never INTERNAL', async () => {
    const queries: [string, Record<string, unknown>][] = [
      ['query($v: String) { assets(filter: { nameContains: $v }) { total } }', { v: `a${NUL}` }],
      ['query($v: [String!]) { assets(filter: { includeTags: $v }) { total } }', { v: [`a${NUL}`] }],
      ['query($v: JSON) { assets(filter: { metadataFilter: $v }) { total } }', { v: { k: { d: `a${NUL}` } } }],
      ['query($v: JSON) { assets(filter: { metadataFilter: $v }) { total } }', { v: { [`k${NUL}`]: 1 } }],
      ['query($v: String) { tags(prefix: $v) { total } }', { v: NUL }],
      ['query($v: String) { tasks(filter: { taskName: $v }) { total } }', { v: `x${NUL}` }],
      ['query($v: String) { tasks(filter: { idempotencyKey: $v }) { total } }', { v: `x${LONE}` }],
    ];
    for (const [q, v] of queries) {
      const r = await gql(svc, q, v);
      expect({ q, code: r.code }).toEqual({ q, code: 'INVALID_BODY' });
    }
    const update = 'mutation($id: ID!, $i: UpdateAssetInput!) { updateAsset(id: $id, input: $i) { id } }';
    for (const i of [
      { name: `a${NUL}` },
      { tags: [`a${LONE}`] },
      { userMetadata: { k: [`a${NUL}`] } },
      { userMetadata: { [LONE]: 1 } },
    ]) {
      const r = await gql(svc, update, { id: mine.id, i });
      expect({ i, code: r.code }).toEqual({ i, code: 'INVALID_BODY' });
    }
    // A nullable variable given null for an argument of non-null type with a default (found by the property suite).
    const nullLimit = await gql(svc, 'query($l: Int) { assets(limit: $l) { total } }', { l: null });
    expect(nullLimit.code).toBe('INVALID_BODY');
    const dl = 'mutation($i: StartDownloadInput!) { startDownload(input: $i) { task { id } } }';
    const r = await gql(svc, dl, {
      i: { sourceUrl: 'https://huggingface.co/o/r/resolve/main/x.bin', idempotencyKey: `k${NUL}` },
    });
    expect(r.code).toBe('INVALID_BODY');
  });
});

describe('3. deep JSON', () => {
  test('> 64 levels is refused with 400; 10,000 levels fast', async () => {
    const started = Date.now();
    const deep = deepJson(10_000);
    await expectError(
      await sendJson(`/api/assets/${mine.id}`, 'PUT', `{"user_metadata":${deep}}`),
      400,
      'INVALID_BODY',
    );
    await expectError(
      await sendJson(`/api/assets/${mine.id}`, 'PUT', `{"user_metadata":${deepJson(65)}}`),
      400,
      'INVALID_BODY',
    );
    await expectError(
      await sendJson(
        '/api/assets/download',
        'POST',
        `{"source_url":"https://huggingface.co/o/r/resolve/main/x.bin","user_metadata":${deep}}`,
      ),
      400,
      'INVALID_BODY',
    );
    await expectError(
      await sendJson(
        '/api/assets/from-hash',
        'POST',
        `{"hash":"${mine.asset_hash}","tags":["t"],"user_metadata":${deep}}`,
        KEYS.bob,
      ),
      400,
      'INVALID_BODY',
    );
    const r = await upload(unique('deep'), { user_metadata: deep });
    expect([r.status, r.body.code]).toEqual([400, 'INVALID_BODY']);
    const g = await svc.fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"query":"mutation($id: ID!, $m: JSON) { updateAsset(id: $id, input: { userMetadata: $m }) { id } }","variables":{"id":"${mine.id}","m":${deep}}}`,
    });
    expect((await json(g)).errors[0].extensions.code).toBe('INVALID_BODY');
    const f = await svc.fetch(`/api/assets?metadata_filter=${encodeURIComponent(deepJson(100))}`);
    await expectError(f, 400, 'INVALID_QUERY');
    expect(Date.now() - started).toBeLessThan(5_000);
    // 64 levels is fine.
    const ok = await sendJson(`/api/assets/${mine.id}`, 'PUT', `{"user_metadata":${deepJson(63)}}`);
    expect(ok.status).toBe(200);
  });
});

describe('4. mime_type is an RFC 9110 media type', () => {
  test('control and non-ASCII characters are refused; quoted parameters are fine', async () => {
    for (const mime of [
      'text/plain; charset=\u0001',
      'text/plain; charset="\u0001"',
      'text/plain; charset=é',
      'text/pl ain',
      'text/plain; a',
      'image/png\r\nX-Evil: 1',
    ]) {
      await expectError(await sendJson(`/api/assets/${mine.id}`, 'PUT', { mime_type: mime }), 400, 'INVALID_BODY');
      const r = await upload(unique('m'), { mime_type: mime });
      expect({ mime, status: r.status }).toEqual({ mime, status: 400 });
    }
    const ok = await sendJson(`/api/assets/${mine.id}`, 'PUT', {
      mime_type: 'text/plain; charset="utf-8"; format=flowed',
    });
    expect(ok.status).toBe(200);
  });

  test('a stored bad value is served as application/octet-stream', async () => {
    const a = (await upload(unique('bad-mime'), {}, 'bad.txt')).body;
    const db = new Client({ connectionString: svc.databaseUrl });
    await db.connect();
    try {
      await db.query('UPDATE asset SET mime_type = $1 WHERE id = $2', ['text/plain; charset=\u0001é', a.id]);
    } finally {
      await db.end();
    }
    for (const method of ['GET', 'HEAD']) {
      const res = await svc.fetch(`/api/assets/${a.id}/content`, { method });
      expect({ method, status: res.status, type: res.headers.get('content-type') }).toEqual({
        method,
        status: 200,
        type: 'application/octet-stream',
      });
    }
  });
});

describe('5. dates in queries lie in the years 0001–9999', () => {
  test('REST and GraphQL', async () => {
    for (const d of [
      '-271821-04-20T00:00:00Z',
      '+275760-09-13T00:00:00Z',
      '0000-12-31T00:00:00Z',
      '+010000-01-01T00:00:00Z',
    ]) {
      for (const p of ['created_after', 'created_before']) {
        await expectError(await svc.fetch(`/api/tasks?${p}=${encodeURIComponent(d)}`), 400, 'INVALID_QUERY');
      }
      const g = await gql(svc, 'query($d: DateTimeISO) { tasks(filter: { createdAfter: $d }) { total } }', { d });
      expect({ d, code: g.code }).toEqual({ d, code: 'INVALID_BODY' });
    }
    expect(
      (await svc.fetch('/api/tasks?created_after=0001-01-01T00:00:00Z&created_before=9999-12-31T23:59:59Z')).status,
    ).toBe(200);
  });
});

describe('6. a multipart part named file without filename= is the file', () => {
  test('201, named by the content hash', async () => {
    const content = unique('no-filename');
    const boundary = 'b' + crypto.randomBytes(8).toString('hex');
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="tags"\r\n\r\nx\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"\r\n\r\n${content}\r\n--${boundary}--\r\n`;
    const res = await svc.fetch('/api/assets', {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
    });
    const a = await json(res);
    expect([res.status, a.size, a.asset_hash]).toEqual([
      201,
      Buffer.byteLength(content),
      blake3Of(Buffer.from(content)),
    ]);
    expect(a.name).toBe(blake3Of(Buffer.from(content)).slice('blake3:'.length, 'blake3:'.length + 16));
  });
});

describe('7. GraphQL cost', () => {
  test('a huge document is refused before parsing', async () => {
    const aliases = Array.from({ length: 100_000 }, (_, i) => `a${i}: __typename`).join(' ');
    const started = Date.now();
    const res = await svc.fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: `{ ${aliases} }` }),
    });
    const body = await json(res);
    // Before the fix: 4.5 s of parsing and validation on the event loop. (Generous: the CI machine is shared.)
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(res.status).toBe(413);
    expect(body.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
  });

  test('__typename counts, and aliases are limited', async () => {
    const many = Array.from({ length: 101 }, (_, i) => `a${i}: __typename`).join(' ');
    const r = await gql(svc, `{ ${many} }`);
    expect([r.status, r.code]).toEqual([400, 'INVALID_BODY']);
    expect(r.errors![0].message).toMatch(/alias/);
    const typenames = Array.from({ length: 60 }, (_, i) => `t${i}: __typename`).join(' ');
    const c = await gql(svc, `{ assets(limit: 500) { items { ${typenames} } } }`);
    expect([c.status, c.code]).toEqual([400, 'INVALID_BODY']);
    expect(c.errors![0].message).toMatch(/costs more than/);
    expect((await gql(svc, '{ __typename assets { __typename total } }')).status).toBe(200);
  });
});

describe('8. from-hash never takes another owner’s upload file name', () => {
  test('defaults to the first 16 hex of the blake3 (REST, GraphQL, multipart hash fast path)', async () => {
    const content = unique('private');
    const hash = blake3Of(Buffer.from(content));
    expect((await upload(content, {}, 'alice-private-plans.txt')).status).toBe(201);
    const expected = hash.slice(7, 23);
    const rest = await sendJson('/api/assets/from-hash', 'POST', { hash, tags: ['t'] }, KEYS.bob);
    expect([rest.status, (await json(rest)).name]).toEqual([201, expected]);
    const g = await gql(
      svc,
      'mutation($i: CreateAssetFromHashInput!) { createAssetFromHash(input: $i) { asset { name } } }',
      { i: { hash, tags: ['t'] } },
      { key: KEYS.admin },
    );
    expect(g.data.createAssetFromHash.asset.name).toBe(expected);

    const other = unique('private2');
    const hash2 = blake3Of(Buffer.from(other));
    await upload(other, {}, 'alice-secret.txt');
    const form = new FormData();
    form.append('hash', hash2);
    const res = await svc.fetch('/api/assets', { method: 'POST', key: KEYS.bob, body: form });
    const body = await json(res);
    expect([res.status, body.name]).toEqual([201, hash2.slice(7, 23)]);
  });
});

describe('9. unknown methods on known paths: 405 with Allow', () => {
  test('405 METHOD_NOT_ALLOWED; unknown paths stay 404', async () => {
    const cases: [string, string, string[]][] = [
      ['PATCH', '/api/assets', ['GET', 'HEAD', 'POST']],
      ['POST', `/api/assets/${mine.id}`, ['DELETE', 'GET', 'HEAD', 'PUT']],
      ['PUT', '/api/tags', ['GET', 'HEAD']],
      ['DELETE', '/api/tasks', ['GET', 'HEAD']],
      ['DELETE', `/api/assets/hash/${mine.asset_hash}`, ['GET', 'HEAD']],
      ['PUT', `/api/assets/${mine.id}/content`, ['GET', 'HEAD']],
      ['POST', '/healthz', ['GET', 'HEAD']],
      // The literal paths beside /api/assets/{id} are their own resources, not ids that are not UUIDs (400 INVALID_ID).
      ['GET', '/api/assets/export', ['POST']],
      ['GET', '/api/assets/download', ['POST']],
      ['DELETE', '/api/assets/from-hash', ['POST']],
      ['PUT', '/api/assets/remote-metadata', ['GET', 'HEAD']],
      ['GET', '/api/uploads', ['OPTIONS', 'POST']],
    ];
    for (const [method, path, allow] of cases) {
      const res = await svc.fetch(path, { method });
      const body = await json(res);
      expect({ method, path, status: res.status, code: body.code }).toEqual({
        method,
        path,
        status: 405,
        code: 'METHOD_NOT_ALLOWED',
      });
      expect(typeof body.message).toBe('string');
      expect(res.headers.get('allow')!.split(/,\s*/).sort()).toEqual(allow);
    }
    expect((await svc.fetch('/api/nothing-here', { method: 'PATCH' })).status).toBe(404);
    expect((await svc.fetch('/api/nothing-here')).status).toBe(404);
    expect((await json(await svc.fetch('/api/assets/not-a-uuid'))).code).toBe('INVALID_ID');
    // A path the router cannot percent-decode is a bad request, not a bad body.
    const undecodable = await svc.fetch('/api/assets/%ZZ');
    expect([undecodable.status, (await json(undecodable)).code]).toEqual([400, 'INVALID_REQUEST']);
    // Without a key an /api path still answers 401 first.
    expect((await svc.fetch('/api/assets', { method: 'PATCH', key: null })).status).toBe(401);
  });
});

test('the Idempotency-Key header refuses what it cannot store', async () => {
  // Node refuses NUL in a header itself (400 from the HTTP parser); bytes above 0x7f arrive as latin1 text.
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request(`${svc.url}/api/assets/download`, {
      method: 'POST',
      headers: {
        'x-api-key': KEYS.alice,
        'content-type': 'application/json',
        'idempotency-key': Buffer.from('k\u00ff', 'latin1').toString('latin1'),
      },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ source_url: 'https://example.com/x' }));
  });
  expect(status).toBeLessThan(500);
});

describe('requests the HTTP parser refuses get the same {code, message} body', () => {
  /** Sends raw bytes on a new connection and reads everything the server answers until it closes. */
  async function raw(bytes: string): Promise<{ status: number; headers: string; body: string }> {
    const { port } = new URL(svc.url);
    const net = await import('node:net');
    const text = await new Promise<string>((resolve, reject) => {
      const s = net.connect(Number(port), '127.0.0.1', () => s.end(bytes));
      let out = '';
      s.setEncoding('latin1');
      s.on('data', (d: string) => (out += d));
      s.on('close', () => resolve(out));
      s.on('error', reject);
      s.setTimeout(10_000, () => s.destroy(new Error('no answer')));
    });
    const [head = '', body = ''] = text.split('\r\n\r\n');
    return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head.toLowerCase(), body };
  }

  test('a request head over 16 KiB is 431 HEADERS_TOO_LARGE', async () => {
    const r = await raw(
      `GET /api/assets HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${KEYS.alice}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(r.status).toBe(431);
    expect(r.headers).toContain('connection: close');
    expect(JSON.parse(r.body)).toEqual({ code: 'HEADERS_TOO_LARGE', message: expect.any(String) });
  });

  test('a NUL in a header value is 400 INVALID_REQUEST; the service still answers', async () => {
    const r = await raw(`GET /api/assets HTTP/1.1\r\nHost: x\r\nX-Api-Key: a\u0000b\r\n\r\n`);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body)).toEqual({ code: 'INVALID_REQUEST', message: expect.any(String) });
    expect((await svc.fetch('/api/assets')).status).toBe(200);
  });
});
