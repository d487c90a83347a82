import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { blake3Of, json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { TUS } from '../helpers/tus';

/**
 * BODY_MIN_BYTES_PER_SECOND: a body that trickles (one byte a second: never idle, so BODY_IDLE_TIMEOUT_MS never
 * fires) is cut with 408 REQUEST_TIMEOUT once a window has passed below the minimum rate, on every route that takes a
 * body: a multipart upload, a tus PATCH and a GraphQL upload. What it wrote goes (temporary blobs), or for tus stays
 * as exactly the bytes HEAD reports, with the upload free to continue at once (its lease released).
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ BODY_MIN_BYTES_PER_SECOND: '1000', BODY_MIN_RATE_WINDOW_MS: '2000' });
});
afterAll(async () => {
  await svc?.stop();
});

interface Answer {
  status: number;
  connection: string | undefined;
  body: string;
}

/**
 * A request on a raw socket: `head` and `start` at once, then one byte of `rest` a second until the server closes the
 * connection (bounded: 60 bytes). Resolves with what the server answered.
 */
function trickle(
  method: string,
  route: string,
  headers: Record<string, string>,
  start: Buffer,
  rest: Buffer,
): Promise<Answer> {
  const u = new URL(route, svc.url);
  const socket = net.connect(Number(u.port), u.hostname);
  socket.on('error', () => undefined);
  let raw = '';
  socket.on('data', (d: Buffer) => (raw += d.toString('latin1')));
  const lines = [
    `${method} ${u.pathname} HTTP/1.1`,
    `Host: ${u.host}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.write(`${lines.join('\r\n')}\r\nContent-Length: ${start.length + rest.length}\r\n\r\n`);
  socket.write(start);
  let i = 0;
  const timer = setInterval(() => {
    if (i < Math.min(rest.length, 60)) socket.write(rest.subarray(i, ++i));
    else socket.destroy();
  }, 1000);
  return new Promise((resolve) => {
    socket.once('close', () => {
      clearInterval(timer);
      const [headText = '', body = ''] = raw.split('\r\n\r\n', 2);
      const [statusLine = '', ...headerLines] = headText.split('\r\n');
      const connection = headerLines
        .find((l) => /^connection:/i.test(l))
        ?.split(':')[1]
        ?.trim();
      resolve({ status: Number(statusLine.split(' ')[1] ?? 0), connection, body });
    });
  });
}

const temps = () => fs.readdirSync(path.join(svc.dataDir, 'blobs', '.tmp'));

function form(
  boundary: string,
  parts: { name: string; fileName?: string; value: string | Buffer }[],
): { start: Buffer; rest: Buffer } {
  const out: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.fileName ? `; filename="${p.fileName}"` : ''}`;
    out.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n\r\n`),
      Buffer.from(p.value),
      Buffer.from('\r\n'),
    );
  }
  out.push(Buffer.from(`--${boundary}--\r\n`));
  const all = Buffer.concat(out);
  // Everything up to the file's first bytes at once; its remaining bytes trickle.
  const cut = all.indexOf(parts.at(-1)!.value) + 100;
  return { start: all.subarray(0, cut), rest: all.subarray(cut) };
}

test('a multipart upload that trickles is cut with 408 and leaves no temporary blob and no asset', async () => {
  const bytes = crypto.randomBytes(4000);
  const boundary = 'trickleBoundary';
  const { start, rest } = form(boundary, [{ name: 'file', fileName: 'slow.bin', value: bytes }]);
  const answer = await trickle(
    'POST',
    '/api/assets',
    { 'x-api-key': KEYS.alice, 'content-type': `multipart/form-data; boundary=${boundary}` },
    start,
    rest,
  );
  expect(answer.status).toBe(408);
  expect(answer.connection).toBe('close');
  expect(JSON.parse(answer.body).code).toBe('REQUEST_TIMEOUT');
  await waitFor(async () => (temps().length === 0 ? true : undefined), { what: 'the temporary blob to go' });
  expect((await svc.fetch(`/api/assets/hash/${blake3Of(bytes)}`, { method: 'HEAD' })).status).toBe(404);
});

test('a GraphQL upload that trickles is cut with 408 and leaves no temporary blob', async () => {
  const bytes = crypto.randomBytes(4000);
  const boundary = 'gqlTrickle';
  const query = 'mutation Up($file: Upload!) { uploadAsset(file: $file) { asset { id } } }';
  const { start, rest } = form(boundary, [
    { name: 'operations', value: JSON.stringify({ query, variables: { file: null } }) },
    { name: 'map', value: JSON.stringify({ '0': ['variables.file'] }) },
    { name: '0', fileName: 'slow.bin', value: bytes },
  ]);
  const headers = {
    'x-api-key': KEYS.alice,
    'apollo-require-preflight': 'true',
    'content-type': `multipart/form-data; boundary=${boundary}`,
  };
  const answer = await trickle('POST', '/graphql', headers, start, rest);
  expect(answer.status).toBe(408);
  expect(answer.connection).toBe('close');
  await waitFor(async () => (temps().length === 0 ? true : undefined), { what: 'the temporary blob to go' });
  expect((await svc.fetch(`/api/assets/hash/${blake3Of(bytes)}`, { method: 'HEAD' })).status).toBe(404);
});

test('a tus PATCH that trickles is cut with 408; the part holds what HEAD reports and the upload continues at once', async () => {
  const data = crypto.randomBytes(3000);
  const c = await svc.fetch('/api/uploads', {
    method: 'POST',
    headers: { ...TUS, 'Upload-Length': String(data.length) },
  });
  expect(c.status).toBe(201);
  const id = c.headers.get('location')!.split('/').pop()!;
  const headers = {
    ...TUS,
    'x-api-key': KEYS.alice,
    'Upload-Offset': '0',
    'Content-Type': 'application/offset+octet-stream',
  };
  const answer = await trickle('PATCH', `/api/uploads/${id}`, headers, data.subarray(0, 100), data.subarray(100));
  expect(answer.status).toBe(408);
  expect(answer.connection).toBe('close');
  const h = await svc.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: TUS });
  const offset = Number(h.headers.get('upload-offset'));
  expect(offset).toBeLessThan(data.length);
  expect(fs.statSync(path.join(svc.dataDir, 'blobs', '.partial', `upload-${id}`)).size).toBe(offset);
  expect(temps()).toEqual([]);
  const done = await svc.fetch(`/api/uploads/${id}`, {
    method: 'PATCH',
    headers: { ...TUS, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' },
    body: data.subarray(offset),
  });
  expect(done.status).toBe(204);
  expect((await json(await svc.fetch(`/api/assets/${done.headers.get('asset-id')}`))).asset_hash).toBe(blake3Of(data));
});

test('a body sent at an ordinary pace is not cut', async () => {
  const bytes = crypto.randomBytes(64 * 1024);
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
  expect(res.status).toBe(201);
});
