import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { startDownload, waitTask } from '../helpers/downloads';
import { bytes, startFakeProviders, type FakeProviders } from '../helpers/fake-providers';
import { blake3Of, createTestDatabase, json, KEYS, uploadForm, waitFor } from '../helpers/harness';
import { startS3Server, type TestS3Server } from '../helpers/rgw';
import { spawnService, type ServiceProcess } from '../helpers/service-process';
import { tusUpload, tusUploadUntilKilled } from '../helpers/tus';

/**
 * Several service processes (dist/, `node dist/src/main.js --role ...`) sharing nothing but one PostgreSQL database
 * and one blob store: a shared DATA_DIR on disk, or one S3 bucket (Ceph RGW).
 */
jest.setTimeout(240_000);
const MiB = 1024 * 1024;
const BLOB_KEY = /^(?:mi\/)?[0-9a-f]{2}\/[0-9a-f]{2}\/([0-9a-f]{64})$/;

interface Cluster {
  db: Client;
  env: Record<string, string>;
  blobs(): Promise<string[]>;
  temporaries(): Promise<string[]>;
}

const procs: ServiceProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGTERM')));
  for (const c of cleanups.reverse()) await c();
});
const spawn = async (env: Record<string, string>, role: 'all' | 'api' | 'worker') => {
  const p = await spawnService(env, { role });
  procs.push(p);
  return p;
};

async function fsCluster(): Promise<Cluster> {
  const databaseUrl = await createTestDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-multi-'));
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  cleanups.push(async () => {
    await db.end();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const root = path.join(dataDir, 'blobs');
  const walk = (dir: string, rel = ''): string[] =>
    fs.existsSync(dir)
      ? fs
          .readdirSync(dir, { withFileTypes: true })
          .flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name), `${rel}${e.name}/`) : [`${rel}${e.name}`]))
      : [];
  return {
    db,
    env: { DATABASE_URL: databaseUrl, DATA_DIR: dataDir, CONTENT_GC_GRACE_SECONDS: '0' },
    blobs: async () => walk(root).flatMap((k) => BLOB_KEY.exec(k)?.[1] ?? []),
    temporaries: async () => [...walk(path.join(root, '.tmp')), ...walk(path.join(root, '.partial'))],
  };
}

async function s3Cluster(): Promise<Cluster> {
  const s3: TestS3Server = await startS3Server();
  const databaseUrl = await createTestDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-multi-'));
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  cleanups.push(async () => {
    await db.end();
    await s3.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    db,
    // Each process gets its own DATA_DIR here: on S3 nothing but the bucket and the database is shared.
    env: { ...s3.env, S3_PREFIX: 'mi', DATABASE_URL: databaseUrl, DATA_DIR: dataDir, CONTENT_GC_GRACE_SECONDS: '0' },
    blobs: async () => (await s3.objectKeys()).flatMap((k) => BLOB_KEY.exec(k)?.[1] ?? []),
    temporaries: async () => [
      ...(await s3.objectKeys()).filter((k) => /^mi\/\.(tmp|partial)\//.test(k)),
      ...Array.from({ length: await s3.pendingUploads() }, () => 'upload'),
    ],
  };
}

async function upload(p: ServiceProcess, body: Buffer, key: string) {
  const res = await p.fetch('/api/assets', { method: 'POST', body: uploadForm(body, { tags: 'multi' }, 'm.bin'), key });
  return { status: res.status, body: await json(res) };
}

/** No blob without a content row, no content row without its blob, no temporaries. */
async function checkFinalState(c: Cluster, expected: { contents: number; assets: number }): Promise<void> {
  const rows = (await c.db.query<{ blake3: string }>('SELECT blake3 FROM content')).rows
    .map((r) => r.blake3.trim())
    .sort();
  expect(rows).toHaveLength(expected.contents);
  expect((await c.blobs()).sort()).toEqual(rows);
  expect(Number((await c.db.query('SELECT count(*) AS n FROM asset')).rows[0].n)).toBe(expected.assets);
  expect(await c.temporaries()).toEqual([]);
}

/**
 * Same content through both instances at once (one asset per owner, one blob), different content through both,
 * then deletes: GC (run by whichever process has workers) removes exactly the unreferenced blob.
 */
async function concurrentUploads(c: Cluster, a: ServiceProcess, b: ServiceProcess): Promise<void> {
  const shared = Array.from({ length: 4 }, (_, i) => crypto.randomBytes(50_000 + i));
  const distinct = Array.from({ length: 8 }, (_, i) => crypto.randomBytes(i === 0 ? 9 * MiB : 20_000 + i));
  const results = await Promise.all([
    ...shared.flatMap((buf) => [
      upload(a, buf, KEYS.alice),
      upload(b, buf, KEYS.alice),
      upload(a, buf, KEYS.bob),
      upload(b, buf, KEYS.bob),
    ]),
    ...distinct.map((buf, i) => upload(i % 2 ? a : b, buf, KEYS.alice)),
  ]);
  for (const [i, buf] of shared.entries()) {
    const [aa, ba, ab, bb] = results.slice(i * 4, i * 4 + 4);
    for (const r of [aa, ba, ab, bb]) expect(r!.body.asset_hash).toBe(blake3Of(buf));
    // One asset per owner: one 201 and one 200 with the same id.
    expect([aa!.status, ba!.status].sort()).toEqual([200, 201]);
    expect(aa!.body.id).toBe(ba!.body.id);
    expect([ab!.status, bb!.status].sort()).toEqual([200, 201]);
    expect(ab!.body.id).toBe(bb!.body.id);
  }
  results.slice(shared.length * 4).forEach((r) => expect(r.status).toBe(201));
  // Bytes read back through the other instance.
  const big = results[shared.length * 4]!.body;
  const got = Buffer.from(await (await a.fetch(`/api/assets/${big.id}/content`)).arrayBuffer());
  expect(got.equals(distinct[0]!)).toBe(true);
  await checkFinalState(c, { contents: 12, assets: 16 });

  // Delete both owners' assets of one shared content on different instances; the other content stays.
  const [aa, , ab] = results;
  expect((await a.fetch(`/api/assets/${aa!.body.id}`, { method: 'DELETE', key: KEYS.alice })).status).toBe(204);
  expect((await b.fetch(`/api/assets/${ab!.body.id}`, { method: 'DELETE', key: KEYS.bob })).status).toBe(204);
  await waitFor(async () => ((await c.blobs()).length === 11 ? true : undefined), {
    timeoutMs: 60_000,
    what: 'GC of the deleted content',
  });
  await checkFinalState(c, { contents: 11, assets: 14 });
}

describe('disk store shared by processes with different roles', () => {
  test('two api processes and one worker: uploads through both, jobs only on the worker', async () => {
    const c = await fsCluster();
    const [a, b, w] = await Promise.all([spawn(c.env, 'api'), spawn(c.env, 'api'), spawn(c.env, 'worker')]);
    // The worker serves its probes only: no API traffic reaches it.
    expect((await fetch(`${w.url}/api/assets`, { headers: { 'x-api-key': KEYS.alice } })).status).toBe(404);
    await concurrentUploads(c, a, b);
    // The GC jobs ran on the worker, never on an api-only process. The blob goes before the worker's log line reaches
    // this process through its stdout pipe: wait for the line.
    const gcLines = () => w.logs().filter((l) => l.msg === 'removed unreferenced content');
    await waitFor(async () => (gcLines().length > 0 ? true : undefined), {
      timeoutMs: 10_000,
      what: "the worker's GC log line",
    });
    expect(gcLines()).toHaveLength(1);
    for (const p of [a, b])
      expect(p.logs().some((l) => l.msg === 'removed unreferenced content' || l.msg === 'workers started')).toBe(false);
  });
});

describe('exports across processes', () => {
  test('identical export requests sent to two api processes at the same instant make one task', async () => {
    const c = await fsCluster();
    const [a, b] = await Promise.all([spawn(c.env, 'api'), spawn(c.env, 'api')]);
    const body = JSON.stringify({ asset_ids: [crypto.randomUUID()], job_ids: [crypto.randomUUID()] });
    const answers = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const res = await (i % 2 ? a : b).fetch('/api/assets/export', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        expect(res.status).toBe(202);
        return (await json(res)).task_id as string;
      }),
    );
    expect(new Set(answers).size).toBe(1);
    const { rows } = await c.db.query(`SELECT count(*)::int AS n FROM task WHERE task_name = 'export_assets'`);
    expect(rows[0].n).toBe(1);
  });
});

