import { bytes, startFakeProviders, type FakeProviders } from '../helpers/fake-providers';
import { startDownload, TASK_KEYS, waitTask } from '../helpers/downloads';
import { json, KEYS, startTestService, type TestService } from '../helpers/harness';

let fake: FakeProviders;
let svc: TestService;
/** Alice's tasks, oldest first: three completed, two failed. */
const ids: string[] = [];
let midpoint = '';

beforeAll(async () => {
  fake = await startFakeProviders();
  svc = await startTestService({ ...fake.env, DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'false' }, { validateResponses: true });
  for (let i = 0; i < 5; i++) {
    const failing = i === 1 || i === 3;
    const url = fake.hf.lfs(
      `org/list/f${i}.bin`,
      bytes(2000 + i, 100 + i),
      {},
      failing ? { sha256: 'ef'.repeat(32) } : {},
    );
    const res = await startDownload(svc, { source_url: url, tags: [`t${i}`] }, KEYS.alice, {
      'idempotency-key': `key-${i}`,
    });
    expect(res.status).toBe(202);
    ids.push((await json(res)).task_id);
    if (i === 2) {
      await new Promise((r) => setTimeout(r, 20)); // create_time has millisecond precision
      midpoint = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  for (const id of ids) await waitTask(svc, id);
});
afterAll(async () => {
  await svc?.stop();
  await fake?.close();
});

const list = async (query: string, key: string = KEYS.alice) => {
  const res = await svc.fetch(`/api/tasks${query}`, { key });
  return { status: res.status, body: await json(res) };
};

test('GET /api/tasks: shape, default order newest first, total', async () => {
  const { status, body } = await list('');
  expect(status).toBe(200);
  expect(Object.keys(body).sort()).toEqual(['pagination', 'tasks']);
  expect(body.pagination).toEqual({ offset: 0, limit: 20, total: 5, has_more: false });
  expect(body.tasks.map((t: { id: string }) => t.id)).toEqual([...ids].reverse());
  for (const t of body.tasks) {
    // Only fields with a value: a subset of the task fields, no null but payload.preview_id.
    expect(Object.keys(t).filter((k) => !TASK_KEYS.includes(k))).toEqual([]);
    expect(Object.entries(t).filter(([, v]) => v === null)).toEqual([]);
    expect(typeof t.idempotency_key).toBe('string');
  }
});

test('filters: status (comma-separated), task_name, idempotency_key, created_after/before, sort_order', async () => {
  const completed = await list('?status=completed');
  expect(completed.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[4], ids[2], ids[0]]);
  expect((await list('?status=failed')).body.pagination.total).toBe(2);
  expect((await list('?status=failed,completed')).body.pagination.total).toBe(5);
  expect((await list('?status=running&status=created')).body.pagination.total).toBe(0);
  expect((await list('?task_name=download_file')).body.pagination.total).toBe(5);
  expect((await list('?task_name=other')).body.pagination.total).toBe(0);
  const byKey = await list('?idempotency_key=key-3');
  expect(byKey.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[3]]);
  expect(byKey.body.tasks[0].status).toBe('failed');
  expect(byKey.body.tasks[0].error_message).toMatch(/^HASH_MISMATCH/);
  const after = await list(`?created_after=${encodeURIComponent(midpoint)}`);
  expect(after.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[4], ids[3]]);
  const before = await list(`?created_before=${encodeURIComponent(midpoint)}&sort_order=asc`);
  expect(before.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[0], ids[1], ids[2]]);
  expect((await list('?sort_order=asc')).body.tasks.map((t: { id: string }) => t.id)).toEqual(ids);
});

