/**
 * Queries run as code compiled by graphql-jit (src/http/graphql/executor.ts). Their answers must be graphql-js's:
 * each request here is sent with the executor replaced by graphql-js's `execute`, then as it is, and the two answers
 * compared: status, headers and the body text byte for byte. Kept answers are off here, so that every answer is executed (test/integration/graphql-kept.test.ts).
 */
import http from 'node:http';
import { execute } from 'graphql';
import { JitExecutor } from '../../src/http/graphql/executor';
import { RequestAuth } from '../../src/http/shared/request-auth';
import { PageCache } from '../../src/http/shared/page-cache';
import { KEYS, startTestService, type TestService } from '../helpers/harness';
import { ASSET_FIELDS, gqlUpload, UPLOAD, type Json } from '../helpers/graphql';

let svc: TestService;
const ids: string[] = [];
beforeAll(async () => {
  svc = await startTestService();
  for (let i = 0; i < 3; i++) {
    const r = await gqlUpload(
      svc,
      UPLOAD,
      { input: { tags: ['lane', `n${i}`], userMetadata: { i, nested: { a: [1, 'two'] } } } },
      `lane ${i} ${Math.random()}`,
      {
        fileName: `lane-${i}.bin`,
      },
    );
    if (r.errors) throw new Error(JSON.stringify(r.errors));
    ids.push(r.data.uploadAsset.asset.id);
  }
  // Each asset previews the next (the batched loader), the last one itself.
  for (const [i, id] of ids.entries()) {
    const res = await svc.fetch(`/api/assets/${id}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ preview_id: ids[Math.min(i + 1, ids.length - 1)] }),
    });
    expect(res.status).toBe(200);
  }
});
afterAll(async () => {
  await svc?.stop();
});
beforeEach(() => jest.spyOn(PageCache.prototype, 'get').mockReturnValue(undefined));
afterEach(() => jest.restoreAllMocks());

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

function post(body: Json, headers: Record<string, string> = {}): Promise<Answer> {
  const text = Buffer.from(JSON.stringify(body));
  const all: Record<string, string> = {
    'x-api-key': KEYS.alice,
    'content-type': 'application/json',
    'content-length': String(text.length),
    ...headers,
  };
  for (const [k, v] of Object.entries(all)) if (v === '') delete all[k];
  return new Promise((resolve, reject) => {
    const req = http.request(new URL('/graphql', svc.url), { method: 'POST', headers: all }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const h = { ...res.headers };
        for (const k of ['date', 'x-request-id', 'keep-alive', 'connection']) delete h[k];
        resolve({ status: res.statusCode!, headers: h, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}

/** Sends `body` with graphql-js as the executor, then with graphql-jit; both answers, and whether jit ran it. */
async function bothWays(
  body: Json,
  headers: Record<string, string> = {},
): Promise<{ js: Answer; jit: Answer; wasCompiled: boolean }> {
  const byJs = jest.spyOn(JitExecutor.prototype, 'execute').mockImplementation(function (this: JitExecutor, rc) {
    return execute({
      schema: this.schema,
      document: rc.document,
      contextValue: rc.context,
      variableValues: rc.request.variables,
      operationName: rc.request.operationName,
    });
  });
  const js = await post(body, headers);
  byJs.mockRestore();
  const compiled = jest.spyOn(JitExecutor.prototype, 'compile');
  const jit = await post(body, headers);
  const wasCompiled = compiled.mock.calls.length > 0;
  compiled.mockRestore();
  return { js, jit, wasCompiled };
}

const ASSET = `query One($id: ID!) { asset(id: $id) { ${ASSET_FIELDS} hash displayName jobId loaderPath metadata thumbnailUrl preview { id name } } }`;
const LIST = `query List($limit: Int! = 20, $tags: [String!]) {
  assets(limit: $limit, filter: { includeTags: $tags }) { items { ${ASSET_FIELDS} preview { id name mimeType previewId } } total hasMore nextCursor totalIsLowerBound }
}`;

describe('graphql-jit answers as graphql-js does', () => {
  // The third member: whether graphql-jit runs it (refused or null variables and unresolved operations are
  // graphql-js's).
  const cases: Array<[string, () => Json, boolean]> = [
    ['asset(id), every field', () => ({ query: ASSET, variables: { id: ids[0] } }), true],
    [
      'asset(id) of an unknown id: ASSET_NOT_FOUND, data null',
      () => ({ query: ASSET, variables: { id: '00000000-0000-4000-8000-000000000000' } }),
      true,
    ],
    ['asset(id) of a malformed id', () => ({ query: ASSET, variables: { id: 'not-a-uuid' } }), true],
    ['a page with previews, limit left to its default', () => ({ query: LIST, variables: { tags: ['lane'] } }), true],
    ['a page, variables null', () => ({ query: LIST, variables: null }), true],
    ['a page, no variables member', () => ({ query: LIST }), true],
    ['a page, limit 0 (the argument validator)', () => ({ query: LIST, variables: { limit: 0 } }), true],
    [
      'a page, limit of the wrong type (variable coercion)',
      () => ({ query: LIST, variables: { limit: 'ten' } }),
      false,
    ],
    ['a page, a null for the non-null variable', () => ({ query: LIST, variables: { limit: null } }), false],
    [
      'a literal query with an operation name',
      () => ({ query: '{ a: assets(limit: 1) { total } b: contentExists(hash: "sha256:00") }', operationName: null }),
      true,
    ],
    ['a bad hash literal', () => ({ query: '{ contentExists(hash: "md5:00") }' }), true],
    [
      'two operations, one chosen by name',
      () => ({
        query: `query A { assets(limit: 1) { total } } query B($id: ID!) { asset(id: $id) { id name } }`,
        operationName: 'B',
        variables: { id: ids[1] },
      }),
      true,
    ],
    [
      'two operations, none chosen',
      () => ({ query: `query A { assets(limit: 1) { total } } query B { tagCounts { name count } }` }),
      false,
    ],
    [
      'an operation name that is not in the document',
      () => ({ query: `query A { assets(limit: 1) { total } }`, operationName: 'Z' }),
      false,
    ],
    ['tag facets and __typename', () => ({ query: '{ __typename tagCounts(limit: 5) { name count } }' }), true],
  ];

  test.each(cases)('%s', async (_name, body, compiled) => {
    const { js, jit, wasCompiled } = await bothWays(body());
    expect(jit).toEqual(js);
    expect(wasCompiled).toBe(compiled);
  });

  test('the content type is negotiated: Accept values it takes, and one it refuses', async () => {
    for (const [accept, status, type] of [
      ['*/*', 200, 'application/json; charset=utf-8'],
      ['application/json', 200, 'application/json; charset=utf-8'],
      ['', 200, 'application/json; charset=utf-8'],
      ['application/graphql-response+json, application/json', 200, 'application/graphql-response+json; charset=utf-8'],
      ['text/html', 406, 'application/json; charset=utf-8'],
    ] as const) {
      const { js, jit } = await bothWays({ query: ASSET, variables: { id: ids[2] } }, { accept });
      expect([accept, jit]).toEqual([accept, js]);
      expect([accept, jit.status, jit.headers['content-type']]).toEqual([accept, status, type]);
      expect(Number(jit.headers['content-length'])).toBe(Buffer.byteLength(jit.text));
    }
  });

  test('no key, or an unknown one: 401 UNAUTHORIZED, authentication run once', async () => {
    for (const headers of [{ 'x-api-key': '' }, { 'x-api-key': 'not-a-key' }]) {
      const auth = jest.spyOn(RequestAuth.prototype, 'authenticate');
      const r = await post({ query: ASSET, variables: { id: ids[0] } }, headers);
      expect(r.status).toBe(401);
      expect(JSON.parse(r.text).errors[0].extensions.code).toBe('UNAUTHORIZED');
      expect(auth).toHaveBeenCalledTimes(1);
      auth.mockRestore();
    }
  });

  test('refused variables: 400, authentication run once', async () => {
    await post({ query: LIST, variables: { limit: 1 } });
    const auth = jest.spyOn(RequestAuth.prototype, 'authenticate');
    const r = await post({ query: LIST, variables: { limit: 'ten' } });
    expect(r.status).toBe(400);
    expect(auth).toHaveBeenCalledTimes(1);
  });

  test('an operation name the document does not have: 400 INVALID_BODY (the executor ran its only operation before)', async () => {
    const r = await post({ query: `query A { assets(limit: 1) { total } }`, operationName: 'Z' });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).errors[0].extensions).toEqual({
      code: 'INVALID_BODY',
      details: { reason: 'OPERATION_RESOLUTION_FAILURE' },
    });
  });

  test('a batch and a persisted-query extension are refused', async () => {
    const fresh = `{ assets(limit: 1) { total } t${Date.now()}: __typename }`;
    expect((await post({ query: fresh })).status).toBe(200);
    expect(
      (await post({ query: fresh, extensions: { persistedQuery: { version: 1, sha256Hash: 'x' } } })).text,
    ).toContain('"errors"');
    expect((await post([{ query: fresh }] as Json)).status).toBeGreaterThanOrEqual(400);
  });
});
