import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ExportRepository } from '../../src/domain/exports/export.repository';
import { ServerSecretRepository } from '../../src/domain/secrets/server-secret.repository';
import { ExportService } from '../../src/domain/exports/export.service';
import { TaskRepository } from '../../src/domain/tasks/task.repository';
import { gql } from '../helpers/graphql';
import { json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { readZip } from '../helpers/zip';

/** Bulk export on the disk store: the task, the archive member by member, names, signed URLs. */
let svc: TestService;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-zip-'));
beforeAll(async () => {
  svc = await startTestService({}, { validateResponses: true });
});
afterAll(async () => {
  await svc?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const archivesIn = (s: TestService): string[] => {
  const dir = path.join(s.dataDir, 'blobs', '.objects', 'exports');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
};

async function upload(
  name: string,
  fields: Record<string, string> = {},
  key: string = KEYS.alice,
  bytes = crypto.randomBytes(1000 + Math.floor(Math.random() * 5000)),
) {
  const res = await svc.fetch('/api/assets', {
    method: 'POST',
    key,
    body: uploadForm(bytes, { name, ...fields }, 'f.bin'),
  });
  expect(res.status).toBe(201);
  return json(res);
}

async function startExport(body: Record<string, unknown>, key: string = KEYS.alice) {
  const res = await svc.fetch('/api/assets/export', {
    method: 'POST',
    key,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await json(res) };
}

async function finished(taskId: string, key: string = KEYS.alice) {
  return waitFor(
    async () => {
      const t = await json(await svc.fetch(`/api/tasks/${taskId}`, { key }));
      return t.status === 'completed' || t.status === 'failed' ? t : undefined;
    },
    { what: 'the export task' },
  );
}

/** Exports, downloads the archive through its signed URL (no key) and reads it. */
async function exportAndRead(body: Record<string, unknown>) {
  const started = await startExport(body);
  expect(started.status).toBe(202);
  expect(started.body).toEqual({ task_id: expect.any(String), status: 'created', message: expect.any(String) });
  const task = await finished(started.body.task_id);
  expect(task.status).toBe('completed');
  expect(task.task_name).toBe('export_assets');
  const signed = await svc.fetch(`/api/assets/exports/${task.result.export_name}`);
  expect(signed.status).toBe(200);
  const { url, expires_at } = await json(signed);
  expect(new Date(expires_at).getTime()).toBeGreaterThan(Date.now());
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/zip');
  const file = path.join(tmp, task.result.export_name);
  fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()));
  return { task, url, file, members: await readZip(file) };
}

test('an archive of the selected assets: stored members, bytes equal to the blobs, names safe and unique', async () => {
  const assets = [
    await upload('../../etc/passwd'),
    await upload('/abs/model.bin'),
    await upload('a\\b.txt'),
    await upload('dup.txt'),
    await upload('dup.txt'),
    await upload('SDXL/base.safetensors'),
  ];
  const { task, file, members, url } = await exportAndRead({ asset_ids: assets.map((a) => a.id) });
  // `success`, as every task result has it: the ComfyUI frontend's task schema requires it.
  expect(task.result).toEqual({
    success: true,
    export_name: expect.stringMatching(/^[0-9a-f-]{36}\.zip$/),
    assets_total: 6,
    assets_attempted: 6,
    assets_failed: 0,
    bytes_total: fs.statSync(file).size,
    // ComfyUI's names for the same: members written, the archive's size, the members' bytes.
    assets_succeeded: 6,
    export_size: fs.statSync(file).size,
    uncompressed_size: assets.reduce((n, a) => n + a.size, 0),
  });
  expect(task.progress.bytes_downloaded).toBe(assets.reduce((n, a) => n + a.size, 0));
  expect(members.map((m) => m.name)).toEqual([
    'etc/passwd',
    'abs/model.bin',
    'a_b.txt',
    'dup.txt',
    'dup (2).txt',
    'SDXL/base.safetensors',
  ]);
  for (const [i, m] of members.entries()) {
    expect(m.compressionMethod).toBe(0);
    expect(m.blake3).toBe(assets[i].asset_hash);
    expect(m.size).toBe(assets[i].size);
  }
  const whole = fs.readFileSync(file);
  const part = await fetch(url, { headers: { range: 'bytes=100-199' } });
  expect(part.status).toBe(206);
  expect(part.headers.get('content-range')).toBe(`bytes 100-199/${whole.length}`);
  expect(Buffer.from(await part.arrayBuffer()).equals(whole.subarray(100, 200))).toBe(true);
  const past = await fetch(url, { headers: { range: `bytes=${whole.length}-` } });
  expect([past.status, past.headers.get('content-range'), past.headers.get('content-type')]).toEqual([
    416,
    `bytes */${whole.length}`,
    'application/json; charset=utf-8',
  ]);
  expect((await json(past)).code).toBe('RANGE_NOT_SATISFIABLE');
  try {
    execFileSync('unzip', ['-tq', file]);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
});

test('unicode names (UTF-8 in the archive) and zero-byte assets; unzip -t checks every CRC', async () => {
  const assets = [
    await upload('日本語/モデル.safetensors'),
    await upload('empty.txt', {}, KEYS.alice, Buffer.alloc(0)),
    await upload('émoji 🎨 naïve.png'),
    await upload('tab\there.bin'),
  ];
  const { members, file } = await exportAndRead({ asset_ids: assets.map((a) => a.id) });
  expect(members.map((m) => [m.name, m.size, m.blake3])).toEqual([
    ['日本語/モデル.safetensors', assets[0].size, assets[0].asset_hash],
    ['empty.txt', 0, assets[1].asset_hash],
    ['émoji 🎨 naïve.png', assets[2].size, assets[2].asset_hash],
    ['tabhere.bin', assets[3].size, assets[3].asset_hash],
  ]);
  try {
    execFileSync('unzip', ['-tqq', file]);
    expect(execFileSync('unzip', ['-Z1', file], { encoding: 'utf8' }).trim().split('\n')).toEqual(
      members.map((m) => m.name),
    );
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
});

test("1,000 outputs of one job in one archive (the frontend's download selected)", async () => {
  const job = crypto.randomUUID();
  const ids: string[] = [];
  const hashes = new Map<string, string>();
  for (let i = 0; i < 1000; i += 10) {
    const batch = await Promise.all(
      Array.from({ length: 10 }, (_, k) =>
        upload(
          `ComfyUI_${String(i + k).padStart(5, '0')}_.png`,
          { prompt_id: job },
          KEYS.alice,
          crypto.randomBytes(64 + ((i + k) % 200)),
        ),
      ),
    );
    for (const a of batch) {
      ids.push(a.id);
      hashes.set(a.name, a.asset_hash);
    }
  }
  const { task, members } = await exportAndRead({ job_ids: [job], naming_strategy: 'group_by_job_id' });
  expect(task.result).toMatchObject({ assets_total: 1000, assets_attempted: 1000, assets_failed: 0 });
  expect(members.length).toBe(1000);
  for (const m of members) {
    const [folder, name] = m.name.split('/');
    expect(folder).toBe(job);
    expect(m.blake3).toBe(hashes.get(name!));
  }
  expect(new Set(members.map((m) => m.name)).size).toBe(1000);
});

const blobFile = (asset: { asset_hash: string }) => {
  const hex = asset.asset_hash.slice('blake3:'.length);
  return path.join(svc.dataDir, 'blobs', hex.slice(0, 2), hex.slice(2, 4), hex);
};

test('assets left out are listed in failed_assets as ComfyUI lists them: not_found ids, then fetch_failed content', async () => {
  const job = crypto.randomUUID();
  const kept = await upload('kept.bin');
  const lost = await upload('lost.bin', { prompt_id: job });
  const unreadable = await upload('unreadable.bin');
  const bobs = await upload('bobs.bin', {}, KEYS.bob);
  const unknown = crypto.randomUUID();
  fs.rmSync(blobFile(lost));
  // A blob that cannot be opened even by root: a symbolic link to itself (ELOOP).
  fs.rmSync(blobFile(unreadable));
  fs.symlinkSync(blobFile(unreadable), blobFile(unreadable));
  try {
    const { task, members } = await exportAndRead({
      asset_ids: [unknown, kept.id, lost.id, bobs.id, unreadable.id],
      naming_strategy: 'preserve',
    });
    expect(task.result).toMatchObject({
      success: true,
      assets_total: 3,
      assets_attempted: 3,
      assets_failed: 2,
      assets_succeeded: 1,
      uncompressed_size: kept.size,
    });
    expect(task.result.failed_assets).toEqual([
      { asset_id: unknown, error: 'not_found' },
      { asset_id: bobs.id, error: 'not_found' },
      { asset_id: lost.id, error: 'fetch_failed', job_id: job, asset_name: 'lost.bin' },
      { asset_id: unreadable.id, error: 'fetch_failed', asset_name: 'unreadable.bin' },
    ]);
    expect(members.map((m) => [m.name, m.blake3])).toEqual([['kept.bin', kept.asset_hash]]);
    const q = 'query($id: ID!) { task(id: $id) { result { failedAssets { assetId error jobId assetName } } } }';
    expect((await gql(svc, q, { id: task.id })).data.task.result.failedAssets).toEqual([
      { assetId: unknown, error: 'not_found', jobId: null, assetName: null },
      { assetId: bobs.id, error: 'not_found', jobId: null, assetName: null },
      { assetId: lost.id, error: 'fetch_failed', jobId: job, assetName: 'lost.bin' },
      { assetId: unreadable.id, error: 'fetch_failed', jobId: null, assetName: 'unreadable.bin' },
    ]);
  } finally {
    fs.rmSync(blobFile(unreadable));
  }
});

test('when no selected asset can be read: success false, "All assets failed to export", no archive', async () => {
  const lost = await upload('all-lost.bin');
  fs.rmSync(blobFile(lost));
  const before = archivesIn(svc);
  const task = await finished((await startExport({ asset_ids: [lost.id] })).body.task_id);
  expect(task.status).toBe('completed');
  expect(task.result).toEqual({
    success: false,
    error: 'All assets failed to export',
    assets_total: 1,
    assets_attempted: 1,
    assets_failed: 1,
    bytes_total: 0,
    assets_succeeded: 0,
    failed_assets: [{ asset_id: lost.id, error: 'fetch_failed', asset_name: 'all-lost.bin' }],
  });
  expect(task.error_message).toBeUndefined();
  expect(archivesIn(svc)).toEqual(before);
  const q = 'query($id: ID!) { task(id: $id) { result { success error failedAssets { assetId error } } } }';
  expect((await gql(svc, q, { id: task.id })).data.task.result).toEqual({
    success: false,
    error: 'All assets failed to export',
    failedAssets: [{ assetId: lost.id, error: 'fetch_failed' }],
  });
});

test('a store short of descriptors (EMFILE) fails the export instead of leaving assets out of a "successful" archive', async () => {
  const a = await upload('emfile-a.bin');
  const b = await upload('emfile-b.bin');
  const store = svc.container.blobStore;
  const read = store.read.bind(store);
  const spy = jest.spyOn(store, 'read').mockImplementation(async (hex: string, ...rest: unknown[]) => {
    if (hex === b.asset_hash.slice('blake3:'.length))
      throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
    return (read as (...args: unknown[]) => ReturnType<typeof store.read>)(hex, ...rest);
  });
  const before = archivesIn(svc);
  try {
    const task = await finished((await startExport({ asset_ids: [a.id, b.id] })).body.task_id);
    expect(task.status).toBe('failed');
    expect(task.result?.failed_assets).toBeUndefined();
  } finally {
    spy.mockRestore();
  }
  expect(archivesIn(svc)).toEqual(before);
});

test('a failed export (a blob shorter than its asset) fails its task and leaves nothing', async () => {
  const ok = await upload('fine.bin');
  const bad = await upload('torn.bin');
  const hex = bad.asset_hash.slice('blake3:'.length);
  fs.truncateSync(path.join(svc.dataDir, 'blobs', hex.slice(0, 2), hex.slice(2, 4), hex), 10);
  const before = archivesIn(svc);
  const started = await startExport({ asset_ids: [ok.id, bad.id] });
  const task = await finished(started.body.task_id);
  expect(task.status).toBe('failed');
  expect(task.error_message).toMatch(/export failed/);
  expect(archivesIn(svc)).toEqual(before);
  expect(fs.readdirSync(path.join(svc.dataDir, 'blobs', '.tmp'))).toEqual([]);
});

test('a blob longer than its asset fails the export too, and leaves nothing', async () => {
  const bad = await upload('grown.bin');
  const hex = bad.asset_hash.slice('blake3:'.length);
  fs.appendFileSync(path.join(svc.dataDir, 'blobs', hex.slice(0, 2), hex.slice(2, 4), hex), Buffer.alloc(10));
  const before = archivesIn(svc);
  const started = await startExport({ asset_ids: [bad.id] });
  const task = await finished(started.body.task_id);
  expect(task.status).toBe('failed');
  expect(task.error_message).toMatch(/export failed: member grown.bin has more than/);
  expect(archivesIn(svc)).toEqual(before);
  expect(fs.readdirSync(path.join(svc.dataDir, 'blobs', '.tmp'))).toEqual([]);
});

test('naming strategies: group_by_job_id, group_by_job_time, asset_id; job filters and previews', async () => {
  const job = crypto.randomUUID();
  const preview = await upload('thumb.png');
  const a = await upload('out.png', { prompt_id: job, preview_id: preview.id });
  const b = await upload('other.png', { prompt_id: job });
  const loose = await upload('loose.bin');

  const byJob = await exportAndRead({ job_ids: [job], asset_ids: [loose.id], naming_strategy: 'group_by_job_id' });
  expect(byJob.members.map((m) => m.name).sort()).toEqual([`${job}/other.png`, `${job}/out.png`, 'loose.bin'].sort());

  const byTime = await exportAndRead({ job_ids: [job], naming_strategy: 'group_by_job_time' });
  const folder = `${new Date(a.created_at).toISOString().slice(0, 19).replace('T', '_').replace(/:/g, '-')}_${job}`;
  expect(byTime.members.map((m) => m.name).sort()).toEqual([`${folder}/other.png`, `${folder}/out.png`]);

  const byId = await exportAndRead({ asset_ids: [b.id], naming_strategy: 'asset_id' });
  expect(byId.members.map((m) => m.name)).toEqual([`${b.id}-other.png`]);

  const filtered = await exportAndRead({
    job_ids: [job],
    job_asset_name_filters: { [job]: ['out.png'] },
    include_previews: true,
    naming_strategy: 'preserve',
  });
  expect(filtered.members.map((m) => m.name)).toEqual(['out.png', 'thumb.png']);
  expect(filtered.members[1]!.blake3).toBe(preview.asset_hash);
});

test('a very long export name is not repeated whole in the answer', async () => {
  for (const name of [`${'a'.repeat(5000)}.zip`, `${'a'.repeat(5000)}.tar`]) {
    const res = await svc.fetch(`/api/assets/exports/${name}`);
    expect([404, 400]).toContain(res.status);
    const text = JSON.stringify(await json(res));
    expect(text.length).toBeLessThan(600);
  }
});

test("another owner's export is 404; their asset ids select nothing", async () => {
  const mine = await upload('mine.bin');
  const { task } = await exportAndRead({ asset_ids: [mine.id] });
  const res = await svc.fetch(`/api/assets/exports/${task.result.export_name}`, { key: KEYS.bob });
  expect(res.status).toBe(404);
  expect((await json(res)).code).toBe('EXPORT_NOT_FOUND');
  expect((await svc.fetch(`/api/tasks/${task.id}`, { key: KEYS.bob })).status).toBe(404);
  // Nothing of bob's is selected: completed as ComfyUI reports it, without success and without an archive.
  const theirs = await startExport({ asset_ids: [mine.id] }, KEYS.bob);
  const t = await finished(theirs.body.task_id, KEYS.bob);
  expect([t.result.success, t.result.assets_total, t.result.export_name]).toEqual([false, 0, undefined]);
  expect(t.result.failed_assets).toEqual([{ asset_id: mine.id, error: 'not_found' }]);
  expect((await svc.fetch(`/api/assets/exports/${crypto.randomUUID()}.zip`)).status).toBe(404);
});

test('a tampered or outdated signed URL is refused; the download needs no key but the URL needs one', async () => {
  const a = await upload('signed.bin');
  const { url } = await exportAndRead({ asset_ids: [a.id] });
  const u = new URL(url);
  const sig = u.searchParams.get('signature')!;
  const tampered = new URL(url);
  tampered.searchParams.set('signature', (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1));
  expect((await fetch(tampered)).status).toBe(403);
  const later = new URL(url);
  later.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 3600));
  expect((await fetch(later)).status).toBe(403);
  const other = new URL(url.replace(/exports\/[^/]+\/download/, `exports/${crypto.randomUUID()}.zip/download`));
  expect((await fetch(other)).status).toBe(403);
  expect((await svc.fetch(u.pathname.replace('/download', ''), { key: null })).status).toBe(401);
});

test('bad requests are 400 before any task', async () => {
  for (const body of [
    {},
    { asset_ids: [] },
    { asset_ids: ['nope'] },
    { asset_ids: [crypto.randomUUID()], naming_strategy: 'flat' },
    { job_ids: [crypto.randomUUID()], include_previews: 'yes' },
  ]) {
    const res = await startExport(body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('INVALID_BODY');
  }
});

test('GraphQL startExport returns the task; its result carries exportName', async () => {
  const a = await upload('gql.bin');
  const res = await gql(
    svc,
    `mutation($ids: [ID!]) { startExport(input: { assetIds: $ids, namingStrategy: "asset_id" }) { id taskName status } }`,
    { ids: [a.id] },
  );
  expect(res.errors).toBeUndefined();
  const started = res.data.startExport;
  expect(started.taskName).toBe('export_assets');
  await finished(started.id);
  const t = await gql(
    svc,
    `query($id: ID!) { task(id: $id) { status exportRequest { assetIds jobIds namingStrategy } result { exportName assetsTotal bytesTotal assetsSucceeded exportSize uncompressedSize } } }`,
    { id: started.id },
  );
  expect(t.data.task.status).toBe('completed');
  // What the export was asked for (the download-shaped payload has nothing of it).
  expect(t.data.task.exportRequest).toEqual({ assetIds: [a.id], jobIds: null, namingStrategy: 'asset_id' });
  expect(t.data.task.result.exportName).toMatch(/\.zip$/);
  expect(t.data.task.result.assetsTotal).toBe(1);
  expect(t.data.task.result).toMatchObject({
    assetsSucceeded: 1,
    exportSize: t.data.task.result.bytesTotal,
    uncompressedSize: a.size,
  });
  // Nothing left out: an empty list (REST leaves failed_assets out, as ComfyUI does).
  const failed = await gql(svc, `query($id: ID!) { task(id: $id) { result { failedAssets { assetId } } } }`, {
    id: started.id,
  });
  expect(failed.data.task.result.failedAssets).toEqual([]);
});

test('a task cancelled before its job ran leaves no archive', async () => {
  // A service without job workers (and its own database), so the job cannot start before the cancel.
  const api = await startTestService({ ROLE: 'api' });
  try {
    const a = await json(
      await api.fetch('/api/assets', { method: 'POST', body: uploadForm(crypto.randomBytes(100), { name: 'c.bin' }) }),
    );
    const res = await api.fetch('/api/assets/export', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ asset_ids: [a.id] }),
    });
    const { task_id } = await json(res);
    expect((await api.fetch(`/api/tasks/${task_id}`, { method: 'DELETE' })).status).toBe(200);
    await api.container.exports.run(task_id);
    const t = await json(await api.fetch(`/api/tasks/${task_id}`));
    expect(t.status).not.toBe('completed');
    expect(t.result ?? undefined).toBeUndefined();
    expect(archivesIn(api)).toEqual([]);
  } finally {
    await api.stop();
  }
});

