import { bytes, startFakeProviders, type FakeProviders } from '../helpers/fake-providers';
import { getTask, partialFiles, startDownload, waitTask } from '../helpers/downloads';
import { blake3Of, json, KEYS, startTestService, waitFor, type TestService } from '../helpers/harness';
import { StoreUnavailableError } from '../../src/infra/errors';
import { HttpFetcher } from '../../src/infra/http-fetch';

let fake: FakeProviders;
let svc: TestService;
const MiB = 1024 * 1024;

beforeAll(async () => {
  fake = await startFakeProviders();
  svc = await startTestService({ ...fake.env, DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'false' }, { validateResponses: true });
});
afterAll(async () => {
  await svc?.stop();
  await fake?.close();
});

const gets = (key: string) => fake.cdn.requestsFor(key).filter((r) => r.method === 'GET');

test('a connection dropped halfway is resumed with Range + If-Range and completes', async () => {
  const data = bytes(2 * MiB, 21);
  const url = fake.hf.lfs('org/resume/drop.safetensors', data, { dropAfter: MiB + 12345 });
  const key = fake.hf.cdnKeyOf('org/resume/drop.safetensors');
  const { task_id } = await json(await startDownload(svc, { source_url: url }));
  const task = await waitTask(svc, task_id);
  expect(task.status).toBe('completed');
  expect(task.result.asset_hash).toBe(blake3Of(data));
  const reqs = gets(key);
  expect(reqs).toHaveLength(2);
  expect(reqs[0]!.headers.range).toBeUndefined();
  const offset = Number(/^bytes=(\d+)-$/.exec(reqs[1]!.headers.range ?? '')?.[1]);
  expect(offset).toBe(MiB + 12345);
  expect(reqs[1]!.headers['if-range']).toMatch(/^"[0-9a-f]{32}"$/);
  expect(reqs[1]!.status).toBe(206);
  // Not one byte fetched twice.
  expect(fake.cdn.bytesSent(key)).toBe(data.length);
  expect(partialFiles(svc.dataDir)).toEqual([]);
});

test('a server that ignores Range makes the download start over from zero', async () => {
  const data = bytes(MiB, 22);
  const url = fake.hf.lfs('org/resume/norange.bin', data, { dropAfter: 600 * 1024, ignoreRange: true });
  const key = fake.hf.cdnKeyOf('org/resume/norange.bin');
  const { task_id } = await json(await startDownload(svc, { source_url: url }));
  const task = await waitTask(svc, task_id);
  expect(task.status).toBe('completed');
  expect(task.result.asset_hash).toBe(blake3Of(data));
  const reqs = gets(key);
  expect(reqs.map((r) => [r.status, r.headers.range])).toEqual([
    [200, undefined],
    [200, `bytes=${600 * 1024}-`],
  ]);
  expect(fake.cdn.bytesSent(key)).toBe(600 * 1024 + data.length);
});

test('a file that changed between attempts (If-Range no longer matches) is fetched again from zero', async () => {
  const data = bytes(MiB, 23);
  const changed = bytes(MiB, 24);
  fake.cdn.put('changing', data, { dropAfter: 300 * 1024, etag: '"v1"' });
  fake.hf.files.set('org/resume/changing.bin', { cdnKey: 'changing', data, hideHash: true });
  const url = `${fake.hf.url}/org/resume/resolve/main/changing.bin`;
  const { task_id } = await json(await startDownload(svc, { source_url: url }));
  // The first GET drops; before the retry the file changes under a new ETag.
  await waitFor(async () => (gets('changing')[0]?.aborted ? true : undefined));
  fake.cdn.update('changing', { data: changed, etag: '"v2"' });
  const task = await waitTask(svc, task_id);
  expect(task.status).toBe('completed');
  expect(task.result.asset_hash).toBe(blake3Of(changed));
  const reqs = gets('changing');
  expect(reqs.map((r) => [r.status, r.headers.range, r.headers['if-range']])).toEqual([
    [200, undefined, undefined],
    [200, `bytes=${300 * 1024}-`, '"v1"'],
  ]);
});

