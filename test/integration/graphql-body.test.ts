/**
 * POST /graphql reads a plain JSON body (Content-Length, `application/json`) itself and leaves every other body to
 * body-parser (src/http/graphql/json-body.ts). The two must answer alike: each body here is sent both ways, with a
 * Content-Length and chunked, and the answers compared.
 */
import http from 'node:http';
import { KEYS, startTestService, type TestService } from '../helpers/harness';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

function post(body: Buffer, opts: { chunked: boolean; type?: string }): Promise<{ status: number; body: unknown }> {
  const url = new URL('/graphql', svc.url);
  const headers: Record<string, string> = { 'x-api-key': KEYS.alice, 'content-type': opts.type ?? 'application/json' };
  if (!opts.chunked) headers['content-length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }),
      );
    });
    req.on('error', reject);
    if (opts.chunked) {
      // Two writes: a Transfer-Encoding: chunked body.
      req.write(body.subarray(0, 1));
      req.end(body.subarray(1));
    } else req.end(body);
  });
}

const QUERY = '{ assets(limit: 1) { total } }';
const BODIES: Array<[string, Buffer]> = [
  ['an operation', Buffer.from(JSON.stringify({ query: QUERY }))],
  [
    'an operation after a UTF-8 BOM',
    Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ query: QUERY }))]),
  ],
  ['an operation after whitespace', Buffer.from(`\n\t ${JSON.stringify({ query: QUERY })}`)],
  ['not JSON', Buffer.from('{"query": ')],
  ['a JSON string', Buffer.from('"{ assets { total } }"')],
  ['a JSON number', Buffer.from('42')],
  ['only whitespace', Buffer.from('   ')],
  ['an empty object', Buffer.from('{}')],
  ['an array (a batch)', Buffer.from(JSON.stringify([{ query: QUERY }]))],
  [
    'invalid UTF-8 inside a string',
    Buffer.concat([Buffer.from('{"query":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
  ],
];

test.each(BODIES)('%s: the same answer with a Content-Length as chunked', async (_name, body) => {
  const direct = await post(body, { chunked: false });
  const parsed = await post(body, { chunked: true });
  expect(direct).toEqual(parsed);
});

test('the charset parameter and its case: the same answer as body-parser', async () => {
  const body = Buffer.from(JSON.stringify({ query: QUERY }));
  for (const type of [
    'application/json; charset=utf-8',
    'Application/JSON; Charset="UTF-8"',
    'application/json; charset=latin1',
  ]) {
    expect(await post(body, { chunked: false, type })).toEqual(await post(body, { chunked: true, type }));
  }
  expect((await post(body, { chunked: false, type: 'application/json; charset=utf-8' })).status).toBe(200);
});

test('not JSON: 400 INVALID_JSON in the GraphQL error shape', async () => {
  const r = await post(Buffer.from('{"query": '), { chunked: false });
  expect(r.status).toBe(400);
  expect((r.body as { errors: Array<{ extensions: { code: string } }> }).errors[0]!.extensions.code).toBe(
    'INVALID_JSON',
  );
});