test('an asset deleted before the job ran is a not_found failed asset; the others are archived', async () => {
  // No job workers here, so the deletion lands between the request and the job.
  const api = await startTestService({ ROLE: 'api' });
  try {
    const up = async (name: string) =>
      json(await api.fetch('/api/assets', { method: 'POST', body: uploadForm(crypto.randomBytes(100), { name }) }));
    const [stays, goes] = [await up('stays.bin'), await up('goes.bin')];
    const res = await api.fetch('/api/assets/export', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ asset_ids: [stays.id, goes.id] }),
    });
    const { task_id } = await json(res);
    expect((await api.fetch(`/api/assets/${goes.id}`, { method: 'DELETE' })).status).toBe(204);
    await api.container.exports.run(task_id);
    const t = await json(await api.fetch(`/api/tasks/${task_id}`));
    expect(t.status).toBe('completed');
    expect(t.result).toMatchObject({
      success: true,
      assets_total: 1,
      assets_failed: 0,
      failed_assets: [{ asset_id: goes.id, error: 'not_found' }],
    });
  } finally {
    await api.stop();
  }
});

test('a task cancelled while its archive is written leaves nothing', async () => {
  const api = await startTestService({ ROLE: 'api' });
  try {
    const a = await json(
      await api.fetch('/api/assets', {
        method: 'POST',
        body: uploadForm(crypto.randomBytes(256 * 1024), { name: 'slow.bin' }),
      }),
    );
    const { task_id } = await json(
      await api.fetch('/api/assets/export', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ asset_ids: [a.id] }),
      }),
    );
    const c = api.container;
    // A blob store whose reads trickle (4 KiB every 5 ms), so the cancel lands mid-archive.
    const slow = Object.create(c.blobStore) as typeof c.blobStore;
    slow.read = async (hash) => {
      const whole = await c.blobStore.read(hash);
      return Readable.from(
        (async function* () {
          for await (const chunk of whole as AsyncIterable<Buffer>) {
            for (let i = 0; i < chunk.length; i += 4096) {
              await new Promise((r) => setTimeout(r, 5));
              yield chunk.subarray(i, i + 4096);
            }
          }
        })(),
      );
    };
    const exporter = new ExportService({
      transactions: c.database.transactions,
      repo: new ExportRepository(c.database.prisma),
      secrets: new ServerSecretRepository(c.database.prisma),
      tasks: new TaskRepository(c.database.prisma, c.database.transactions),
      blobs: slow,
      queue: c.queue,
      logger: c.logger,
      ttlSeconds: 60,
      progressIntervalMs: 20,
    });
    const running = exporter.run(task_id);
    await waitFor(async () =>
      (await json(await api.fetch(`/api/tasks/${task_id}`))).progress.bytes_downloaded > 0 ? true : undefined,
    );
    expect((await api.fetch(`/api/tasks/${task_id}`, { method: 'DELETE' })).status).toBe(200);
    await running;
    const t = await json(await api.fetch(`/api/tasks/${task_id}`));
    expect(t.status).not.toBe('completed');
    expect(t.error_message).toMatch(/cancel/);
    expect(archivesIn(api)).toEqual([]);
    expect(fs.readdirSync(path.join(api.dataDir, 'blobs', '.tmp'))).toEqual([]);
  } finally {
    await api.stop();
  }
});