test('5xx and 429 are retried with backoff, honouring Retry-After', async () => {
  const data = bytes(300 * 1024, 25);
  const url = fake.hf.lfs('org/retry/flaky.bin', data, { failFirst: { status: 503, times: 2, retryAfter: '1' } });
  const key = fake.hf.cdnKeyOf('org/retry/flaky.bin');
  const started = Date.now();
  const { task_id } = await json(await startDownload(svc, { source_url: url }));
  const task = await waitTask(svc, task_id);
  expect(task.status).toBe('completed');
  const reqs = gets(key);
  expect(reqs.map((r) => r.status)).toEqual([503, 503, 200]);
  expect(Date.now() - started).toBeGreaterThanOrEqual(1800);

  const url429 = fake.hf.lfs('org/retry/limited.bin', bytes(1000, 26), {
    failFirst: { status: 429, times: 1, retryAfter: '1' },
  });
  const t2 = await waitTask(svc, (await json(await startDownload(svc, { source_url: url429 }))).task_id);
  expect(t2.status).toBe('completed');
});

test('cancel stops the transfer within a second and removes its partial file', async () => {
  const data = bytes(4 * MiB, 27);
  const url = fake.hf.lfs('org/cancel/slow.bin', data, { throttle: 256 * 1024 });
  const key = fake.hf.cdnKeyOf('org/cancel/slow.bin');
  const { task_id } = await json(await startDownload(svc, { source_url: url }));
  await waitTask(svc, task_id, { until: (t) => t.status === 'running' && t.progress.bytes_downloaded > 0 });
  await waitFor(async () => (partialFiles(svc.dataDir).length > 0 ? true : undefined));
  const t0 = Date.now();
  const res = await svc.fetch(`/api/tasks/${task_id}`, { method: 'DELETE' });
  expect(res.status).toBe(200);
  const cancelled = await json(res);
  expect(cancelled).toMatchObject({ id: task_id, status: 'cancelled' });
  expect('result' in cancelled).toBe(false);
  expect(cancelled.error_message).toMatch(/cancelled/);
  expect(cancelled.completed_at).toMatch(/Z$/);
  await waitFor(async () => (partialFiles(svc.dataDir).length === 0 && gets(key)[0]!.aborted ? true : undefined), {
    timeoutMs: 1000,
    intervalMs: 20,
  });
  expect(Date.now() - t0).toBeLessThan(1500);
  expect(fake.cdn.bytesSent(key)).toBeLessThan(data.length);
  // Cancelling a finished task is 409 TASK_NOT_CANCELLABLE; the task stays as it was.
  const again = await svc.fetch(`/api/tasks/${task_id}`, { method: 'DELETE' });
  expect(again.status).toBe(409);
  expect((await json(again)).code).toBe('TASK_NOT_CANCELLABLE');
  expect(await getTask(svc, task_id)).toEqual(cancelled);
  expect((await svc.fetch(`/api/assets/hash/${blake3Of(data)}`, { method: 'HEAD' })).status).toBe(404);
});

test("cancelling one owner's task leaves the shared transfer running for the other", async () => {
  const data = bytes(MiB, 28);
  const url = fake.hf.lfs('org/cancel/shared.bin', data, { throttle: MiB });
  const a = await json(await startDownload(svc, { source_url: url }));
  const b = await json(await startDownload(svc, { source_url: url }, KEYS.bob));
  expect((await svc.fetch(`/api/tasks/${a.task_id}`, { method: 'DELETE' })).status).toBe(200);
  const tb = await waitTask(svc, b.task_id, { key: KEYS.bob });
  expect(tb.status).toBe('completed');
  expect(tb.result.asset_hash).toBe(blake3Of(data));
  expect((await getTask(svc, a.task_id)).status).toBe('cancelled');
});

test('an endless redirect chain fails after 10 hops; an error body is never stored', async () => {
  fake.hf.files.set('org/loop/f.bin', { data: bytes(10, 30), location: `${fake.cdn.url}/loop/0`, hideHash: true });
  const url = `${fake.hf.url}/org/loop/resolve/main/f.bin`;
  const task = await waitTask(svc, (await json(await startDownload(svc, { source_url: url }))).task_id);
  expect(task.status).toBe('failed');
  expect(task.error_message).toMatch(/^DOWNLOAD_FAILED: more than 10 redirects/);
  // Ten redirects are followed (Hugging Face's and nine on the CDN); the eleventh is refused.
  expect(fake.cdn.requests.filter((r) => r.path.startsWith('/loop/')).length).toBe(10);

  const failing = fake.hf.lfs('org/loop/err.bin', bytes(10, 31), { failFirst: { status: 500, times: 100 } });
  const sync = await svc.fetch('/api/assets', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: failing }),
  });
  expect(sync.status).toBe(422);
  expect((await svc.fetch(`/api/assets/hash/${blake3Of(Buffer.from('try later'))}`, { method: 'HEAD' })).status).toBe(
    404,
  );
  expect(partialFiles(svc.dataDir)).toEqual([]);
});

