import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { JOB } from '../../src/domain/job-map';
import { blake3Of, json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';

/**
 * Faults in one service process: refused creates leave no blob, a full blob store answers 507 and keeps nothing, a
 * stalled body is cut with 408 and an early answer closes the connection, per-key and failed-authentication rate
 * limits, batched content GC, and an upload still running at the end of the shutdown grace gets 503. Database outages:
 * database-outage.test.ts; crashes: fault-processes.test.ts.
 */
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService(
    { BODY_IDLE_TIMEOUT_MS: '1000', SEND_IDLE_TIMEOUT_MS: '1000' },
    { validateResponses: true },
  );
});
afterAll(async () => {
  await svc?.stop();
});
afterEach(() => jest.restoreAllMocks());

function onDisk(s: TestService = svc): { blobs: string[]; temps: string[] } {
  const root = path.join(s.dataDir, 'blobs');
  const blobs: string[] = [];
  for (const a of fs.readdirSync(root).filter((n) => /^[0-9a-f]{2}$/.test(n)))
    for (const b of fs.readdirSync(path.join(root, a))) blobs.push(...fs.readdirSync(path.join(root, a, b)));
  return { blobs, temps: fs.readdirSync(path.join(root, '.tmp')) };
}
const hasBlob = (bytes: Buffer) => onDisk().blobs.includes(blake3Of(bytes).slice(7));

/**
 * A multipart upload written on a raw socket (as a slow or stalled client would): the head and the first `sent` bytes
 * of `bytes` now, the rest on `finish`. The answer is parsed from whatever the server sends before it closes.
 */
function partialUpload(url: string, bytes: Buffer, sent: number, key: string = KEYS.alice) {
  const boundary = 'faultsBoundary';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const u = new URL(url);
  const socket = net.connect(Number(u.port), u.hostname);
  socket.on('error', () => undefined);
  let raw = '';
  socket.on('data', (d: Buffer) => (raw += d.toString('latin1')));
  const response = new Promise<{ status: number; headers: Record<string, string>; body: string; at: number }>(
    (resolve) => {
      socket.once('close', () => {
        const [headText = '', body = ''] = raw.split('\r\n\r\n', 2);
        const [statusLine = '', ...headerLines] = headText.split('\r\n');
        const headers: Record<string, string> = {};
        for (const l of headerLines)
          headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
        resolve({ status: Number(statusLine.split(' ')[1] ?? 0), headers, body, at: Date.now() });
      });
    },
  );
  socket.write(
    `POST /api/assets HTTP/1.1\r\nHost: ${u.host}\r\nx-api-key: ${key}\r\ncontent-type: multipart/form-data; boundary=${boundary}\r\n` +
      `content-length: ${head.length + bytes.length + tail.length}\r\n\r\n`,
  );
  socket.write(head);
  socket.write(bytes.subarray(0, sent));
  return {
    response,
    write: (b: Buffer) => socket.write(b),
    finish: () => socket.write(Buffer.concat([bytes.subarray(sent), tail])),
    /** Ends the body after the caller wrote all of `bytes` itself with `write`. */
    end: () => socket.write(tail),
    close: () => socket.destroy(),
  };
}

