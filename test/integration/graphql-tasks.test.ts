/**
 * GraphQL task and download operations over real HTTP, against a local Hugging Face stand-in (HF_ENDPOINT):
 * startDownload (task or immediate asset), task, tasks (filters, owner isolation, admin allOwners), cancelTask,
 * and parity with the REST task JSON.
 */
import crypto from 'node:crypto';
import { json, KEYS, startTestService, waitFor, type TestService } from '../helpers/harness';
import { startFakeHub, type FakeHub } from '../helpers/fake-hub';
import { gql, gqlUpload, UPLOAD, type Json } from '../helpers/graphql';

const TASK_FIELDS = `id ownerId idempotencyKey taskName status createTime updateTime startedAt completedAt errorMessage
  payload { sourceUrl tags userMetadata previewId }
  progress { bytesDownloaded bytesTotal progress }
  result { success assetId assetHash filename bytesDownloaded }`;
const START = `mutation($i: StartDownloadInput!) { startDownload(input: $i) { createdNew asset { id name tags userMetadata } task { ${TASK_FIELDS} } } }`;
const TASK = `query($id: ID!) { task(id: $id) { ${TASK_FIELDS} } }`;

let svc: TestService;
let hub: FakeHub;
beforeAll(async () => {
  hub = await startFakeHub();
  svc = await startTestService({ HF_ENDPOINT: hub.url });
});
afterAll(async () => {
  await svc?.stop();
  await hub?.close();
});

const finished = (id: string, key: string = KEYS.alice) =>
  waitFor(
    async () => {
      const t = (await gql(svc, TASK, { id }, { key })).data?.task;
      return t && (t.status === 'completed' || t.status === 'failed') ? t : undefined;
    },
    { what: `task ${id} to finish` },
  );

test('startDownload: a task that completes into an asset; task(id) agrees with GET /api/tasks/{id}', async () => {
  const body = crypto.randomBytes(50_000);
  hub.set('model.safetensors', body);
  const r = await gql(svc, START, {
    i: { sourceUrl: hub.fileUrl('model.safetensors'), tags: ['Models', 'models'], userMetadata: { k: 'v' } },
  });
  expect(r.errors).toBeUndefined();
  expect(r.data.startDownload.asset).toBeNull();
  const task = r.data.startDownload.task;
  expect(task).toMatchObject({
    ownerId: 'alice',
    taskName: 'download_file',
    payload: { sourceUrl: hub.fileUrl('model.safetensors'), tags: ['Models', 'models'] },
  });
  expect(['created', 'running', 'completed']).toContain(task.status);

  const done = await finished(task.id);
  expect(done).toMatchObject({
    status: 'completed',
    errorMessage: null,
    progress: { bytesDownloaded: body.length },
    result: { success: true, filename: 'model.safetensors', bytesDownloaded: body.length },
  });
  const asset = (
    await gql(svc, 'query($id: ID!) { asset(id: $id) { name size tags userMetadata } }', { id: done.result.assetId })
  ).data.asset;
  expect(asset).toMatchObject({
    name: 'model.safetensors',
    size: body.length,
    tags: ['Models', 'models'],
    userMetadata: { k: 'v', source_url: hub.fileUrl('model.safetensors') },
  });

  const rest = await json(await svc.fetch(`/api/tasks/${task.id}`));
  expect(done).toEqual({
    id: rest.id,
    ownerId: 'alice',
    idempotencyKey: rest.idempotency_key,
    taskName: rest.task_name,
    status: rest.status,
    createTime: rest.create_time,
    updateTime: rest.update_time,
    startedAt: rest.started_at,
    completedAt: rest.completed_at,
    // REST leaves out fields without a value; GraphQL answers null for them.
    errorMessage: rest.error_message ?? null,
    payload: {
      sourceUrl: rest.payload.source_url,
      tags: rest.payload.tags,
      userMetadata: rest.payload.user_metadata,
      previewId: rest.payload.preview_id,
    },
    progress: {
      bytesDownloaded: rest.progress.bytes_downloaded,
      bytesTotal: rest.progress.bytes_total,
      progress: rest.progress.progress,
    },
    result: {
      success: rest.result.success,
      assetId: rest.result.asset_id,
      assetHash: rest.result.asset_hash,
      filename: rest.result.filename,
      bytesDownloaded: rest.result.bytes_downloaded,
    },
  });
});

test('startDownload of content the provider states and the service stores: the asset at once, no task', async () => {
  const body = crypto.randomBytes(1000);
  await gqlUpload(svc, UPLOAD, {}, body, { key: KEYS.bob });
  hub.set('known.bin', body, { linked: true });
  const r = await gql(svc, START, { i: { sourceUrl: hub.fileUrl('known.bin'), tags: ['k'] } });
  expect(r.data.startDownload).toMatchObject({
    createdNew: true,
    task: null,
    asset: { name: 'known.bin', tags: ['k'] },
  });
});

