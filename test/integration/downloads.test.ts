import { bytes, startFakeProviders, type FakeProviders } from '../helpers/fake-providers';
import { COMPLETED_TASK_KEYS, partialFiles, startDownload, waitTask } from '../helpers/downloads';
import {
  blake3Of,
  json,
  KEYS,
  sha256Of,
  startTestService,
  uploadForm,
  waitFor,
  type TestService,
} from '../helpers/harness';

let fake: FakeProviders;
let svc: TestService;
const MiB = 1024 * 1024;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

beforeAll(async () => {
  fake = await startFakeProviders();
  svc = await startTestService({ ...fake.env, DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'false' }, { validateResponses: true });
});
afterAll(async () => {
  await svc?.stop();
  await fake?.close();
});

const postJson = (path: string, body: unknown, key: string = KEYS.alice) =>
  svc.fetch(path, { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('Hugging Face', () => {
  test('202 with a task, then completed with the right asset, hash and name; the CDN gets no token', async () => {
    const data = bytes(1.5 * MiB, 1);
    const url = fake.hf.lfs('org/model-a/unet/weights.safetensors', data);
    const blobUrl = url.replace('/resolve/', '/blob/') + '?download=true';
    const res = await startDownload(svc, {
      source_url: blobUrl,
      tags: ['Models', 'checkpoints'],
      user_metadata: { k: 1 },
    });
    expect(res.status).toBe(202);
    const started = await json(res);
    expect(Object.keys(started).sort()).toEqual(['message', 'status', 'task_id']);
    expect(started.status).toBe('created');
    expect(res.headers.get('location')).toBe(`/api/tasks/${started.task_id}`);

    const task = await waitTask(svc, started.task_id);
    expect(Object.keys(task).sort()).toEqual(COMPLETED_TASK_KEYS);
    expect(task).toMatchObject({
      id: started.task_id,
      // No Idempotency-Key sent: one derived from the task, never null.
      idempotency_key: `download_file:${started.task_id}`,
      task_name: 'download_file',
      payload: { source_url: url, tags: ['Models', 'checkpoints'], user_metadata: { k: 1 }, preview_id: null },
      status: 'completed',
      progress: { bytes_downloaded: data.length, bytes_total: data.length, progress: 1 },
      result: {
        success: true,
        asset_hash: blake3Of(data),
        filename: 'weights.safetensors',
        bytes_downloaded: data.length,
      },
    });
    expect('error_message' in task).toBe(false);
    for (const k of ['create_time', 'update_time', 'started_at', 'completed_at']) expect(task[k]).toMatch(ISO);

    const asset = await json(await svc.fetch(`/api/assets/${task.result.asset_id}`));
    expect(asset).toMatchObject({
      name: 'weights.safetensors',
      size: data.length,
      asset_hash: blake3Of(data),
      // Case kept (contract 2).
      tags: ['Models', 'checkpoints'],
      user_metadata: { k: 1, source_url: url },
      // Derived while the bytes streamed in: the file name, length, format and the download's source.
      metadata: {
        filename: 'weights.safetensors',
        content_length: data.length,
        source_url: url,
        format: 'safetensors',
      },
    });
    const content = Buffer.from(await (await svc.fetch(`/api/assets/${asset.id}/content`)).arrayBuffer());
    expect(content.equals(data)).toBe(true);

    // The token went to Hugging Face, not across the redirect to the CDN.
    const hfCalls = fake.hf.requests.filter((r) => r.path.endsWith('unet/weights.safetensors'));
    expect(hfCalls.map((r) => r.method)).toEqual(expect.arrayContaining(['HEAD', 'GET']));
    expect(hfCalls.every((r) => r.authorization === 'Bearer hf-token-1')).toBe(true);
    const cdnCalls = fake.cdn.requestsFor(fake.hf.cdnKeyOf('org/model-a/unet/weights.safetensors'));
    expect(cdnCalls).toHaveLength(1);
    expect(cdnCalls[0]!.headers.authorization).toBeUndefined();
    expect(partialFiles(svc.dataDir)).toEqual([]);

    // The hash is now known: the same URL answers 200 at once, for this owner and for another.
    const again = await startDownload(svc, { source_url: url });
    expect(again.status).toBe(200);
    expect(await json(again)).toMatchObject({ id: asset.id, created_new: false });
    const bobs = await startDownload(svc, { source_url: url, tags: ['bob'] }, KEYS.bob);
    expect(bobs.status).toBe(200);
    const bobAsset = await json(bobs);
    expect(bobAsset).toMatchObject({
      created_new: true,
      asset_hash: blake3Of(data),
      tags: ['bob'],
      name: 'weights.safetensors',
    });
    expect(bobAsset.id).not.toBe(asset.id);
    expect(fake.cdn.requestsFor(fake.hf.cdnKeyOf('org/model-a/unet/weights.safetensors'))).toHaveLength(1);
  });

  test('200 at once when the provider states the hash of content already stored', async () => {
    const data = bytes(300 * 1024, 2);
    const up = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(data, {}, 'local.bin') });
    expect(up.status).toBe(201);
    const url = fake.hf.lfs('org/model-b/model.bin', data);
    const res = await startDownload(svc, { source_url: url, tags: ['x'] }, KEYS.bob);
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({
      created_new: true,
      asset_hash: blake3Of(data),
      name: 'model.bin',
      tags: ['x'],
    });
    expect(fake.cdn.requestsFor(fake.hf.cdnKeyOf('org/model-b/model.bin'))).toHaveLength(0);
    // Alice uploaded it herself: her existing asset comes back.
    const alice = await startDownload(svc, { source_url: url });
    expect(alice.status).toBe(200);
    expect(await json(alice)).toMatchObject({ created_new: false, name: 'local.bin' });
  });

  test('a small non-LFS file (no hash stated) downloads, and the second request answers from the URL map', async () => {
    const data = Buffer.from('{"architectures": ["UNet"]}\n');
    fake.hf.files.set('org/model-c/config.json', { data });
    const url = `${fake.hf.url}/org/model-c/resolve/main/config.json`;
    const res = await startDownload(svc, { source_url: url });
    expect(res.status).toBe(202);
    const task = await waitTask(svc, (await json(res)).task_id);
    expect(task.status).toBe('completed');
    expect(task.result.asset_hash).toBe(blake3Of(data));
    const again = await startDownload(svc, { source_url: url }, KEYS.bob);
    expect(again.status).toBe(200);
    expect(await json(again)).toMatchObject({ created_new: true, name: 'config.json', asset_hash: blake3Of(data) });
  });

  test('progress is visible while a throttled download runs', async () => {
    const data = bytes(3 * MiB, 4);
    const url = fake.hf.lfs('org/model-d/slow.safetensors', data, { throttle: 1 * MiB });
    const { task_id } = await json(await startDownload(svc, { source_url: url }));
    const running = await waitTask(svc, task_id, {
      until: (t) =>
        t.status === 'running' && t.progress.bytes_downloaded > 0 && t.progress.bytes_downloaded < data.length,
    });
    expect(running.progress.bytes_total).toBe(data.length);
    expect(running.progress.progress).toBeGreaterThan(0);
    expect(running.progress.progress).toBeLessThan(1);
    expect(running.started_at).toMatch(ISO);
    // Not there yet: left out, never null.
    expect('completed_at' in running).toBe(false);
    expect('result' in running).toBe(false);
    const later = await waitTask(svc, task_id, {
      until: (t) => t.status !== 'running' || t.progress.bytes_downloaded > running.progress.bytes_downloaded,
    });
    expect(later.progress.bytes_downloaded).toBeGreaterThan(running.progress.bytes_downloaded);
    expect((await waitTask(svc, task_id)).status).toBe('completed');
  });

  test('a hash mismatch fails the task and stores nothing', async () => {
    const data = bytes(512 * 1024, 5);
    const url = fake.hf.lfs('org/model-e/liar.safetensors', data, {}, { sha256: 'ab'.repeat(32) });
    const { task_id } = await json(await startDownload(svc, { source_url: url }));
    const task = await waitTask(svc, task_id);
    expect(task.status).toBe('failed');
    expect('result' in task).toBe(false);
    expect(task.error_message).toMatch(/^HASH_MISMATCH: /);
    expect((await svc.fetch(`/api/assets/hash/${blake3Of(data)}`, { method: 'HEAD' })).status).toBe(404);
    expect((await svc.fetch(`/api/assets/hash/${sha256Of(data)}`, { method: 'HEAD' })).status).toBe(404);
    expect(partialFiles(svc.dataDir)).toEqual([]);
  });

  test('gated repository: 403 SOURCE_AUTH_REQUIRED; missing file: 404 SOURCE_NOT_FOUND', async () => {
    fake.hf.lfs('gated/model/w.safetensors', bytes(1000, 6));
    fake.hf.gated.set('gated/model', 'a-token-we-do-not-have');
    const gated = await startDownload(svc, { source_url: `${fake.hf.url}/gated/model/resolve/main/w.safetensors` });
    expect(gated.status).toBe(403);
    expect(await json(gated)).toMatchObject({ code: 'SOURCE_AUTH_REQUIRED' });
    const missing = await startDownload(svc, { source_url: `${fake.hf.url}/org/model-a/resolve/main/nope.bin` });
    expect(missing.status).toBe(404);
    expect(await json(missing)).toMatchObject({ code: 'SOURCE_NOT_FOUND' });
  });

  test('a CDN 404 after the redirect fails the task without retrying', async () => {
    const url = fake.hf.lfs('org/model-f/gone.bin', bytes(1000, 7));
    fake.cdn.update(fake.hf.cdnKeyOf('org/model-f/gone.bin'), { failFirst: { status: 404, times: 100 } });
    const { task_id } = await json(await startDownload(svc, { source_url: url }));
    const task = await waitTask(svc, task_id);
    expect(task.status).toBe('failed');
    expect(task.error_message).toMatch(/^SOURCE_NOT_FOUND: /);
    expect(fake.cdn.requestsFor(fake.hf.cdnKeyOf('org/model-f/gone.bin'))).toHaveLength(1);
  });
});

