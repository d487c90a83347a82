import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { FsBlobStore } from '../../src/infra/blob-store/fs';
import { IngestWorkers, RemoteFetchError, type HashSession } from '../../src/infra/blob-store/ingest-pool';
import type { HttpFetcherOptions } from '../../src/infra/http-fetch';
import { blake3Of, sha256Of } from '../helpers/harness';

/**
 * HashSession.fetch: a download's request made on the session's ingest worker, its body appended to the partial
 * file and hashed there (so that its socket reads are collected on that thread's small heap). What must hold: the
 * same bytes and hashes as reading on this thread, a broken, cut or cancelled body keeps what came before (written
 * and counted in the session), a body not wanted is discarded there, and the fetcher's refusals arrive intact.
 */
const MiB = 1024 * 1024;
const hexOf = (prefixed: string) => prefixed.split(':')[1];
const TRUSTING: HttpFetcherOptions = { blockPrivateNetworks: false, trustedOrigins: [] };

let dir: string;
let store: FsBlobStore;
let pool: IngestWorkers;
let server: http.Server;
let base: string;
const data = crypto.randomBytes(6 * MiB + 4321);
/** How each request ended, by path: whether the server saw the client go before the whole answer was sent. */
const ended = new Map<string, 'finished' | 'aborted'>();
/** Set once /breaks has sent its first MiB: closes that socket (the test calls it once the body is being stored). */
let breakNow: (() => void) | undefined;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    const key = url.pathname;
    const start = Number(/^bytes=(\d+)-$/.exec(req.headers.range ?? '')?.[1] ?? 0);
    const body = data.subarray(start);
    res.on('close', () => ended.set(key, res.writableFinished ? 'finished' : 'aborted'));
    if (key === '/redirect') return void res.writeHead(302, { location: '/whole' }).end();
    if (key === '/refused') return void res.writeHead(403, { 'content-type': 'text/plain' }).end('no');
    const status = start > 0 ? 206 : 200;
    const headers: http.OutgoingHttpHeaders = { 'content-length': body.length, etag: '"v1"' };
    if (start > 0) headers['content-range'] = `bytes ${start}-${data.length - 1}/${data.length}`;
    res.writeHead(status, headers);
    // /slow… sends a piece every 20 ms (a cancel, a cut or a drop lands midway, before the server could have sent it
    // all into the socket's buffers); /breaks stops after 1 MiB and closes the socket when
    // the test says (a body that broke before it was stored would have nothing to keep).
    const piece = 64 * 1024;
    let at = 0;
    const pump = () => {
      if (res.destroyed) return;
      if (key === '/breaks' && at >= MiB) return void (breakNow = () => res.socket?.destroy());
      if (at >= body.length) return void res.end();
      const chunk = body.subarray(at, (at += piece));
      if (key.startsWith('/slow')) {
        res.write(chunk);
        setTimeout(pump, 20);
      } else if (res.write(chunk)) setImmediate(pump);
      else res.once('drain', pump);
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-fetch-worker-'));
  pool = new IngestWorkers();
  store = new FsBlobStore(dir, pool);
  await store.init();
});

