import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { getBlocks } from '../../src/cli/assets/block-get';
import { ApiClient } from '../../src/cli/assets/client';

/**
 * The pull's GET reader (socket read into reused buffers) against a plain node:http server: sizes, fallbacks, breaks.
 */
const MiB = 1024 * 1024;
const data = crypto.randomBytes(10 * MiB + 12345);

let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    if (url.pathname === '/sized') {
      res.writeHead(200, { 'content-length': data.length, 'x-seen-key': req.headers['x-api-key'] ?? '' });
      return void res.end(data);
    }
    if (url.pathname === '/chunked') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.write(data.subarray(0, 3 * MiB));
      return void setTimeout(() => res.end(data.subarray(3 * MiB)), 20);
    }
    if (url.pathname === '/slow-head') {
      // The status line and headers arrive in two pieces, the first body bytes with the second.
      const head = `HTTP/1.1 200 OK\r\nContent-Length: ${data.length}\r\nConnection: close\r\n\r\n`;
      res.socket!.write(head.slice(0, 10));
      return void setTimeout(() => {
        res.socket!.write(Buffer.concat([Buffer.from(head.slice(10)), data]));
        res.socket!.end();
      }, 20);
    }
    if (url.pathname === '/broken') {
      res.writeHead(200, { 'content-length': data.length });
      res.write(data.subarray(0, 6 * MiB), () => setTimeout(() => res.socket!.destroy(), 50));
      return;
    }
    if (url.pathname === '/empty') return void res.writeHead(204).end();
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":"NOT_FOUND","message":"no"}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function collect(path: string): Promise<{ status: number; bytes: Buffer; blocks: number[]; error?: Error }> {
  const body = await getBlocks(new URL(base + path), { 'x-api-key': 'k' });
  const parts: Buffer[] = [];
  const blocks: number[] = [];
  let error: Error | undefined;
  await body
    .pipeTo(async (b) => {
      blocks.push(b.length);
      parts.push(Buffer.from(b)); // the block's memory is reused after this
      await new Promise((r) => setImmediate(r));
    })
    .catch((err: Error) => (error = err));
  return { status: body.status, bytes: Buffer.concat(parts), blocks, error };
}

test('a sized body arrives whole, in blocks of at most 4 MiB, with the request headers sent', async () => {
  const body = await getBlocks(new URL(`${base}/sized`), { 'x-api-key': 'secret' });
  expect(body.headers['x-seen-key']).toBe('secret');
  body.destroy();
  const r = await collect('/sized');
  expect(r.error).toBeUndefined();
  expect(r.status).toBe(200);
  expect(r.bytes.equals(data)).toBe(true);
  expect(Math.max(...r.blocks)).toBeLessThanOrEqual(4 * MiB);
});

test('a head split across reads is parsed, and the body bytes after it kept', async () => {
  const r = await collect('/slow-head');
  expect(r.error).toBeUndefined();
  expect(r.bytes.equals(data)).toBe(true);
});

test('a chunked body (no Content-Length) is read through node:http, the same bytes', async () => {
  const r = await collect('/chunked');
  expect(r.error).toBeUndefined();
  expect(r.bytes.equals(data)).toBe(true);
});

test('a broken connection rejects after handing on every byte that arrived before the break', async () => {
  const r = await collect('/broken');
  expect(r.error).toBeDefined();
  expect(r.bytes.length).toBe(6 * MiB);
  expect(r.bytes.equals(data.subarray(0, 6 * MiB))).toBe(true);
});

test('an empty answer and an error answer', async () => {
  expect(await collect('/empty')).toMatchObject({ status: 204, blocks: [] });
  const body = await getBlocks(new URL(`${base}/missing`), {});
  expect(body.status).toBe(404);
  expect(JSON.parse(await body.text())).toEqual({ code: 'NOT_FOUND', message: 'no' });
});

test("the client follows a redirect to another origin (a presigned S3 URL) without the key, and keeps it on the service's own", async () => {
  // The "service": its content route redirects, once to itself and then to the other server.
  const seen: string[] = [];
  const service = http.createServer((req, res) => {
    seen.push(`${req.url} key=${req.headers['x-api-key'] ?? ''}`);
    if (req.url === '/api/assets/a/content')
      return void res.writeHead(307, { location: '/api/assets/a/content2', 'content-length': 0 }).end();
    res.writeHead(302, { location: `${base}/sized`, 'content-length': 0 }).end();
  });
  await new Promise<void>((r) => service.listen(0, '127.0.0.1', () => r()));
  try {
    const client = new ApiClient({
      url: `http://127.0.0.1:${(service.address() as AddressInfo).port}`,
      apiKey: 'secret-key',
    });
    const body = await client.getBlocks('/api/assets/a/content', { range: 'bytes=0-' });
    expect(body.status).toBe(200);
    expect(body.headers['x-seen-key']).toBe('');
    const parts: Buffer[] = [];
    await body.pipeTo(async (b: Buffer) => void parts.push(Buffer.from(b)));
    expect(Buffer.concat(parts).equals(data)).toBe(true);
    expect(seen).toEqual(['/api/assets/a/content key=secret-key', '/api/assets/a/content2 key=secret-key']);
  } finally {
    await new Promise<void>((r) => service.close(() => r()));
  }
});