describe('Civitai', () => {
  test('a model page URL (?modelVersionId=), as the ComfyUI import wizard sends it, downloads that version', async () => {
    const data = bytes(64 * 1024, 9);
    fake.civitai.add(150, { data, name: 'from_page.safetensors' });
    const res = await startDownload(svc, {
      source_url: `${fake.civitai.url}/models/77/some-lora?modelVersionId=150`,
      tags: ['models', 'loras'],
    });
    expect(res.status).toBe(202);
    const task = await waitTask(svc, (await json(res)).task_id);
    expect(task.status).toBe('completed');
    expect(task.payload.source_url).toBe(`${fake.civitai.url}/api/download/models/150`);
    expect(task.result).toMatchObject({ asset_hash: blake3Of(data), filename: 'from_page.safetensors' });
    // Without a version: the model's newest one.
    fake.civitai.add(151, { data: bytes(32 * 1024, 10), name: 'newest.safetensors', modelId: 78 });
    const latest = await startDownload(svc, {
      source_url: `${fake.civitai.url}/models/78/some-lora`,
      tags: ['models', 'loras'],
    });
    expect(latest.status).toBe(202);
    const t2 = await waitTask(svc, (await json(latest)).task_id);
    expect([t2.status, t2.payload.source_url, t2.result?.filename]).toEqual([
      'completed',
      `${fake.civitai.url}/api/download/models/151`,
      'newest.safetensors',
    ]);
    // A retry with the same Idempotency-Key is the first task, even once the model page no longer resolves.
    fake.civitai.add(152, { data: bytes(32 * 1024, 11), name: 'keyed.safetensors', modelId: 79 });
    const keyed = await startDownload(svc, { source_url: `${fake.civitai.url}/models/79` }, KEYS.alice, {
      'idempotency-key': 'model-page-79',
    });
    expect(keyed.status).toBe(202);
    const first = (await json(keyed)).task_id;
    fake.civitai.versions.delete('152');
    const again = await startDownload(svc, { source_url: `${fake.civitai.url}/models/79` }, KEYS.alice, {
      'idempotency-key': 'model-page-79',
    });
    expect([again.status, (await json(again)).task_id]).toEqual([202, first]);
  });

  test('202 → completed: hash from model-versions, name from the presigned redirect, no token on the presigned URL', async () => {
    const data = bytes(MiB, 8);
    const url = fake.civitai.add(101, { data, name: 'dreamy_v2.safetensors' });
    const res = await startDownload(svc, { source_url: url + '&token=secret' });
    expect(res.status).toBe(202);
    const task = await waitTask(svc, (await json(res)).task_id);
    expect(task.status).toBe('completed');
    expect(task.payload.source_url).toBe(`${fake.civitai.url}/api/download/models/101?type=Model&format=SafeTensor`);
    expect(task.result).toMatchObject({ asset_hash: blake3Of(data), filename: 'dreamy_v2.safetensors' });
    const calls = fake.civitai.requests.filter((r) => r.path.endsWith('/101'));
    expect(calls.map((r) => r.path)).toEqual(
      expect.arrayContaining(['/api/v1/model-versions/101', '/api/download/models/101']),
    );
    expect(calls.every((r) => r.authorization === `Bearer ${fake.civitai.token}`)).toBe(true);
    const cdn = fake.cdn.requestsFor(fake.civitai.versions.get('101')!.cdnKey);
    expect(cdn.map((r) => [r.status, r.headers.authorization])).toEqual([[200, undefined]]);
    // Known now by its listed SHA-256.
    const again = await startDownload(svc, { source_url: url }, KEYS.bob);
    expect(again.status).toBe(200);
    expect(await json(again)).toMatchObject({ name: 'dreamy_v2.safetensors', created_new: true });
  });

  test('unknown version: 404 SOURCE_NOT_FOUND; early access without access: task failed SOURCE_AUTH_REQUIRED', async () => {
    const missing = await startDownload(svc, { source_url: `${fake.civitai.url}/api/download/models/999999` });
    expect(missing.status).toBe(404);
    expect(await json(missing)).toMatchObject({ code: 'SOURCE_NOT_FOUND' });
    const url = fake.civitai.add(102, { data: bytes(1000, 9), name: 'early.safetensors', earlyAccess: true });
    const saved = fake.civitai.token;
    fake.civitai.token = 'someone-else';
    try {
      const { task_id } = await json(await startDownload(svc, { source_url: url }));
      const task = await waitTask(svc, task_id);
      expect(task.status).toBe('failed');
      expect(task.error_message).toMatch(/^SOURCE_AUTH_REQUIRED: /);
    } finally {
      fake.civitai.token = saved;
    }
  });
});

