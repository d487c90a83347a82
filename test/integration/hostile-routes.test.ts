/**
 * The cases hostile-routes.property.test.ts found, each as a plain example: raw HTTP on real PostgreSQL.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import { json, KEYS, startTestService, uploadForm, type TestService } from '../helpers/harness';
import { rawRequest } from '../helpers/raw-http';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

const b64 = (s: string) => Buffer.from(s).toString('base64');

async function createUpload(metadata: string): Promise<{ status: number; id?: string; body: string }> {
  const res = await rawRequest(svc.url, 'POST', '/api/uploads', [
    ['X-API-Key', KEYS.alice],
    ['Tus-Resumable', '1.0.0'],
    ['Upload-Length', '10'],
    ['Upload-Metadata', metadata],
  ]);
  const location = res.headers.location?.[0];
  return { status: res.status, id: location && new URL(location).pathname.split('/').pop(), body: res.body.toString() };
}

test('a POST standing for a HEAD (X-HTTP-Method-Override) that fails gets its JSON error body, as long as announced', async () => {
  const { id } = await createUpload(`filename ${b64('a.bin')}`);
  for (const headers of [
    [['X-HTTP-Method-Override', 'HEAD']], // no Tus-Resumable: 412
    [
      ['X-HTTP-Method-Override', 'HEAD'],
      ['Tus-Resumable', '1.0.0'],
      ['X-API-Key', KEYS.bob],
    ], // another owner's: 404
  ] as [string, string][][]) {
    const res = await rawRequest(
      svc.url,
      'POST',
      `/api/uploads/${id}`,
      [['X-API-Key', KEYS.alice], ...headers],
      Buffer.from('abc'),
    );
    expect(res.status).toBeGreaterThanOrEqual(400);
    // As announced: a client on a kept-alive connection would otherwise read the next answer as this one's body.
    expect(res.body.length).toBe(Number(res.headers['content-length']?.[0]));
    expect(JSON.parse(res.body.toString())).toEqual({ code: expect.any(String), message: expect.any(String) });
  }
  // The override still answers as HEAD when it succeeds.
  const ok = await rawRequest(svc.url, 'POST', `/api/uploads/${id}`, [
    ['X-API-Key', KEYS.alice],
    ['Tus-Resumable', '1.0.0'],
    ['X-HTTP-Method-Override', 'HEAD'],
  ]);
  expect(ok.status).toBe(200);
  expect(ok.headers['upload-offset']).toEqual(['0']);
  expect(ok.body.length).toBe(0);
});

test('Upload-Metadata keys that name a property of every object (__proto__, constructor, ...) are ignored, not a 400; an empty header is no metadata', async () => {
  const created = await createUpload(
    `__proto__ ${b64('{"x":1}')},constructor,filename ${b64('a.bin')},hasOwnProperty ${b64('x')},toString ${b64('y')},filetype ${b64('text/plain')}`,
  );
  expect(created).toMatchObject({ status: 201 });
  const head = await rawRequest(svc.url, 'HEAD', `/api/uploads/${created.id}`, [
    ['X-API-Key', KEYS.alice],
    ['Tus-Resumable', '1.0.0'],
  ]);
  expect(head.status).toBe(200);
  // Neither stored nor echoed; the other keys are.
  expect(head.headers['upload-metadata']).toEqual([`filename ${b64('a.bin')},filetype ${b64('text/plain')}`]);
  // An empty header is no metadata (as tusd reads it).
  const empty = await createUpload('');
  expect(empty.status).toBe(201);
  // Only those keys: the upload has no other metadata.
  const only = await createUpload(`__proto__ ${b64('x')}`);
  expect(only.status).toBe(201);
  const bare = await rawRequest(svc.url, 'HEAD', `/api/uploads/${only.id}`, [
    ['X-API-Key', KEYS.alice],
    ['Tus-Resumable', '1.0.0'],
  ]);
  expect(bare.headers['upload-metadata']).toBeUndefined();
  // Still tus metadata: a broken value, a repeated key or a key with a space is refused, whatever the key.
  for (const bad of [
    `__proto__ !!!!`,
    `constructor ${b64('a')},constructor ${b64('b')}`,
    `filename ${b64('a')},filename`,
    `__proto__ YQ== x`,
  ]) {
    const refused = await createUpload(bad);
    expect({ bad, status: refused.status, body: JSON.parse(refused.body) }).toEqual({
      bad,
      status: 400,
      body: { code: 'INVALID_BODY', message: 'Upload-Metadata is not valid tus metadata' },
    });
  }
  // The asset made from such an upload is an ordinary one.
  const res = await rawRequest(
    svc.url,
    'PATCH',
    `/api/uploads/${created.id}`,
    [
      ['X-API-Key', KEYS.alice],
      ['Tus-Resumable', '1.0.0'],
      ['Upload-Offset', '0'],
      ['Content-Type', 'application/offset+octet-stream'],
    ],
    Buffer.from('0123456789'),
  );
  expect(res.status).toBe(204);
  const asset = await json(await svc.fetch(`/api/assets/${res.headers['asset-id']![0]}`));
  expect(asset).toMatchObject({ name: 'a.bin', size: 10 });
});

test('bytes that are not HTTP after a request (a body longer than its Content-Length) are refused after that request is answered, not instead', async () => {
  // The creation is valid and sent whole; the byte after it is not a request. The client reads the creation's answer
  // (its Location: the upload is the client's to continue or delete), then the connection closes.
  const res = await rawRequest(
    svc.url,
    'POST',
    '/api/uploads',
    [
      ['X-API-Key', KEYS.alice],
      ['Tus-Resumable', '1.0.0'],
      ['Upload-Length', '27'],
      ['Content-Length', '0'],
    ],
    Buffer.from('X'),
  );
  expect(res.status).toBe(201);
  const head = await rawRequest(svc.url, 'HEAD', new URL(res.headers.location![0]!).pathname, [
    ['X-API-Key', KEYS.alice],
    ['Tus-Resumable', '1.0.0'],
  ]);
  expect(head.headers['upload-offset']).toEqual(['0']);
  // On a kept-alive connection, the refusal follows the answer.
  const both = await rawRequest(
    svc.url,
    'GET',
    '/api/assets?limit=1',
    [
      ['X-API-Key', KEYS.alice],
      ['Content-Length', '0'],
    ],
    Buffer.from('\u0001 / HTTP/1.1\r\n\r\n'),
    { keepAlive: true },
  );
  expect(both.status).toBe(200);
  expect(both.rest.toString()).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*"code":"INVALID_REQUEST"/);
});

test('a chunked body that turns out not to be HTTP is refused at once (400), not after the body times out', async () => {
  for (const [method, path, headers] of [
    [
      'PATCH',
      'upload',
      [
        ['Tus-Resumable', '1.0.0'],
        ['Upload-Offset', '0'],
        ['Content-Type', 'application/offset+octet-stream'],
      ],
    ],
    ['POST', '/api/assets', [['Content-Type', 'multipart/form-data; boundary=x']]],
  ] as [string, string, [string, string][]][]) {
    const target =
      path === 'upload'
        ? new URL(
            (
              await rawRequest(svc.url, 'POST', '/api/uploads', [
                ['X-API-Key', KEYS.alice],
                ['Tus-Resumable', '1.0.0'],
                ['Upload-Length', '100'],
              ])
            ).headers.location![0]!,
          ).pathname
        : path;
    const res = await rawRequest(
      svc.url,
      method,
      target,
      [['X-API-Key', KEYS.alice], ...headers, ['Transfer-Encoding', 'chunked']],
      Buffer.from('4\r\nabcd\r\nzz\r\n'),
      { timeoutMs: 10_000 },
    );
    expect({ method, status: res.status, code: JSON.parse(res.body.toString()).code }).toEqual({
      method,
      status: 400,
      code: expect.any(String),
    });
  }
});

test('a tus creation pipelined behind an answer still being sent is kept: its 201 names an upload that exists', async () => {
  // A GET of 32 MiB the client does not read yet holds the connection's first answer; the creation sent right after
  // it on the same connection is answered once that one is done, and its answer has no socket until then.
  const up = await svc.fetch('/api/assets', {
    method: 'POST',
    body: uploadForm(crypto.randomBytes(32 * 1024 * 1024), {}, 'big.bin'),
  });
  expect(up.status).toBe(201);
  const { id } = (await up.json()) as { id: string };
  const u = new URL(svc.url);
  const socket = net.connect(Number(u.port), u.hostname);
  socket.on('error', () => undefined);
  await new Promise((r) => socket.once('connect', r));
  socket.pause();
  socket.write(
    `GET /api/assets/${id}/content HTTP/1.1\r\nHost: ${u.host}\r\nX-API-Key: ${KEYS.alice}\r\n\r\n` +
      `POST /api/uploads HTTP/1.1\r\nHost: ${u.host}\r\nX-API-Key: ${KEYS.alice}\r\nTus-Resumable: 1.0.0\r\nUpload-Length: 10\r\n` +
      `Content-Length: 0\r\nConnection: close\r\n\r\n`,
  );
  // The creation's handler runs meanwhile (its row is written); then everything is read.
  await new Promise((r) => setTimeout(r, 1_500));
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.resume();
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const all = Buffer.concat(chunks);
  const second = all.indexOf('HTTP/1.1 ', 32 * 1024 * 1024);
  expect(second).toBeGreaterThan(0);
  const head = all.subarray(second, all.indexOf('\r\n\r\n', second)).toString('latin1');
  expect(head.split('\r\n')[0]).toBe('HTTP/1.1 201 Created');
  const location = /\r\nlocation: (\S+)/i.exec(head)![1]!;
  const res = await svc.fetch(new URL(location).pathname, { method: 'HEAD', headers: { 'tus-resumable': '1.0.0' } });
  expect([res.status, res.headers.get('upload-offset')]).toEqual([200, '0']);
});
