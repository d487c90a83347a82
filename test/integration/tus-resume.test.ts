import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { blake3Of, createTestDatabase, json, startTestService, waitFor, type TestService } from '../helpers/harness';
import { startS3Server, type TestS3Server } from '../helpers/rgw';
import { spawnService, type ServiceProcess } from '../helpers/service-process';
import { startCuttingProxy, TUS, tusUpload, tusUploadUntilKilled } from '../helpers/tus';
import { StoreUnavailableError } from '../../src/infra/errors';

/**
 * Resumable uploads across failures: the service process SIGKILLed mid-upload and another one
 * continuing from the offset HEAD reports; two instances on one database; the same on S3 (Ceph RGW).
 */
jest.setTimeout(180_000);
const KiB = 1024;
const MiB = 1024 * KiB;
const idOf = (url: string) => url.split('/').pop()!;

async function assetVia(fetcher: (p: string, init?: RequestInit) => Promise<Response>, id: string) {
  const h = await fetcher(`/api/uploads/${id}`, { method: 'HEAD', headers: TUS });
  expect(h.status).toBe(200);
  return json(await fetcher(`/api/assets/${h.headers.get('asset-id')}`));
}

/**
 * A database and a data dir of its own for one describe block; the processes pushed to `procs` are stopped after it.
 */
function diskStack(): { procs: ServiceProcess[]; env: () => Record<string, string>; dataDir: () => string } {
  const procs: ServiceProcess[] = [];
  let databaseUrl: string;
  let dataDir: string;
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-tus-'));
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill('SIGTERM')));
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return { procs, env: () => ({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir }), dataDir: () => dataDir };
}

describe('disk store', () => {
  const { procs, env: stackEnv, dataDir: stackDir } = diskStack();

  test('SIGKILLed mid-upload: a new process resumes from the offset HEAD reports, which the disk kept', async () => {
    const env = stackEnv();
    const dataDir = stackDir();
    const a = await spawnService(env);
    procs.push(a);
    const data = crypto.randomBytes(8 * MiB);
    const { url, acknowledged } = await tusUploadUntilKilled(a.url, data, 3 * MiB, () => a.kill('SIGKILL'));
    expect(acknowledged).toBeGreaterThanOrEqual(3 * MiB);

    const b = await spawnService(env);
    procs.push(b);
    const id = idOf(url);
    const h = await b.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: TUS });
    expect(h.status).toBe(200);
    const offset = Number(h.headers.get('upload-offset'));
    expect(offset).toBeGreaterThanOrEqual(acknowledged);
    expect(offset).toBeLessThan(data.length);
    expect(fs.statSync(path.join(dataDir, 'blobs', '.partial', `upload-${id}`)).size).toBeGreaterThanOrEqual(offset);

    await tusUpload(b.url, data, { uploadUrl: `${b.url}/api/uploads/${id}`, chunkSize: 2 * MiB });
    const asset = await assetVia(b.fetch, id);
    expect(asset.asset_hash).toBe(blake3Of(data));
    expect(b.logs().some((l) => l.msg === 'rebuilding the hash state of a resumed upload')).toBe(true);
  });
});

describe('disk store, a PATCH sequence across a restart', () => {
  const { procs, env: stackEnv } = diskStack();

  test('PATCHes keep the hash state in the process between them; after a restart it is rebuilt once; both hashes right', async () => {
    const env = stackEnv();
    const data = crypto.randomBytes(10 * MiB + 3);
    const sha256 = `sha256:${crypto.createHash('sha256').update(data).digest('hex')}`;
    const patch = async (svc: ServiceProcess, id: string, from: number, to: number) => {
      const r = await svc.fetch(`/api/uploads/${id}`, {
        method: 'PATCH',
        headers: { ...TUS, 'Upload-Offset': String(from), 'Content-Type': 'application/offset+octet-stream' },
        body: data.subarray(from, to),
      });
      expect(r.status).toBe(204);
      expect(r.headers.get('upload-offset')).toBe(String(to));
      return r;
    };
    const a = await spawnService(env);
    procs.push(a);
    // `hash` (SHA-256) makes the last byte check the SHA-256 state as well as the BLAKE3 one (asset_hash).
    const meta = `filename ${Buffer.from('m.bin').toString('base64')},hash ${Buffer.from(sha256).toString('base64')}`;
    const created = await a.fetch('/api/uploads', {
      method: 'POST',
      headers: { ...TUS, 'Upload-Length': String(data.length), 'Upload-Metadata': meta },
    });
    expect(created.status).toBe(201);
    const id = idOf(created.headers.get('location')!);
    await patch(a, id, 0, 1);
    await patch(a, id, 1, 3 * MiB);
    await patch(a, id, 3 * MiB, 5 * MiB + 1);
    const rebuilt = (svc: ServiceProcess) =>
      svc.logs().filter((l) => l.msg === 'rebuilding the hash state of a resumed upload').length;
    expect(rebuilt(a)).toBe(0);
    await a.kill('SIGTERM');

    const b = await spawnService(env);
    procs.push(b);
    await patch(b, id, 5 * MiB + 1, 8 * MiB);
    const last = await patch(b, id, 8 * MiB, data.length);
    expect(rebuilt(b)).toBe(1);
    const asset = await json(await b.fetch(`/api/assets/${last.headers.get('asset-id')}`));
    expect(asset.asset_hash).toBe(blake3Of(data));
  });
});