test('pagination: offset and limit, has_more', async () => {
  const p1 = await list('?limit=2&sort_order=asc');
  expect(p1.body.pagination).toEqual({ offset: 0, limit: 2, total: 5, has_more: true });
  expect(p1.body.tasks.map((t: { id: string }) => t.id)).toEqual(ids.slice(0, 2));
  const p2 = await list('?limit=2&offset=2&sort_order=asc');
  expect(p2.body.tasks.map((t: { id: string }) => t.id)).toEqual(ids.slice(2, 4));
  expect(p2.body.pagination.has_more).toBe(true);
  const p3 = await list('?limit=2&offset=4&sort_order=asc');
  expect(p3.body.tasks.map((t: { id: string }) => t.id)).toEqual(ids.slice(4));
  expect(p3.body.pagination).toEqual({ offset: 4, limit: 2, total: 5, has_more: false });
  expect((await list('?offset=50')).body.tasks).toEqual([]);
  expect((await list('?limit=100')).status).toBe(200);
});

test('bad query parameters: 400 INVALID_QUERY', async () => {
  for (const q of [
    '?limit=0',
    '?limit=101',
    '?offset=-1',
    '?status=bogus',
    '?sort_order=up',
    '?created_after=yesterday',
    '?limit=abc',
  ]) {
    const r = await list(q);
    expect([q, r.status, r.body.code]).toEqual([q, 400, 'INVALID_QUERY']);
  }
});

test("owner isolation: another owner's task is 404 TASK_NOT_FOUND everywhere", async () => {
  const id = ids[0]!;
  const get = await svc.fetch(`/api/tasks/${id}`, { key: KEYS.bob });
  expect(get.status).toBe(404);
  expect(await json(get)).toMatchObject({ code: 'TASK_NOT_FOUND' });
  const del = await svc.fetch(`/api/tasks/${id}`, { method: 'DELETE', key: KEYS.bob });
  expect(del.status).toBe(404);
  expect(await json(del)).toMatchObject({ code: 'TASK_NOT_FOUND' });
  expect((await list('', KEYS.bob)).body.pagination.total).toBe(0);
  expect((await list('?idempotency_key=key-0', KEYS.bob)).body.tasks).toEqual([]);
  const unknown = await svc.fetch(`/api/tasks/${crypto.randomUUID()}`);
  expect(unknown.status).toBe(404);
  const badId = await svc.fetch('/api/tasks/not-a-uuid');
  expect([badId.status, (await json(badId)).code]).toEqual([400, 'INVALID_ID']);
  expect((await svc.fetch('/api/tasks', { key: null })).status).toBe(401);
  // Bob's own idempotency key does not collide with Alice's.
  const url = fake.hf.lfs('org/list/bob.bin', bytes(1000, 200));
  const bobs = await startDownload(svc, { source_url: url }, KEYS.bob, { 'idempotency-key': 'key-0' });
  expect(bobs.status).toBe(202);
  expect((await json(bobs)).task_id).not.toBe(id);
});

test('DELETE on a finished task is 409 TASK_NOT_CANCELLABLE and changes nothing', async () => {
  const before = await json(await svc.fetch(`/api/tasks/${ids[0]}`));
  const res = await svc.fetch(`/api/tasks/${ids[0]}`, { method: 'DELETE' });
  expect(res.status).toBe(409);
  expect((await json(res)).code).toBe('TASK_NOT_CANCELLABLE');
  expect(await json(await svc.fetch(`/api/tasks/${ids[0]}`))).toEqual(before);
  expect(before.status).toBe('completed');
});

test('idempotency_key is always a string: derived from the task when the client sent none, and filterable', async () => {
  const started = await startDownload(svc, { source_url: fake.hf.lfs('org/list/nokey.bin', bytes(1000, 201)) });
  const t = await json(await svc.fetch(`/api/tasks/${(await json(started)).task_id}`));
  expect(t.idempotency_key).toBe(`download_file:${t.id}`);
  const found = await list(`?idempotency_key=${encodeURIComponent(t.idempotency_key)}`);
  expect(found.body.tasks.map((x: { id: string }) => x.id)).toEqual([t.id]);
});
