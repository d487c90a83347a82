/**
 * The GraphQL wire, as clients see it: a corpus of requests (good and bad operations, every malformed body, content
 * negotiation, GET, CSRF, uploads, keys) sent in order to a fresh service, each answer's status, headers and body
 * compared with the snapshot recorded from Apollo Server 5 (__snapshots__/graphql-wire.test.ts.snap): Apollo is the
 * server again (src/http/graphql/apollo-http.ts), and the corpus holds on it unchanged. What varies per run (ids,
 * times, the port, read grants) is replaced by placeholders; ids keep their order of first appearance.
 * Re-recorded on 2026-12-02 for changes of the service, not of the wire: "a forbidden mutation" (the scope's message
 * and `details.required_scope`, contract 8) and "the type names of the schema" (the key management types).
 */
import http from 'node:http';
import { KEYS, startTestService, type TestService } from '../helpers/harness';
import { ASSET_FIELDS, UPLOAD } from '../helpers/graphql';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

interface Req {
  method?: string;
  /** Query string parameters, in order (repeats allowed). */
  search?: Array<[string, string]>;
  headers?: Record<string, string>;
  body?: string | Buffer | FormData;
  /** Leave out the key header. */
  noKey?: boolean;
}

const ids = new Map<string, string>();
function normalize(text: string): string {
  return text
    .replaceAll(svc.url, '<origin>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => {
      if (!ids.has(id)) ids.set(id, `<id${ids.size + 1}>`);
      return ids.get(id)!;
    })
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '<time>')
    .replace(/access=[\w.~-]+/g, 'access=<grant>')
    .replace(/"retry_after":\d+/g, '"retry_after":"<seconds>"');
}

/** Headers that vary per run or are the service's for every route, not GraphQL's. */
const SKIPPED = new Set(['date', 'x-request-id', 'keep-alive', 'connection', 'content-length']);

