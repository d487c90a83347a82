import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { bodyChunks, HttpFetcher } from '../../src/infra/http-fetch';

/**
 * A download's body read by a consumer slower than the network (the ingest worker's backpressure, a busy main
 * thread): the chunks must come as the socket read them, each in an ArrayBuffer of its own that the ingest pool can
 * move to its worker. Iterating the stream itself joins everything buffered meanwhile into one new buffer and leaves
 * the reads as garbage (external memory that only full mark-compacts free).
 */
const KiB = 1024;
const MiB = 1024 * KiB;

let server: http.Server;
let base: string;
const data = crypto.randomBytes(8 * MiB);

beforeAll(async () => {
  server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-length': data.length });
    if (req.url === '/broken') {
      res.write(data.subarray(0, 2 * MiB), () => setTimeout(() => res.destroy(), 50));
      return;
    }
    let pos = 0;
    const pump = () => {
      while (pos < data.length) {
        const piece = data.subarray(pos, pos + 64 * KiB);
        pos += piece.length;
        if (!res.write(piece)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await fetcher.close();
  await new Promise((r) => server.close(r));
});

const fetcher = new HttpFetcher({ blockPrivateNetworks: false, trustedOrigins: [] });
const pause = () => new Promise((r) => setTimeout(r, 2));

test('a slow reader gets the socket reads one by one, never joined into new buffers', async () => {
  const res = await fetcher.open(new URL(`${base}/f`));
  expect(res.status).toBe(200);
  const got: Buffer[] = [];
  let largest = 0;
  let n = 0;
  for await (const chunk of bodyChunks(res.body)) {
    largest = Math.max(largest, chunk.buffer.byteLength);
    got.push(Buffer.from(chunk));
    // Slower than loopback: the stream buffers up to its high-water mark (1 MiB) meanwhile.
    if (++n % 4 === 0) await pause();
  }
  expect(Buffer.concat(got).equals(data)).toBe(true);
  // A socket read is at most 64 KiB; a join of what a paused parser left in the socket at most a few of them. The
  // stream's own join would be about a megabyte.
  expect(largest).toBeLessThanOrEqual(256 * KiB);
});

test('a body that breaks off fails the iteration after every byte received', async () => {
  const res = await fetcher.open(new URL(`${base}/broken`));
  let received = 0;
  await expect(
    (async () => {
      for await (const chunk of bodyChunks(res.body)) received += chunk.length;
    })(),
  ).rejects.toThrow();
  expect(received).toBe(2 * MiB);
});

test('a reader that stops early leaves the body to be dropped', async () => {
  const res = await fetcher.open(new URL(`${base}/f`));
  let received = 0;
  for await (const chunk of bodyChunks(res.body)) {
    received += chunk.length;
    if (received >= MiB) break;
  }
  res.body.destroy();
  // No unhandled 'error' from the destroyed stream, and the fetcher still works.
  const again = await fetcher.open(new URL(`${base}/f`));
  let total = 0;
  for await (const chunk of bodyChunks(again.body)) total += chunk.length;
  expect(total).toBe(data.length);
});