describe('expiry', () => {
  let short: TestService;
  beforeAll(async () => {
    short = await startTestService({ EXPORT_TTL_SECONDS: '1' });
  });
  afterAll(async () => {
    await short?.stop();
  });

  test('an expired export is 404 and the sweep removes its archive', async () => {
    const up = await short.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(crypto.randomBytes(100), { name: 'x' }),
    });
    const asset = await json(up);
    const started = await json(
      await short.fetch('/api/assets/export', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ asset_ids: [asset.id] }),
      }),
    );
    const task = await waitFor(async () => {
      const t = await json(await short.fetch(`/api/tasks/${started.task_id}`));
      return t.status === 'completed' ? t : undefined;
    });
    const archive = path.join(short.dataDir, 'blobs', '.objects', 'exports', task.result.export_name);
    expect(fs.existsSync(archive)).toBe(true);
    await waitFor(async () =>
      (await short.fetch(`/api/assets/exports/${task.result.export_name}`)).status === 404 ? true : undefined,
    );
    expect(await short.container.exports.sweepExpired()).toBeGreaterThanOrEqual(1);
    expect(fs.existsSync(archive)).toBe(false);
  });
});

test("the task's payload is the export request as sent (snake_case, validated and normalised)", async () => {
  const a = await upload('payload.bin');
  const job = crypto.randomUUID().toUpperCase();
  const body = {
    asset_ids: [a.id, a.id],
    job_ids: [job],
    job_asset_name_filters: { [job]: ['x.png', 'y.png', 'x.png'] },
    include_previews: true,
    naming_strategy: 'asset_id',
  };
  const started = await startExport(body);
  expect(started.status).toBe(202);
  const task = await finished(started.body.task_id);
  // Ids are deduplicated and lower-cased, filter names deduplicated; every field keeps its wire name.
  expect(task.payload).toEqual({
    asset_ids: [a.id],
    job_ids: [job.toLowerCase()],
    job_asset_name_filters: { [job.toLowerCase()]: ['x.png', 'y.png'] },
    include_previews: true,
    naming_strategy: 'asset_id',
  });
  const listed = await json(await svc.fetch('/api/tasks?task_name=export_assets&limit=100', { key: KEYS.alice }));
  expect(listed.tasks.find((t: { id: string }) => t.id === task.id).payload).toEqual(task.payload);

  // Left out by the client: the defaults, every field present, as ComfyUI's export task shows its payload.
  const minimal = await finished((await startExport({ asset_ids: [a.id] })).body.task_id);
  expect(minimal.payload).toEqual({
    job_ids: [],
    asset_ids: [a.id],
    naming_strategy: 'group_by_job_time',
    job_asset_name_filters: {},
    include_previews: false,
  });
});