async function send(
  r: Req,
  to: TestService = svc,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  let body: Buffer | undefined;
  const headers: Record<string, string> = { ...(r.noKey ? {} : { 'x-api-key': KEYS.alice }), ...r.headers };
  if (r.body instanceof FormData) {
    const encoded = new Response(r.body);
    headers['content-type'] = encoded.headers.get('content-type')!;
    body = Buffer.from(await encoded.arrayBuffer());
  } else if (r.body !== undefined) body = Buffer.from(r.body);
  if (body) headers['content-length'] = String(body.length);
  const url = new URL('/graphql', to.url);
  for (const [k, v] of r.search ?? []) url.searchParams.append(k, v);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: r.method ?? 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        // A HEAD's answer declares the length of the body it leaves out.
        if (res.headers['content-length'] !== undefined && r.method !== 'HEAD')
          expect(Number(res.headers['content-length'])).toBe(raw.length);
        const h: Record<string, unknown> = {};
        for (const k of Object.keys(res.headers).sort()) if (!SKIPPED.has(k)) h[k] = res.headers[k];
        // Seconds until the rate limit's window ends.
        for (const k of ['retry-after', 'ratelimit-reset']) if (k in h) h[k] = '<seconds>';
        if (typeof h.ratelimit === 'string') h.ratelimit = h.ratelimit.replace(/t=\d+/, 't=<seconds>');
        resolve({ status: res.statusCode!, headers: h, body: normalize(raw.toString('utf8')) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const JSON_TYPE = { 'content-type': 'application/json' };
const post = (payload: unknown, headers: Record<string, string> = {}): Req => ({
  body: JSON.stringify(payload),
  headers: { ...JSON_TYPE, ...headers },
});
const get = (params: Record<string, string>, headers: Record<string, string> = {}): Req => ({
  method: 'GET',
  search: Object.entries(params),
  headers: { 'apollo-require-preflight': 'true', ...headers },
});
const PREFLIGHT = { 'apollo-require-preflight': 'true' };

const state = { id: '' };
const TWO_VARS = 'query Q($a: Int!, $b: Int!) { x: assets(limit: $a) { total } y: assets(limit: $b) { total } }';
const ONE = `query One($id: ID!) { asset(id: $id) { ${ASSET_FIELDS} hash thumbnailUrl preview { id } } }`;
const LIST = `query List($limit: Int! = 5) { assets(limit: $limit) { items { ${ASSET_FIELDS} } total hasMore } }`;

function upload(file: string | undefined, headers: Record<string, string> = PREFLIGHT, map?: string): Req {
  const form = new FormData();
  form.append('operations', JSON.stringify({ query: UPLOAD, variables: { input: { tags: ['wire'] }, file: null } }));
  form.append('map', map ?? JSON.stringify(file === undefined ? {} : { '0': ['variables.file'] }));
  if (file !== undefined) form.append('0', new Blob([Buffer.from(file)]), 'wire.txt');
  return { body: form, headers };
}

const QUERY_AND_MUTATION = 'query A { __typename } mutation B { deleteAsset(id: "x") }';
const PROTO_BODY = `{"query":${JSON.stringify(LIST)},"variables":{"__proto__":{"limit":1},"limit":2}}`;

function multipart(operations: unknown): Req {
  const form = new FormData();
  form.append('operations', JSON.stringify(operations));
  form.append('map', '{}');
  return { body: form, headers: PREFLIGHT };
}

const CASES: Array<[string, () => Req]> = [
  ['upload', () => upload('the wire test file')],
  ['upload again: the same asset', () => upload('the wire test file')],
  ['upload without a preflight header: CSRF', () => upload('x', {})],
  ['upload with X-Apollo-Operation-Name', () => upload('a second file', { 'x-apollo-operation-name': 'Up' })],
  ['upload without the file', () => upload(undefined)],
  ['upload with a malformed map', () => upload('x', PREFLIGHT, '{not json')],
  ['asset(id)', () => post({ query: ONE, variables: { id: state.id } })],
  ['asset(id) of an unknown id', () => post({ query: ONE, variables: { id: '00000000-0000-4000-8000-000000000000' } })],
  ['asset(id) of a malformed id', () => post({ query: ONE, variables: { id: 'nope' } })],
  ['a list', () => post({ query: LIST })],
  ['the same list again (kept)', () => post({ query: LIST })],
  ['a list with variables null', () => post({ query: LIST, variables: null, operationName: null })],
  ['accept graphql-response+json', () => post({ query: LIST }, { accept: 'application/graphql-response+json' })],
  [
    'accept both, json first',
    () => post({ query: LIST }, { accept: 'application/json, application/graphql-response+json' }),
  ],
  ['accept */*', () => post({ query: '{ __typename }' }, { accept: '*/*' })],
  [
    'accept the callback spec',
    () => post({ query: '{ __typename }' }, { accept: 'application/json; callbackSpec=1.0' }),
  ],
  ['accept text/html: 406', () => post({ query: '{ __typename }' }, { accept: 'text/html' })],
  ['accept text/html, a bad query: 406', () => post({ query: '{ nope }' }, { accept: 'text/html' })],
  ['a parse error', () => post({ query: '{ assets(limit: 1) { total }' })],
  ['a validation error', () => post({ query: '{ assets(limit: 1) { nope } }' })],
  ['two validation errors', () => post({ query: '{ nope assets { nah } }' })],
  [
    'a query over the limits',
    () => post({ query: `{ ${Array.from({ length: 120 }, (_, i) => `a${i}: __typename`).join(' ')} }` }),
  ],
  ['a document over 100 KB', () => post({ query: `{ __typename ${' '.repeat(101 * 1024)} }` })],
  ['a document nested too deep', () => post({ query: `{ a(x: ${'['.repeat(200)}${']'.repeat(200)}) }` })],
  ['a variable of the wrong type', () => post({ query: LIST, variables: { limit: 'ten' } })],
  ['a null for a non-null variable', () => post({ query: LIST, variables: { limit: null } })],
  ['a required variable missing', () => post({ query: ONE, variables: {} })],
  ['two bad variables', () => post({ query: TWO_VARS, variables: { a: 'x', b: true } })],
  ['an unknown operation name', () => post({ query: 'query A { __typename }', operationName: 'B' })],
  ['two operations, no name', () => post({ query: 'query A { __typename } query B { __typename }' })],
  [
    'two operations, one named',
    () => post({ query: 'query A { __typename } query B { tagCounts { name } }', operationName: 'B' }),
  ],
  [
    'introspection',
    () =>
      post({ query: '{ __schema { queryType { name } mutationType { name } } __type(name: "Asset") { name kind } }' }),
  ],
  [
    'a domain error in a mutation',
    () => post({ query: `mutation { deleteAsset(id: "00000000-0000-4000-8000-000000000000") }` }),
  ],
  [
    'a mutation',
    () =>
      post({
        query: `mutation M($id: ID!) { addAssetTags(id: $id, tags: ["w2"]) { tags } }`,
        variables: { id: state.id },
      }),
  ],
  [
    'a forbidden mutation',
    () => post({ query: `mutation { setAssetImmutable(id: "${state.id}", immutable: true) { id } }` }),
  ],
  ['a resolver input error', () => post({ query: '{ assets(limit: 0) { total } }' })],
  ['an argument of a bad literal', () => post({ query: '{ contentExists(hash: "md5:00") }' })],
  ['an empty object', () => post({})],
  ['an empty array', () => post([])],
  ['a batch', () => post([{ query: '{ __typename }' }])],
  ['not JSON', () => ({ body: '{"query": ', headers: JSON_TYPE })],
  ['a JSON string', () => ({ body: '"{ __typename }"', headers: JSON_TYPE })],
  ['a JSON number', () => ({ body: '42', headers: JSON_TYPE })],
  ['query a number', () => post({ query: 42 })],
  ['query a document object', () => post({ query: { kind: 'Document', definitions: [] } })],
  ['query an empty string', () => post({ query: '' })],
  ['query null', () => post({ query: null, variables: {} })],
  ['no query, variables only', () => post({ variables: { a: 1 } })],
  ['variables a string', () => post({ query: '{ __typename }', variables: '{}' })],
  ['variables an array', () => post({ query: '{ __typename }', variables: [1] })],
  ['variables a number', () => post({ query: '{ __typename }', variables: 1 })],
  ['extensions a string', () => post({ query: '{ __typename }', extensions: '{}' })],
  ['extensions an array', () => post({ query: '{ __typename }', extensions: [] })],
  ['extensions empty', () => post({ query: '{ __typename }', extensions: {} })],
  ['extensions null', () => post({ query: '{ __typename }', extensions: null })],
  ['a persisted query', () => post({ extensions: { persistedQuery: { version: 1, sha256Hash: 'ab' } } })],
  [
    'a persisted query with its text',
    () => post({ query: '{ __typename }', extensions: { persistedQuery: { version: 1, sha256Hash: 'ab' } } }),
  ],
  ['operationName a number', () => post({ query: '{ __typename }', operationName: 3 })],
  [
    'text/plain without a preflight header: CSRF',
    () => ({ body: '{"query":"{ __typename }"}', headers: { 'content-type': 'text/plain' } }),
  ],
  [
    'text/plain with a preflight header',
    () => ({ body: '{"query":"{ __typename }"}', headers: { 'content-type': 'text/plain', ...PREFLIGHT } }),
  ],
  [
    'form-urlencoded: CSRF',
    () => ({ body: 'query=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
  ],
  ['no content type: CSRF', () => ({ body: '{"query":"{ __typename }"}' })],
  ['a malformed content type', () => ({ body: '{"query":"{ __typename }"}', headers: { 'content-type': '"' } })],
  [
    'an empty X-Apollo-Operation-Name: CSRF',
    () => ({ body: '{}', headers: { 'content-type': 'text/plain', 'x-apollo-operation-name': '' } }),
  ],
  ['no key', () => ({ ...post({ query: '{ __typename }' }), noKey: true })],
  ['an unknown key', () => post({ query: '{ __typename }' }, { 'x-api-key': 'not-a-key' })],
  [
    'a bearer key',
    () => ({ ...post({ query: '{ __typename }' }, { authorization: `Bearer ${KEYS.bob}` }), noKey: true }),
  ],
  ['no key, no preflight: CSRF first', () => ({ body: '{}', headers: { 'content-type': 'text/plain' }, noKey: true })],
  ['no key, a bad document', () => ({ ...post({ query: '{' }), noKey: true })],
  ['GET a query', () => get({ query: ONE, variables: JSON.stringify({ id: state.id }) })],
  ['GET a list', () => get({ query: LIST, operationName: 'List' })],
  ['GET without a preflight header: CSRF', () => ({ method: 'GET', search: [['query', '{ __typename }']] })],
  ['GET a mutation: 405', () => get({ query: 'mutation { deleteAsset(id: "x") }' })],
  ['GET variables not JSON', () => get({ query: LIST, variables: '{' })],
  ['GET variables not an object', () => get({ query: LIST, variables: '[1]' })],
  ['GET extensions not an object', () => get({ query: LIST, extensions: '3' })],
  [
    'GET a persisted query',
    () => get({ extensions: JSON.stringify({ persistedQuery: { version: 1, sha256Hash: 'x' } }) }),
  ],
  [
    'GET query twice',
    () => ({
      ...get({}),
      search: [
        ['query', '{ __typename }'],
        ['query', '{ __typename }'],
      ],
    }),
  ],
  ['GET no query', () => get({})],
  ['GET with a text/plain content type', () => get({ query: '{ __typename }' }, { 'content-type': 'text/plain' })],
  ['GET with a JSON content type', () => get({ query: '{ __typename }' }, JSON_TYPE)],
  [
    'GET accept graphql-response+json',
    () => get({ query: '{ __typename }' }, { accept: 'application/graphql-response+json' }),
  ],
  ['GET accept text/plain: 406', () => get({ query: '{ __typename }' }, { accept: 'text/plain' })],
  ['GET a parse error', () => get({ query: '{' })],
  ['PUT: 405', () => ({ ...post({ query: '{ __typename }' }), method: 'PUT' })],
  ['DELETE without a content type: CSRF', () => ({ method: 'DELETE' })],
  ['PATCH with a preflight header: 405', () => ({ method: 'PATCH', headers: PREFLIGHT })],
  ['HEAD with a preflight header', () => ({ method: 'HEAD', headers: PREFLIGHT })],
  ['GET with If-None-Match: *', () => get({ query: '{ __typename }' }, { 'if-none-match': '*' })],
  ['GET the list again (kept)', () => get({ query: LIST, operationName: 'List' })],
  ['an empty Accept header', () => post({ query: '{ __typename }' }, { accept: '' })],
  ['GET the query of a document with a mutation', () => get({ query: QUERY_AND_MUTATION, operationName: 'A' })],
  ['GET the mutation of a document with a query: 405', () => get({ query: QUERY_AND_MUTATION, operationName: 'B' })],
  ['variables with __proto__', () => ({ body: PROTO_BODY, headers: JSON_TYPE })],
  ['a fragment', () => post({ query: '{ ...F } fragment F on Query { __typename }' })],
  ['only a fragment', () => post({ query: 'fragment F on Query { __typename }' })],
  ['a subscription', () => post({ query: 'subscription { x }' })],
  ['the type names of the schema', () => post({ query: '{ __schema { types { name } } }' })],
  ['a POST with its query in the URL', () => ({ ...post({ variables: {} }), search: [['query', '{ __typename }']] })],
  ['a multipart batch', () => multipart([{ query: '{ __typename }' }])],
  [
    'a multipart mutation without a file',
    () => multipart({ query: `mutation { addAssetTags(id: "${state.id}", tags: ["m"]) { tags } }` }),
  ],
];

test.each(CASES)('%s', async (_name, request) => {
  const answer = await send(request());
  if (_name === 'upload') state.id = [...ids.keys()][0]!;
  expect(answer).toMatchSnapshot();
});

test('over the rate limit: 429 with its headers, from the context', async () => {
  const limited = await startTestService({ RATE_LIMIT_PER_MINUTE: '2' });
  try {
    const answers = [];
    for (let i = 0; i < 3; i++)
      answers.push(await send(post({ query: '{ __typename }' }, { 'x-api-key': KEYS.bob }), limited));
    expect(answers).toMatchSnapshot();
  } finally {
    await limited.stop();
  }
});