describe('a refused create of new content leaves nothing', () => {
  test('INVALID_PREVIEW_ID', async () => {
    const bytes = crypto.randomBytes(4000);
    const res = await svc.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(bytes, { preview_id: crypto.randomUUID() }),
    });
    expect(res.status).toBe(400);
    expect((await json(res)).code).toBe('INVALID_PREVIEW_ID');
    expect(hasBlob(bytes)).toBe(false);
    expect(onDisk().temps).toEqual([]);
  });

  test('ID_CONFLICT', async () => {
    const id = crypto.randomUUID();
    const theirs = await svc.fetch('/api/assets', {
      method: 'POST',
      key: KEYS.bob,
      body: uploadForm(crypto.randomBytes(100), { id }),
    });
    expect(theirs.status).toBe(201);
    const bytes = crypto.randomBytes(4000);
    const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes, { id }) });
    expect(res.status).toBe(409);
    expect(hasBlob(bytes)).toBe(false);
  });

  test('a commit transaction that fails', async () => {
    const repo = (svc.container.assets as unknown as { assets: { insert: () => Promise<unknown> } }).assets;
    jest.spyOn(repo, 'insert').mockRejectedValueOnce(new Error('injected failure'));
    const bytes = crypto.randomBytes(4000);
    const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
    expect(res.status).toBe(500);
    expect(hasBlob(bytes)).toBe(false);
    expect(onDisk().temps).toEqual([]);
  });

  test('a refused and an accepted upload of the same bytes at once: the accepted one keeps its blob', async () => {
    for (let i = 0; i < 6; i++) {
      const bytes = crypto.randomBytes(20_000);
      const [bad, good] = await Promise.all([
        svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes, { preview_id: crypto.randomUUID() }) }),
        svc.fetch('/api/assets', { method: 'POST', key: KEYS.bob, body: uploadForm(bytes) }),
      ]);
      expect([bad.status, good.status]).toEqual([400, 201]);
      const id = (await json(good)).id;
      const content = await svc.fetch(`/api/assets/${id}/content`, { key: KEYS.bob });
      expect(content.status).toBe(200);
      expect(Buffer.from(await content.arrayBuffer()).equals(bytes)).toBe(true);
      expect(hasBlob(bytes)).toBe(true);
    }
  });
});

test("content whose blob is gone: 500 INTERNAL as JSON, not typed or named as the asset's file", async () => {
  const bytes = crypto.randomBytes(64);
  const a = await json(
    await svc.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(bytes, { name: 'lost.html', mime_type: 'text/html' }),
    }),
  );
  const h = a.asset_hash.slice(7);
  fs.rmSync(path.join(svc.dataDir, 'blobs', h.slice(0, 2), h.slice(2, 4), h));
  const res = await svc.fetch(`/api/assets/${a.id}/content`);
  expect(res.status).toBe(500);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect([res.headers.get('content-disposition'), res.headers.get('etag')]).toEqual([null, null]);
  expect((await json(res)).code).toBe('INTERNAL');
});

describe('a full blob store', () => {
  const enospc = () =>
    Object.assign(new Error('ENOSPC: no space left on device, write'), {
      code: 'ENOSPC',
      errno: -28,
      syscall: 'write',
    });

  test('ENOSPC while the bytes are written: 507 INSUFFICIENT_STORAGE, nothing kept', async () => {
    const store = svc.container.blobStore as unknown as {
      writeTempHashed: (src: AsyncIterable<Buffer>) => Promise<unknown>;
    };
    jest.spyOn(store, 'writeTempHashed').mockImplementationOnce(async (src) => {
      for await (const chunk of src) void chunk;
      throw enospc();
    });
    const bytes = crypto.randomBytes(50_000);
    const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
    expect(res.status).toBe(507);
    expect((await json(res)).code).toBe('INSUFFICIENT_STORAGE');
    expect(hasBlob(bytes)).toBe(false);
    expect(onDisk().temps).toEqual([]);
  });

  test('EDQUOT while the blob is put in place: 507, nothing kept', async () => {
    jest
      .spyOn(svc.container.blobStore, 'commit')
      .mockRejectedValueOnce(Object.assign(new Error('EDQUOT: disk quota exceeded, link'), { code: 'EDQUOT' }));
    const bytes = crypto.randomBytes(50_000);
    const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
    expect(res.status).toBe(507);
    expect(hasBlob(bytes)).toBe(false);
    expect(onDisk().temps).toEqual([]);
  });

  test('/readyz fails its storage check below the free-space floor', async () => {
    expect(await json(await fetch(`${svc.url}/readyz`))).toEqual({
      status: 'ok',
      checks: { database: 'ok', storage: 'ok', queue: 'ok' },
    });
    jest.spyOn(svc.container.blobStore.capabilities.space!, 'freeBytes').mockResolvedValue(1024);
    const res = await fetch(`${svc.url}/readyz`);
    expect(res.status).toBe(503);
    expect(await json(res)).toEqual({
      status: 'unavailable',
      checks: { database: 'ok', storage: 'unavailable', queue: 'ok' },
    });
  });
});