describe('S3 bucket shared by two processes', () => {
  let fake: FakeProviders;
  beforeAll(async () => {
    fake = await startFakeProviders();
    cleanups.push(() => fake.close());
  });

  test('concurrent uploads, then a download started on one process is finished by the other after a SIGKILL', async () => {
    const c = await s3Cluster();
    const env = { ...c.env, ...fake.env, DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'false' };
    const [a, b] = await Promise.all([spawn(env, 'all'), spawn(env, 'all')]);
    await concurrentUploads(c, a, b);

    // Whichever process's worker picks the download up is killed mid-transfer; the other one finishes it.
    const data = bytes(4 * MiB, 77);
    const url = fake.hf.lfs('org/multi/model.safetensors', data, { throttle: MiB });
    const res = await startDownload(a, { source_url: url });
    expect(res.status).toBe(202);
    const { task_id } = await json(res);
    await waitTask(a, task_id, {
      until: (t) => t.status === 'running' && t.progress.bytes_downloaded >= MiB,
      timeoutMs: 60_000,
    });
    const started = (p: ServiceProcess) => p.logs().some((l) => l.msg === 'download started');
    const [first, other] = started(a) ? [a, b] : [b, a];
    expect(started(first)).toBe(true);
    expect(started(other)).toBe(false);
    await first.kill('SIGKILL');

    const task = await waitTask(other, task_id, { timeoutMs: 150_000 });
    expect(task.status).toBe('completed');
    expect(task.result.asset_hash).toBe(blake3Of(data));
    expect(started(other)).toBe(true);
    const got = Buffer.from(await (await other.fetch(`/api/assets/${task.result.asset_id}/content`)).arrayBuffer());
    expect(got.equals(data)).toBe(true);
    await checkFinalState(c, { contents: 12, assets: 15 });
  });
});

describe('resumable uploads across processes', () => {
  test('a tus upload to S3 whose process is SIGKILLed mid-way is continued by the other from the offset HEAD reports', async () => {
    const c = await s3Cluster();
    const [a, b] = await Promise.all([spawn(c.env, 'all'), spawn(c.env, 'all')]);
    const data = crypto.randomBytes(6 * MiB);
    const { url, acknowledged } = await tusUploadUntilKilled(a.url, data, 2 * MiB, () => a.kill('SIGKILL'));
    const id = url.split('/').pop()!;
    const h = await b.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: { 'Tus-Resumable': '1.0.0' } });
    const offset = Number(h.headers.get('upload-offset'));
    expect(offset).toBeGreaterThanOrEqual(acknowledged);
    await tusUpload(b.url, data, { uploadUrl: `${b.url}/api/uploads/${id}` });
    const done = await b.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: { 'Tus-Resumable': '1.0.0' } });
    const asset = await json(await b.fetch(`/api/assets/${done.headers.get('asset-id')}`));
    expect(asset.asset_hash).toBe(blake3Of(data));
    await checkFinalState(c, { contents: 1, assets: 1 });
  });
});