describe('with DOWNLOAD_BLOCK_PRIVATE_NETWORKS on (the default)', () => {
  let guarded: TestService;
  beforeAll(async () => {
    guarded = await startTestService({ ...fake.env });
  });
  afterAll(async () => {
    await guarded?.stop();
  });

  test('a redirect to 127.0.0.1 on another port fails the task with a clear message; nothing is fetched', async () => {
    const url = fake.hf.lfs('org/blocked/f.bin', bytes(1000, 29));
    const res = await startDownload(guarded, { source_url: url });
    expect(res.status).toBe(202);
    const task = await waitTask(guarded, (await json(res)).task_id);
    expect(task.status).toBe('failed');
    expect(task.error_message).toMatch(
      /^DOWNLOAD_FAILED: refused to connect to 127\.0\.0\.1:\d+: a loopback, private, link-local or metadata address/,
    );
    expect(fake.cdn.requestsFor(fake.hf.cdnKeyOf('org/blocked/f.bin'))).toHaveLength(0);

    const sync = await guarded.fetch('/api/assets', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url }),
    });
    expect(sync.status).toBe(422);
    expect(await json(sync)).toMatchObject({ code: 'DOWNLOAD_FAILED' });
  });
});

test('the hashing worker dying mid-download: the hash state is rebuilt from the partial file and the download completes', async () => {
  const data = bytes(5 * MiB, 23);
  const url = fake.hf.lfs('org/resume/worker-dies.safetensors', data, { throttle: MiB }); // ~5 s
  const key = fake.hf.cdnKeyOf('org/resume/worker-dies.safetensors');
  const { task_id } = await json(await startDownload(svc, { source_url: url }));
  await waitTask(svc, task_id, { until: (t) => t.progress.bytes_downloaded >= MiB, timeoutMs: 30_000 });
  const pool = svc.container.ingestWorkers as unknown as {
    workers: Array<{ worker: { terminate(): Promise<number> } } | undefined>;
  };
  await Promise.all(pool.workers.filter((w) => w !== undefined).map((w) => w.worker.terminate()));
  const task = await waitTask(svc, task_id, { timeoutMs: 30_000 });
  expect(task.status).toBe('completed');
  expect(task.result.asset_hash).toBe(blake3Of(data));
  const reqs = gets(key);
  expect(reqs.length).toBe(2);
  expect(reqs[1]!.headers.range).toMatch(/^bytes=\d+-$/);
  expect(partialFiles(svc.dataDir)).toEqual([]);
});

test("this service's own blob store unavailable during a download is retried (from the bytes kept), not a failed task", async () => {
  const data = bytes(2 * MiB, 27);
  const url = fake.hf.lfs('org/resume/store-away.safetensors', data);
  const store = svc.container.blobStore;
  const spy = jest.spyOn(store, 'openPartial').mockImplementationOnce(async () => {
    throw new StoreUnavailableError('blob store');
  });
  try {
    const { task_id } = await json(await startDownload(svc, { source_url: url }));
    const task = await waitTask(svc, task_id, { timeoutMs: 40_000 });
    expect(spy).toHaveBeenCalled();
    expect([task.status, task.result?.asset_hash]).toEqual(['completed', blake3Of(data)]);
  } finally {
    spy.mockRestore();
  }
});

test("a task's body is fetched on an ingest worker: this thread makes only the provider's probe", async () => {
  const data = bytes(3 * MiB, 31);
  const url = fake.hf.lfs('org/resume/on-worker.safetensors', data);
  const key = fake.hf.cdnKeyOf('org/resume/on-worker.safetensors');
  // The worker builds its own HttpFetcher from its module copy: a spy here sees this thread's requests only.
  const open = jest.spyOn(HttpFetcher.prototype, 'open');
  try {
    const { task_id } = await json(await startDownload(svc, { source_url: url }));
    const task = await waitTask(svc, task_id);
    expect([task.status, task.result.asset_hash]).toEqual(['completed', blake3Of(data)]);
    expect(gets(key)).toHaveLength(1);
    const here = open.mock.calls.filter(([u]) => String(u).includes('on-worker'));
    expect(here.map(([, o]) => o?.method ?? 'GET')).not.toContain('GET');
  } finally {
    open.mockRestore();
  }
});