describe('requests', () => {
  test('only the configured providers: 400 SOURCE_NOT_ALLOWED; bad bodies: 400', async () => {
    for (const source_url of [
      'https://example.com/a.bin',
      'ftp://x/y',
      `${fake.hf.url}/org/model-a`,
      `${fake.civitai.url}/user/5`,
      'not a url',
    ]) {
      const res = await startDownload(svc, { source_url });
      expect([source_url, res.status, (await json(res)).code]).toEqual([source_url, 400, 'SOURCE_NOT_ALLOWED']);
    }
    expect((await startDownload(svc, {})).status).toBe(400);
    const badTags = await startDownload(svc, { source_url: `${fake.hf.url}/o/r/resolve/main/f`, tags: 'x' });
    expect(await json(badTags)).toMatchObject({ code: 'INVALID_BODY' });
    const badPreview = await startDownload(svc, {
      source_url: `${fake.hf.url}/o/r/resolve/main/f`,
      preview_id: crypto.randomUUID(),
    });
    expect(await json(badPreview)).toMatchObject({ code: 'INVALID_PREVIEW_ID' });
    const text = await svc.fetch('/api/assets/download', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(text.status).toBe(415);
  });

  test('in-flight dedupe: same owner gets the same task; two owners share one transfer and each gets an asset', async () => {
    const data = bytes(2 * MiB, 10);
    const url = fake.hf.lfs('org/shared/big.safetensors', data, { throttle: 2 * MiB });
    const a1 = await json(await startDownload(svc, { source_url: url, tags: ['a'] }));
    const a2res = await startDownload(svc, { source_url: url, tags: ['ignored'] });
    expect(a2res.status).toBe(202);
    expect((await json(a2res)).task_id).toBe(a1.task_id);
    const b1 = await json(await startDownload(svc, { source_url: url, tags: ['b'] }, KEYS.bob));
    expect(b1.task_id).not.toBe(a1.task_id);
    const [ta, tb] = await Promise.all([waitTask(svc, a1.task_id), waitTask(svc, b1.task_id, { key: KEYS.bob })]);
    expect([ta.status, tb.status]).toEqual(['completed', 'completed']);
    expect(ta.result.asset_hash).toBe(blake3Of(data));
    expect(tb.result.asset_hash).toBe(blake3Of(data));
    expect(ta.result.asset_id).not.toBe(tb.result.asset_id);
    expect((await svc.fetch(`/api/assets/${tb.result.asset_id}`, { key: KEYS.bob })).status).toBe(200);
    expect((await svc.fetch(`/api/assets/${tb.result.asset_id}`)).status).toBe(404);
    expect(await json(await svc.fetch(`/api/assets/${ta.result.asset_id}`))).toMatchObject({ tags: ['a'] });
    expect(
      fake.cdn.requestsFor(fake.hf.cdnKeyOf('org/shared/big.safetensors')).filter((r) => r.method === 'GET'),
    ).toHaveLength(1);
  });

  test('Idempotency-Key: the same key answers with the same task', async () => {
    const url = fake.hf.lfs('org/idem/f.bin', bytes(64 * 1024, 11), { throttle: 256 * 1024 });
    const first = await json(
      await startDownload(svc, { source_url: url }, KEYS.alice, { 'idempotency-key': 'job-42' }),
    );
    const task = await waitTask(svc, first.task_id);
    expect(task.idempotency_key).toBe('job-42');
    const again = await startDownload(svc, { source_url: url }, KEYS.alice, { 'idempotency-key': 'job-42' });
    expect(again.status).toBe(202);
    expect(await json(again)).toMatchObject({ task_id: first.task_id, status: 'completed' });
  });
});

describe('POST /api/assets with a JSON url', () => {
  test('fetches synchronously: 201, then 200 for the same content', async () => {
    const data = bytes(700 * 1024, 12);
    const url = fake.civitai.add(201, { data, name: 'sync.safetensors' });
    const res = await postJson('/api/assets', { url, tags: ['Sync'], user_metadata: { a: 1 } });
    expect(res.status).toBe(201);
    const asset = await json(res);
    expect(asset).toMatchObject({
      created_new: true,
      name: 'sync.safetensors',
      asset_hash: blake3Of(data),
      tags: ['Sync'],
      size: data.length,
    });
    expect(asset.user_metadata).toMatchObject({ a: 1 });
    const again = await postJson('/api/assets', { url, name: 'other' });
    expect(again.status).toBe(200);
    expect(await json(again)).toMatchObject({ id: asset.id, created_new: false });
  });

  test('error mapping: 403 SOURCE_AUTH_REQUIRED, 404 SOURCE_NOT_FOUND, 422 DOWNLOAD_FAILED, 400 SOURCE_NOT_ALLOWED, 400 HASH_MISMATCH', async () => {
    const gated = await postJson('/api/assets', { url: `${fake.hf.url}/gated/model/resolve/main/w.safetensors` });
    expect([gated.status, (await json(gated)).code]).toEqual([403, 'SOURCE_AUTH_REQUIRED']);
    const missing = await postJson('/api/assets', { url: `${fake.hf.url}/org/model-a/resolve/main/missing.bin` });
    expect([missing.status, (await json(missing)).code]).toEqual([404, 'SOURCE_NOT_FOUND']);
    const url = fake.hf.lfs('org/broken/f.bin', bytes(1000, 13), { failFirst: { status: 500, times: 100 } });
    const broken = await postJson('/api/assets', { url });
    expect([broken.status, (await json(broken)).code]).toEqual([422, 'DOWNLOAD_FAILED']);
    const other = await postJson('/api/assets', { url: 'https://example.com/f.bin' });
    expect([other.status, (await json(other)).code]).toEqual([400, 'SOURCE_NOT_ALLOWED']);
    const liar = fake.hf.lfs('org/liar/f.bin', bytes(1000, 14), {}, { sha256: 'cd'.repeat(32) });
    const mismatch = await postJson('/api/assets', { url: liar });
    expect([mismatch.status, (await json(mismatch)).code]).toEqual([400, 'HASH_MISMATCH']);
    await waitFor(async () => (partialFiles(svc.dataDir).length === 0 ? true : undefined));
  });
});