/** Two instances on one database and one blob store: half the bytes through each. */
async function halfAndHalf(a: TestService, b: TestService) {
  const data = crypto.randomBytes(3 * MiB + 7);
  const created = await a.fetch('/api/uploads', {
    method: 'POST',
    headers: { ...TUS, 'Upload-Length': String(data.length) },
  });
  expect(created.status).toBe(201);
  const id = idOf(created.headers.get('location')!);
  const half = Math.floor(data.length / 2);
  const p1 = await a.fetch(`/api/uploads/${id}`, {
    method: 'PATCH',
    headers: { ...TUS, 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
    body: data.subarray(0, half),
  });
  expect(p1.status).toBe(204);
  const h = await b.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: TUS });
  expect(h.headers.get('upload-offset')).toBe(String(half));
  await tusUpload(b.url, data, { uploadUrl: `${b.url}/api/uploads/${id}` });
  const asset = await assetVia(b.fetch, id);
  expect(asset.asset_hash).toBe(blake3Of(data));
  // And the first instance sees the finished upload too.
  expect((await assetVia(a.fetch, id)).id).toBe(asset.id);
}

describe('two instances on one database (disk)', () => {
  let a: TestService;
  let b: TestService;
  beforeAll(async () => {
    a = await startTestService();
    b = await startTestService({}, { databaseUrl: a.databaseUrl, dataDir: a.dataDir });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  test('one instance continues an upload the other started', async () => {
    await halfAndHalf(a, b);
  });

  test('a HEAD on one instance waits for a PATCH in progress on the other, which wraps up when asked', async () => {
    const data = crypto.randomBytes(16 * MiB);
    const created = await a.fetch('/api/uploads', {
      method: 'POST',
      headers: { ...TUS, 'Upload-Length': String(data.length) },
    });
    const id = idOf(created.headers.get('location')!);
    // A slow client on A: 64 KiB every 50 ms, far from done when B is asked.
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(ctrl) {
        if (sent >= data.length) return ctrl.close();
        await new Promise((r) => setTimeout(r, 50));
        ctrl.enqueue(data.subarray(sent, sent + 64 * KiB));
        sent += 64 * KiB;
      },
    });
    const slow = a
      .fetch(`/api/uploads/${id}`, {
        method: 'PATCH',
        headers: { ...TUS, 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
        body,
        duplex: 'half',
      } as RequestInit)
      .then(
        (r) => r.headers.get('upload-offset'),
        () => undefined,
      );
    await waitFor(async () => (sent >= 512 * KiB ? true : undefined));
    const h = await b.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: TUS });
    expect(h.status).toBe(200);
    const offset = Number(h.headers.get('upload-offset'));
    expect(offset).toBeGreaterThanOrEqual(512 * KiB);
    expect(offset).toBeLessThan(data.length);
    expect(fs.statSync(path.join(a.dataDir, 'blobs', '.partial', `upload-${id}`)).size).toBe(offset);
    const answered = await slow;
    if (answered !== undefined && answered !== null) expect(Number(answered)).toBe(offset);
    await tusUpload(b.url, data, { uploadUrl: `${b.url}/api/uploads/${id}` });
    expect((await assetVia(b.fetch, id)).asset_hash).toBe(blake3Of(data));
  });
});