describe('time limits and early answers', () => {
  test('a body that stalls is cut: 408 REQUEST_TIMEOUT with Connection: close, temporary file removed', async () => {
    const up = partialUpload(svc.url, crypto.randomBytes(300_000), 100_000);
    await waitFor(async () => (onDisk().temps.length > 0 ? true : undefined), { what: 'the upload to start' });
    const t = Date.now();
    const res = await up.response;
    expect(res.status).toBe(408);
    expect(res.headers.connection).toBe('close');
    expect(JSON.parse(res.body).code).toBe('REQUEST_TIMEOUT');
    expect(res.at - t).toBeLessThan(5_000);
    await waitFor(async () => (onDisk().temps.length === 0 ? true : undefined), { what: 'the temporary file to go' });
  });

  test('a 401 given before the body was read closes the connection', async () => {
    const up = partialUpload(svc.url, crypto.randomBytes(300_000), 10_000, 'not-a-valid-key-at-all');
    // The server closes the connection after its answer, though the body is not all sent.
    const res = await up.response;
    expect(res.status).toBe(401);
    expect(res.headers.connection).toBe('close');
  });

  test('an answer given while a large body is still arriving reaches a client that reads it late (lingering close)', async () => {
    // The service answers 401 before reading a byte of the body. A client still sending, that reads its socket only
    // later (a busy client), used to lose the answer: the service destroyed the socket as soon as the answer was
    // written, the client's next bytes drew a reset, and a reset discards the unread answer in the client's kernel.
    const u = new URL(svc.url);
    const socket = net.connect(Number(u.port), u.hostname);
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await new Promise((r) => socket.once('connect', r));
    socket.pause(); // nothing is read from the kernel until resume()
    socket.write(
      `POST /api/assets HTTP/1.1\r\nHost: ${u.host}\r\nx-api-key: not-a-valid-key-at-all\r\n` +
        `content-type: application/octet-stream\r\ncontent-length: ${48 * 1024 * 1024}\r\n\r\n`,
    );
    const chunk = crypto.randomBytes(1024 * 1024);
    for (let i = 0; i < 24; i++) {
      socket.write(chunk);
      await new Promise((r) => setTimeout(r, 20));
    }
    let raw = '';
    socket.on('data', (d: Buffer) => (raw += d.toString('latin1')));
    socket.resume();
    await closed;
    expect(raw.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
    expect(raw.toLowerCase()).toContain('connection: close');
    expect(raw).toContain('"code":"UNAUTHORIZED"');
  });

  test('the lingering close reads at most its bound of a body Node has already dropped', async () => {
    // 401 before any handler reads the body: Node drops the body itself, so the bytes read after the answer are
    // counted on the socket; the service closes once it has read LINGER.bytes (64 MiB), not after 5 s of a fast body.
    const u = new URL(svc.url);
    // Half-open: the client keeps sending after the service's FIN, until the service lets the connection go.
    const socket = net.connect({ port: Number(u.port), host: u.hostname, allowHalfOpen: true });
    let closed = false;
    socket.on('error', () => undefined);
    socket.on('close', () => (closed = true));
    socket.resume();
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `POST /api/assets HTTP/1.1\r\nHost: ${u.host}\r\nx-api-key: not-a-valid-key-at-all\r\n` +
        `content-type: application/octet-stream\r\ncontent-length: ${8 * 1024 ** 3}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(1024 * 1024, 7);
    let written = 0;
    while (!closed && written < 2 * 1024 ** 3) {
      if (!socket.write(chunk)) {
        await new Promise<void>((resolve) => {
          const go = (): void => {
            socket.off('drain', go).off('close', go);
            resolve();
          };
          socket.on('drain', go).on('close', go);
        });
      }
      written += chunk.length;
    }
    socket.destroy();
    expect(written).toBeLessThan(256 * 1024 * 1024);
  });

  test('an error to a request without a body keeps the connection', async () => {
    for (const res of [
      await svc.fetch(`/api/nothing-here`),
      await svc.fetch(`/api/assets/${crypto.randomUUID()}`),
      await svc.fetch('/api/assets', { key: 'bad-key-0000' }),
    ]) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers.get('connection')).not.toBe('close');
    }
  });

  test('a slow but steady body is not cut', async () => {
    const bytes = crypto.randomBytes(40_000);
    const up = partialUpload(svc.url, bytes, 10_000);
    for (let i = 1; i <= 3; i++) {
      await new Promise((r) => setTimeout(r, 600));
      up.write(bytes.subarray((i - 1) * 10_000 + 10_000, i * 10_000 + 10_000));
    }
    await new Promise((r) => setTimeout(r, 600));
    up.end();
    await waitFor(
      async () =>
        (await svc.fetch(`/api/assets/hash/${blake3Of(bytes)}`, { method: 'HEAD' })).status === 200 ? true : undefined,
      {
        what: 'the slow upload to be stored',
      },
    );
    up.close();
  });
});

describe('a client that stops reading its answer', () => {
  const size = 64 * 1024 * 1024; // far more than the two kernels' socket buffers hold
  let id: string;
  beforeAll(async () => {
    const res = await svc.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(crypto.randomBytes(size), {}, 'big.bin'),
    });
    expect(res.status).toBe(201);
    id = ((await res.json()) as { id: string }).id;
  });

  /** GET the content on a raw socket, reading `pace(got)` bytes' worth at a time (Infinity: everything, now). */
  async function read(pause: (got: number) => number): Promise<{ got: number; ended: 'end' | 'close' }> {
    const u = new URL(svc.url);
    const socket = net.connect(Number(u.port), u.hostname);
    socket.on('error', () => undefined);
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `GET /api/assets/${id}/content HTTP/1.1\r\nHost: ${u.host}\r\nx-api-key: ${KEYS.alice}\r\nConnection: close\r\n\r\n`,
    );
    let got = 0;
    let ended: 'end' | 'close' | undefined;
    socket.on('end', () => (ended ??= 'end'));
    socket.on('close', () => (ended ??= 'close'));
    socket.on('data', (d: Buffer) => {
      got += d.length;
      const ms = pause(got);
      if (ms > 0) {
        socket.pause();
        setTimeout(() => socket.resume(), ms);
      }
    });
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    return { got, ended: ended! };
  }

  test('is disconnected after SEND_IDLE_TIMEOUT_MS: the rest is never sent', async () => {
    // One pause of 4 s after the first MiB (the limit is 1 s), then it reads on: the connection is gone by then.
    let paused = false;
    const r = await read((got) => (got > 1024 * 1024 && !paused ? ((paused = true), 4_000) : 0));
    expect(r.got).toBeLessThan(size);
  });

  test('one that reads slowly but steadily gets every byte', async () => {
    // A pause of 600 ms after every 8 MiB read: each shorter than the limit, ~5 s in all.
    let next = 8 * 1024 * 1024;
    const r = await read((got) => (got >= next ? ((next += 8 * 1024 * 1024), 600) : 0));
    expect(r.got).toBeGreaterThan(size);
  });
});

describe('content garbage collection in batches', () => {
  test('2,000 contents past their grace period are all reclaimed within 30 s', async () => {
    const n = 2_000;
    const hexes = Array.from({ length: n }, () => crypto.randomBytes(32).toString('hex'));
    const root = path.join(svc.dataDir, 'blobs');
    for (const h of hexes) {
      fs.mkdirSync(path.join(root, h.slice(0, 2), h.slice(2, 4)), { recursive: true });
      fs.writeFileSync(path.join(root, h.slice(0, 2), h.slice(2, 4), h), h);
    }
    const db = new Client({ connectionString: svc.databaseUrl });
    await db.connect();
    try {
      await db.query(
        `INSERT INTO content (blake3, sha256, size, mime_type, first_name, orphaned_at)
         SELECT h, h, 64, 'application/octet-stream', 'gc.bin', now() - interval '2 hours' FROM unnest($1::text[]) AS h`,
        [hexes],
      );
      // What n asset deletions enqueue: one GC job each, due at the end of the grace period.
      await svc.container.queue.raw.insert(
        JOB.contentGc,
        hexes.map((blake3) => ({ data: { blake3 } })),
      );
      const t = Date.now();
      await waitFor(
        async () =>
          (await db.query(`SELECT count(*)::int AS n FROM content WHERE blake3 = ANY($1::text[])`, [hexes])).rows[0]
            .n === 0
            ? true
            : undefined,
        { timeoutMs: 30_000, intervalMs: 200, what: 'the contents to be collected' },
      );
      await waitFor(
        async () =>
          hexes.some((h) => fs.existsSync(path.join(root, h.slice(0, 2), h.slice(2, 4), h))) ? undefined : true,
        {
          timeoutMs: 10_000,
          what: 'the blobs to be removed',
        },
      );
      console.log(`content GC: ${n} contents reclaimed in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    } finally {
      await db.end();
    }
  }, 60_000);
});