test('startDownload errors: SOURCE_NOT_ALLOWED, INVALID_BODY, INVALID_PREVIEW_ID', async () => {
  expect((await gql(svc, START, { i: { sourceUrl: 'https://example.com/x.bin' } })).code).toBe('SOURCE_NOT_ALLOWED');
  expect((await gql(svc, START, { i: { sourceUrl: hub.fileUrl('a.bin'), userMetadata: 'text' } })).code).toBe(
    'INVALID_BODY',
  );
  expect((await gql(svc, START, { i: { sourceUrl: hub.fileUrl('a.bin'), previewId: crypto.randomUUID() } })).code).toBe(
    'INVALID_PREVIEW_ID',
  );
});

describe('tasks, owners and cancel', () => {
  let held: Json;
  beforeAll(async () => {
    hub.hold('slow.bin', 10_000_000);
    held = (await gql(svc, START, { i: { sourceUrl: hub.fileUrl('slow.bin') } }, { key: KEYS.bob })).data.startDownload
      .task;
  });

  test("another owner's task does not exist; tasks lists only the caller's", async () => {
    expect((await gql(svc, TASK, { id: held.id })).code).toBe('TASK_NOT_FOUND');
    expect((await gql(svc, TASK, { id: 'x' })).code).toBe('INVALID_ID');
    const mine = (await gql(svc, '{ tasks(limit: 100) { items { id ownerId } total hasMore } }')).data.tasks;
    expect(mine.items.every((t: Json) => t.ownerId === 'alice')).toBe(true);
    expect(mine.items.map((t: Json) => t.id)).not.toContain(held.id);
    const bobs = (await gql(svc, '{ tasks { items { id } total } }', {}, { key: KEYS.bob })).data.tasks;
    expect(bobs.items.map((t: Json) => t.id)).toEqual([held.id]);
  });

  test('filters: status, taskName, createdAfter, sortOrder; limit bounds', async () => {
    const q = `query($f: TaskFilter, $l: Int!, $o: Int!) { tasks(filter: $f, limit: $l, offset: $o) { items { id status } total hasMore } }`;
    const all = (await gql(svc, q, { l: 100, o: 0 })).data.tasks;
    expect(all.total).toBeGreaterThanOrEqual(1);
    const completed = (await gql(svc, q, { f: { status: ['completed'] }, l: 100, o: 0 })).data.tasks;
    expect(completed.items.every((t: Json) => t.status === 'completed')).toBe(true);
    expect((await gql(svc, q, { f: { status: ['failed'] }, l: 100, o: 0 })).data.tasks.total).toBe(0);
    expect((await gql(svc, q, { f: { taskName: 'other' }, l: 100, o: 0 })).data.tasks.total).toBe(0);
    expect(
      (await gql(svc, q, { f: { createdAfter: new Date(Date.now() + 60_000).toISOString() }, l: 100, o: 0 })).data.tasks
        .total,
    ).toBe(0);
    const asc = (await gql(svc, q, { f: { sortOrder: 'asc' }, l: 100, o: 0 })).data.tasks.items.map((t: Json) => t.id);
    expect(asc).toEqual(all.items.map((t: Json) => t.id).reverse());
    expect((await gql(svc, q, { l: 101, o: 0 })).code).toBe('INVALID_BODY');
  });

  test("tasks(allOwners: true): FORBIDDEN for other keys; every owner's tasks for an admin key", async () => {
    const q = '{ tasks(allOwners: true, limit: 100) { items { id ownerId } total } }';
    expect((await gql(svc, q)).code).toBe('FORBIDDEN');
    const all = (await gql(svc, q, {}, { key: KEYS.admin })).data.tasks;
    expect(new Set(all.items.map((t: Json) => t.ownerId))).toEqual(new Set(['alice', 'bob']));
  });

  test('cancelTask: only the owner; the task ends cancelled; a finished task is TASK_NOT_CANCELLABLE', async () => {
    const m = `mutation($id: ID!) { cancelTask(id: $id) { id status errorMessage } }`;
    expect((await gql(svc, m, { id: held.id })).code).toBe('TASK_NOT_FOUND');
    const cancelled = (await gql(svc, m, { id: held.id }, { key: KEYS.bob })).data.cancelTask;
    expect(cancelled).toMatchObject({
      id: held.id,
      status: 'cancelled',
      errorMessage: expect.stringMatching(/cancel/i),
    });
    hub.release();
    expect((await gql(svc, m, { id: held.id }, { key: KEYS.bob })).code).toBe('TASK_NOT_CANCELLABLE');
  });
});
