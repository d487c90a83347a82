import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { OwnedBody } from '../../src/infra/blob-store/owned-body';
import { ReusedReadAgent } from '../../src/infra/blob-store/s3-agent';

/**
 * How the S3 store reads bodies without leaving a 64 KiB ArrayBuffer per read behind: its agent's sockets read into
 * one buffer each (ReusedReadAgent), and content goes out through OwnedBody.sendTo, which frees each chunk once the
 * socket took it. Real HTTP on loopback: bodies arrive whole and in order, through keep-alive reuse, chunked encoding
 * and a slow reader; a client that goes away mid-body fails the send.
 */
const servers: http.Server[] = [];
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function listen(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The ArrayBuffers the sockets of the requests read into. */
const readBuffers = new Set<ArrayBufferLike>();

function get(url: string, agent: http.Agent, slow = false): Promise<{ body: Buffer; socket: unknown }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        res.socket.on('data', (d: Buffer) => readBuffers.add(d.buffer));
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => {
          parts.push(Buffer.from(d));
          if (slow) {
            res.pause();
            setTimeout(() => res.resume(), 1);
          }
        });
        res.on('end', () => resolve({ body: Buffer.concat(parts), socket: res.socket }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

test('ReusedReadAgent: bodies whole over one kept-alive socket, chunked or not, to a slow reader', async () => {
  const body = crypto.randomBytes(3 * 1024 * 1024 + 17);
  const url = await listen((req, res) => {
    if (req.url === '/chunked') {
      // No Content-Length: chunked, in pieces of odd sizes.
      for (let at = 0; at < body.length; at += 100_003) res.write(body.subarray(at, at + 100_003));
      res.end();
    } else {
      res.setHeader('content-length', body.length);
      res.end(body);
    }
  });
  readBuffers.clear();
  const agent = new ReusedReadAgent({ keepAlive: true, maxSockets: 1 });
  try {
    const a = await get(`${url}/plain`, agent);
    const b = await get(`${url}/chunked`, agent, true);
    const c = await get(`${url}/plain`, agent, true);
    for (const r of [a, b, c]) expect(r.body.equals(body)).toBe(true);
    expect(b.socket).toBe(a.socket);
    expect(c.socket).toBe(a.socket);
    expect(readBuffers.size).toBe(1); // Node's default: a new one per read, hundreds here
  } finally {
    agent.destroy();
  }
});

/** Chunks of their own (as Node's HTTP parser makes a body's), remembered to see which were freed. */
function ownedChunks(data: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += size) {
    const c = Buffer.allocUnsafeSlow(Math.min(size, data.length - at));
    data.copy(c, 0, at, at + c.length);
    out.push(c);
  }
  return out;
}

test('OwnedBody.sendTo: the response carries every byte, and each chunk is freed once written', async () => {
  const data = crypto.randomBytes(2 * 1024 * 1024);
  const chunks = ownedChunks(data, 64 * 1024);
  let counted = 0;
  let sent: Promise<void> | undefined;
  const url = await listen((_req, res) => {
    res.setHeader('content-length', data.length);
    sent = new OwnedBody(Readable.from(chunks)).sendTo(res, (n) => (counted += n));
  });
  const agent = new http.Agent();
  const { body } = await get(url, agent, true);
  await sent;
  expect(body.equals(data)).toBe(true);
  expect(counted).toBe(data.length);
  expect(chunks.every((c) => c.length === 0)).toBe(true);
  agent.destroy();
});

test('OwnedBody as a Readable passes its chunks on unchanged', async () => {
  const data = crypto.randomBytes(300 * 1024);
  const read: Buffer[] = [];
  for await (const c of new OwnedBody(Readable.from(ownedChunks(data, 64 * 1024)))) read.push(c as Buffer);
  expect(Buffer.concat(read).equals(data)).toBe(true);
});

test('OwnedBody.sendTo rejects when the client goes away mid-body, and destroys its source', async () => {
  let destroyed = false;
  const source = new Readable({
    read() {
      this.push(Buffer.alloc(64 * 1024));
    },
    destroy(err, cb) {
      destroyed = true;
      cb(err);
    },
  });
  let sent: Promise<void> | undefined;
  const url = await listen((_req, res) => {
    res.setHeader('content-length', 1 << 30);
    sent = new OwnedBody(source).sendTo(res, () => undefined);
  });
  await new Promise<void>((resolve) => {
    const req = http.get(url, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', () => undefined);
  });
  await expect(sent).rejects.toThrow('the response was closed');
  expect(destroyed).toBe(true);
});