describe('S3 (Ceph RGW)', () => {
  let s3: TestS3Server;
  let a: TestService;
  let b: TestService;
  beforeAll(async () => {
    s3 = await startS3Server();
    a = await startTestService(s3.env);
    b = await startTestService(s3.env, { databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
    await s3?.stop();
  });

  test('a connection cut mid-PATCH resumes; the parts are gone once the asset exists', async () => {
    const data = crypto.randomBytes(5 * MiB);
    const proxy = await startCuttingProxy(a.url, { afterBytes: 2 * MiB });
    let url = '';
    try {
      ({ url } = await tusUpload(proxy.url, data, { retryDelays: [0, 100, 200], onUrl: (u) => (url = u) }));
      expect(proxy.cutsDone()).toBe(1);
    } finally {
      await proxy.stop();
    }
    const asset = await assetVia(a.fetch, idOf(url));
    expect(asset.asset_hash).toBe(blake3Of(data));
    expect((await s3.objectKeys()).filter((k) => k.startsWith('.partial/'))).toEqual([]);
    expect(await s3.objectKeys()).toContain(
      `${blake3Of(data).slice(7, 9)}/${blake3Of(data).slice(9, 11)}/${blake3Of(data).slice(7)}`,
    );
  });

  test('one instance continues an upload the other started', async () => {
    await halfAndHalf(a, b);
  });

  test('the database gone while the last PATCH makes the asset: 503, the segments stay, and the next HEAD makes the asset', async () => {
    const data = crypto.randomBytes(MiB + 17);
    const created = await a.fetch('/api/uploads', {
      method: 'POST',
      headers: { ...TUS, 'Upload-Length': String(data.length) },
    });
    const id = idOf(created.headers.get('location')!);
    const assets = a.container.assets as unknown as { createWithContent: () => Promise<unknown> };
    jest.spyOn(assets, 'createWithContent').mockRejectedValueOnce(new StoreUnavailableError('database'));
    const last = await a.fetch(`/api/uploads/${id}`, {
      method: 'PATCH',
      headers: { ...TUS, 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
      body: data,
    });
    expect(last.status).toBe(503);
    expect((await s3.objectKeys()).some((k) => k.startsWith(`.partial/upload-${id}/`))).toBe(true);
    const asset = await assetVia(b.fetch, id);
    expect(asset.asset_hash).toBe(blake3Of(data));
    expect((await s3.objectKeys()).filter((k) => k.startsWith(`.partial/upload-${id}/`))).toEqual([]);
  });

  test('the store unreachable during a PATCH: 503 SERVICE_UNAVAILABLE with Retry-After, the offset does not move, and the upload resumes', async () => {
    const data = crypto.randomBytes(2 * MiB);
    const created = await a.fetch('/api/uploads', {
      method: 'POST',
      headers: { ...TUS, 'Upload-Length': String(data.length) },
    });
    const id = idOf(created.headers.get('location')!);
    const patch = (offset: number, body: Buffer) =>
      a.fetch(`/api/uploads/${id}`, {
        method: 'PATCH',
        headers: { ...TUS, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' },
        body,
      });
    expect((await patch(0, data.subarray(0, MiB))).status).toBe(204);
    // The endpoint refuses connections: the segment being written fails, and so does the listing after it.
    const unreachable = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    const store = a.container.blobStore;
    const real = store.openPartial.bind(store);
    jest
      .spyOn(store, 'openPartial')
      .mockImplementationOnce(async (name) => ({
        ...(await real(name)),
        append: async (source) => {
          for await (const chunk of source) void chunk;
          throw unreachable();
        },
      }))
      .mockRejectedValueOnce(unreachable());
    const down = await patch(MiB, data.subarray(MiB));
    expect([down.status, down.headers.get('retry-after'), (await json(down)).code]).toEqual([
      503,
      '5',
      'SERVICE_UNAVAILABLE',
    ]);
    const h = await b.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: TUS });
    expect(h.headers.get('upload-offset')).toBe(String(MiB));
    expect((await patch(MiB, data.subarray(MiB))).status).toBe(204);
    expect((await assetVia(b.fetch, id)).asset_hash).toBe(blake3Of(data));
  });

  test('DELETE removes the part objects', async () => {
    const created = await a.fetch('/api/uploads', { method: 'POST', headers: { ...TUS, 'Upload-Length': '1000' } });
    const id = idOf(created.headers.get('location')!);
    await a.fetch(`/api/uploads/${id}`, {
      method: 'PATCH',
      headers: { ...TUS, 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
      body: crypto.randomBytes(500),
    });
    expect((await s3.objectKeys()).some((k) => k.startsWith(`.partial/upload-${id}/`))).toBe(true);
    expect((await b.fetch(`/api/uploads/${id}`, { method: 'DELETE', headers: TUS })).status).toBe(204);
    expect((await s3.objectKeys()).some((k) => k.startsWith(`.partial/upload-${id}/`))).toBe(false);
  });
});