describe('rate limits', () => {
  let r: TestService;
  beforeAll(async () => {
    r = await startTestService({ RATE_LIMIT_PER_MINUTE: '4', AUTH_FAILURES_PER_MINUTE: '5', TRUST_PROXY: 'true' });
  });
  afterAll(async () => {
    await r?.stop();
  });

  test('per key: 429 RATE_LIMITED with Retry-After and RateLimit headers, on GET by id and GraphQL too; other keys unaffected', async () => {
    const created = await r.fetch('/api/assets', { method: 'POST', body: uploadForm(crypto.randomBytes(10)) });
    expect(created.status).toBe(201);
    expect(created.headers.get('ratelimit-policy')).toBe('"per-key";q=4;w=60');
    expect(created.headers.get('ratelimit')).toMatch(/^"per-key";r=3;t=\d+$/);
    const id = (await json(created)).id;
    for (let i = 0; i < 3; i++) expect((await r.fetch(`/api/assets/${id}`)).status).toBe(200);
    for (const res of [
      await r.fetch(`/api/assets/${id}`),
      await r.fetch('/api/assets'),
      await r.fetch('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ assets { total } }' }),
      }),
    ]) {
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(res.headers.get('ratelimit')).toMatch(/^"per-key";r=0;t=\d+$/);
      expect(JSON.stringify(await json(res))).toContain('RATE_LIMITED');
    }
    expect((await r.fetch('/api/assets', { key: KEYS.bob })).status).toBe(200);
  });

  test('failed authentications per client address: 429 before any lookup; valid keys from that address still pass', async () => {
    const lookups = jest.spyOn(r.container.apiKeys, 'authenticate');
    const from = (addr: string, key: string | null, p = '/api/tags') =>
      r.fetch(p, { key, headers: { 'x-forwarded-for': `203.0.113.9, ${addr}` } });
    for (let i = 0; i < 5; i++) expect((await from('10.1.1.1', `random-${crypto.randomUUID()}`)).status).toBe(401);
    const calls = lookups.mock.calls.length;
    for (let i = 0; i < 20; i++) {
      const res = await from(
        '10.1.1.1',
        `random-${crypto.randomUUID()}`,
        i % 2 ? '/api/tags' : `/api/assets/${crypto.randomUUID()}`,
      );
      expect(res.status).toBe(429);
      expect(res.headers.get('ratelimit-policy')).toBe('"auth-failures";q=5;w=60');
    }
    expect(lookups.mock.calls.length).toBe(calls);
    expect((await from('10.1.1.1', KEYS.admin)).status).toBe(200);
    expect((await from('10.1.1.2', `random-${crypto.randomUUID()}`)).status).toBe(401);
  });
});

describe('shutdown', () => {
  test('an upload still running when the grace period ends gets 503 with Connection: close; its temporary file is removed', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-faults-shutdown-'));
    const s = await startTestService({ SHUTDOWN_GRACE_MS: '500' }, { dataDir });
    try {
      const up = partialUpload(s.url, crypto.randomBytes(300_000), 100_000);
      await waitFor(async () => (onDisk(s).temps.length > 0 ? true : undefined), { what: 'the upload to start' });
      const stopped = s.stop();
      const res = await up.response;
      expect(res.status).toBe(503);
      expect(res.headers.connection).toBe('close');
      expect(res.headers['retry-after']).toBe('5');
      expect(JSON.parse(res.body).code).toBe('SERVICE_UNAVAILABLE');
      await stopped;
      expect(onDisk(s).temps).toEqual([]);
    } finally {
      await s.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