afterEach(async () => {
  await pool.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const fetchOn = (session: HashSession, p: string, o: { headers?: Record<string, string>; signal?: AbortSignal } = {}) =>
  session.fetch({ url: new URL(p, base), headers: o.headers ?? {}, fetcher: TRUSTING }, o.signal);

async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(cond()).toBe(true);
}

test('stores the body in the partial file with the same hashes, its head, and the progress on the way', async () => {
  const session = pool.session({ blake3OnWorker: true });
  const partial = await store.openPartial('download-a');
  const res = await fetchOn(session, '/redirect');
  expect([res.status, res.url.pathname, res.redirects.map((r) => [r.status, r.url.pathname])]).toEqual([
    200,
    '/whole',
    [[302, '/redirect']],
  ]);
  expect(res.headers.etag).toBe('"v1"');
  const seen: number[] = [];
  const { temp, stored } = await store.appendFetched(partial, res, session, {
    limit: data.length,
    headBytes: 1000,
    onProgress: (b) => seen.push(b),
  });
  expect(stored).toEqual({ size: data.length, head: data.subarray(0, 1000), tooLarge: false });
  expect(temp.size).toBe(data.length);
  expect(seen.length).toBeGreaterThan(0);
  expect(seen.every((b, i) => b > 0 && b <= data.length && (i === 0 || b >= seen[i - 1]!))).toBe(true);
  expect(fs.readFileSync(path.join(dir, partial.key)).equals(data)).toBe(true);
  expect(session.size).toBe(data.length);
  expect(await session.digest()).toEqual({
    blake3: hexOf(blake3Of(data)),
    sha256: hexOf(sha256Of(data)),
    size: data.length,
  });
});

test('a body that breaks keeps what came (written, durable, hashed) and a resume continues the same hashes', async () => {
  const session = pool.session({ blake3OnWorker: true });
  const partial = await store.openPartial('download-b');
  breakNow = undefined;
  const storing = store.appendFetched(partial, await fetchOn(session, '/breaks'), session, {
    limit: data.length,
    headBytes: 0,
  });
  await waitFor(() => breakNow !== undefined);
  breakNow!();
  const first = await storing;
  const got = first.stored.size;
  expect(first.stored.broken).toBeInstanceOf(Error);
  expect(got).toBeGreaterThan(0);
  expect(got).toBeLessThanOrEqual(MiB);
  expect(session.usable).toBe(true);
  expect(session.size).toBe(got);
  expect(fs.readFileSync(path.join(dir, partial.key)).equals(data.subarray(0, got))).toBe(true);

  const rest = await fetchOn(session, '/whole', { headers: { range: `bytes=${got}-` } });
  expect(rest.status).toBe(206);
  const second = await store.appendFetched(partial, rest, session, { limit: data.length - got, headBytes: 0 });
  expect(second.stored).toMatchObject({ size: data.length - got, tooLarge: false });
  expect((await session.digest()).blake3).toBe(hexOf(blake3Of(data)));
  expect(fs.readFileSync(path.join(dir, partial.key)).equals(data)).toBe(true);
});

test('a body past the limit is cut there: the bytes before it are stored and the connection is dropped', async () => {
  const session = pool.session({ blake3OnWorker: true });
  const partial = await store.openPartial('download-c');
  const { stored } = await store.appendFetched(partial, await fetchOn(session, '/slow-limit'), session, {
    limit: 256 * 1024,
    headBytes: 0,
  });
  expect(stored.tooLarge).toBe(true);
  expect(stored.size).toBeLessThanOrEqual(256 * 1024);
  expect(session.size).toBe(stored.size);
  expect(fs.readFileSync(path.join(dir, partial.key)).equals(data.subarray(0, stored.size))).toBe(true);
  await waitFor(() => ended.get('/slow-limit') === 'aborted');
});

test('cancelling stops the body midway (what came is kept) or the request before its answer', async () => {
  const session = pool.session({ blake3OnWorker: true });
  const partial = await store.openPartial('download-d');
  const ac = new AbortController();
  const res = await fetchOn(session, '/slow', { signal: ac.signal });
  const storing = store.appendFetched(partial, res, session, {
    limit: data.length,
    headBytes: 0,
    onProgress: (b) => b >= 256 * 1024 && ac.abort(),
  });
  const { stored } = await storing;
  expect(stored.broken?.message).toMatch(/cancelled/);
  expect(stored.size).toBeGreaterThanOrEqual(256 * 1024);
  expect(stored.size).toBeLessThan(data.length);
  expect(fs.statSync(path.join(dir, partial.key)).size).toBe(stored.size);
  await waitFor(() => ended.get('/slow') === 'aborted');

  const gone = new AbortController();
  gone.abort();
  await expect(fetchOn(pool.session(), '/whole', { signal: gone.signal })).rejects.toMatchObject({ kind: 'aborted' });
});

test("a body that is not wanted is discarded on the worker; the fetcher's refusals come back with their kind", async () => {
  const session = pool.session({ blake3OnWorker: true });
  const refused = await fetchOn(session, '/refused');
  expect(refused.status).toBe(403);
  refused.drop();
  const big = await fetchOn(session, '/slow-unwanted');
  big.drop();
  await waitFor(() => ended.get('/slow-unwanted') === 'aborted');
  await expect(big.store(session, path.join(dir, 'x'), { limit: 1, headBytes: 0 })).rejects.toThrow(/already used/);

  const blocked = session.fetch({
    url: new URL('/whole', base),
    headers: {},
    fetcher: { blockPrivateNetworks: true, trustedOrigins: [] },
  });
  await expect(blocked).rejects.toBeInstanceOf(RemoteFetchError);
  await expect(blocked).rejects.toMatchObject({ kind: 'blocked' });
  await expect(fetchOn(session, 'http://127.0.0.1:1/closed')).rejects.toMatchObject({ kind: 'network' });
  // Nothing of these was stored or hashed.
  expect(session.size).toBe(0);
});

test('a body is stored only with a session of its worker; a renewed session there starts from zero', async () => {
  const session = pool.session({ blake3OnWorker: true });
  const partial = await store.openPartial('download-e');
  const job = session.append(undefined);
  job.write(Buffer.from('old bytes'));
  await job.finish();
  const res = await fetchOn(session, '/whole');
  // A session on another worker (the first one is busy with a job) cannot take it.
  const busy = session.append(undefined);
  const elsewhere = pool.session({ blake3OnWorker: true });
  await expect(res.store(elsewhere, path.join(dir, 'y'), { limit: data.length, headBytes: 0 })).rejects.toThrow(
    /not on the body's worker/,
  );
  res.drop();
  await busy.finish();
  const renewed = session.renew();
  expect(session.usable).toBe(false);
  const again = await fetchOn(renewed, '/whole');
  await store.appendFetched(partial, again, renewed, { limit: data.length, headBytes: 0 });
  expect((await renewed.digest()).sha256).toBe(hexOf(sha256Of(data)));
  elsewhere.close();
});
