/**
 * GraphQL's kept list answers (src/http/graphql/kept-answers.ts): an `assets` query answered
 * before is sent again from its kept text while the owner's rows version is unchanged. Every answer here must be the fresh one:
 * after a change through the other instance on the same database, and after direct SQL changes of has_thumbnail,
 * preview_id and a tag; another owner never gets the bytes; different variables are different entries. A change
 * made with the triggers off (so the version does not move) shows the answer really is kept.
 */
import crypto from 'node:crypto';
import { Client } from 'pg';
import {
  createTestDatabase,
  json,
  KEYS,
  startTestService,
  uploadForm,
  type TestService,
  granted,
} from '../helpers/harness';

type Json = any;

let a: TestService;
let b: TestService;
let db: Client;
const ids: string[] = [];

beforeAll(async () => {
  const databaseUrl = await createTestDatabase();
  a = await startTestService({}, { databaseUrl });
  b = await startTestService({}, { databaseUrl });
  db = new Client({ connectionString: databaseUrl });
  await db.connect();
  for (let i = 0; i < 3; i++) ids.push((await create(a, KEYS.alice, ['kept', `n${i}`])).id);
  await create(a, KEYS.bob, ['bobs']);
});
afterAll(async () => {
  await db?.end();
  await a?.stop();
  await b?.stop();
});

async function create(svc: TestService, key: string, tags: string[]): Promise<Json> {
  const res = await svc.fetch('/api/assets', {
    method: 'POST',
    key,
    body: uploadForm(Buffer.from(crypto.randomUUID()), { tags: tags.join(',') }),
  });
  expect(res.status).toBe(201);
  return json(res);
}

const LIST = `query Kept($limit: Int!) { assets(limit: $limit) { total hasMore items { id name tags thumbnailUrl previewId previewUrl preview { id name tags } } } }`;

interface Answer {
  status: number;
  type: string | null;
  length: string | null;
  text: string;
}

async function list(svc: TestService, limit = 10, key: string = KEYS.alice): Promise<Answer> {
  const res = await svc.fetch('/graphql', {
    method: 'POST',
    key,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: LIST, operationName: 'Kept', variables: { limit } }),
  });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    length: res.headers.get('content-length'),
    text: await res.text(),
  };
}

/** Enough requests for the answer to be kept (from the second answer of the same request on) and sent again. */
async function warm(svc: TestService, limit = 10, key: string = KEYS.alice): Promise<Answer> {
  const first = await list(svc, limit, key);
  for (let i = 0; i < 3; i++) expect(await list(svc, limit, key)).toEqual(first);
  return first;
}

const items = (x: Answer): Json[] => JSON.parse(x.text).data.assets.items;
const item = (x: Answer, id: string): Json => items(x).find((i: Json) => i.id === id);

test('a repeated query is answered the same, status and headers included', async () => {
  const first = await warm(a);
  expect(first.status).toBe(200);
  expect(first.type).toBe('application/json; charset=utf-8');
  expect(Number(first.length)).toBe(Buffer.byteLength(first.text));
  expect(items(first)).toHaveLength(3);
  expect(await list(a)).toEqual(first);
});

test('the answer is kept: a change that does not move the rows version is not seen, one that does is', async () => {
  await warm(a);
  const c = new Client({ connectionString: a.databaseUrl });
  await c.connect();
  try {
    // Triggers off for this session only: the row changes, the owner's rows version does not.
    await c.query(`SET session_replication_role = replica`);
    await c.query(`UPDATE asset SET name = 'renamed without version' WHERE id = $1`, [ids[0]]);
  } finally {
    await c.end();
  }
  expect(item(await list(a), ids[0]!).name).not.toBe('renamed without version');
  await db.query(`UPDATE asset SET mime_type = mime_type WHERE id = $1`, [ids[1]]);
  expect(item(await list(a), ids[0]!).name).toBe('renamed without version');
});

test('a change made through the other instance is seen at once', async () => {
  await warm(a);
  await warm(b);
  const res = await b.fetch(`/api/assets/${ids[0]}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'renamed on b' }),
  });
  expect(res.status).toBe(200);
  expect(item(await list(a), ids[0]!).name).toBe('renamed on b');
  const added = await b.fetch(`/api/assets/${ids[1]}/tags`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tags: ['from-b'] }),
  });
  expect(added.status).toBe(200);
  expect(item(await list(a), ids[1]!).tags).toContain('from-b');
  expect(item(await list(b), ids[1]!).tags).toContain('from-b');
});

test('direct SQL changes of has_thumbnail, preview_id and a tag are seen at once', async () => {
  await warm(a);
  expect(item(await list(a), ids[2]!).thumbnailUrl).toBeNull();
  await db.query(`UPDATE asset SET has_thumbnail = true WHERE id = $1`, [ids[2]]);
  expect(item(await list(a), ids[2]!).thumbnailUrl).toBe(granted(a, `${a.url}/api/assets/${ids[2]}/thumbnail`));

  await warm(a);
  await db.query(`UPDATE asset SET preview_id = $2 WHERE id = $1`, [ids[2], ids[1]]);
  let got = item(await list(a), ids[2]!);
  expect(got.previewId).toBe(ids[1]);
  expect(got.previewUrl).toBe(granted(a, `${a.url}/api/assets/${ids[1]}/content`));
  expect(got.preview.id).toBe(ids[1]);

  // The preview's own row changes: the item previewing it shows the change.
  await warm(a);
  await db.query(`UPDATE asset SET tags = array_append(tags, 'sql-tag') WHERE id = $1`, [ids[1]]);
  got = item(await list(a), ids[2]!);
  expect(got.preview.tags).toContain('sql-tag');
  expect(item(await list(a), ids[1]!).tags).toContain('sql-tag');
});

test('another owner never gets the kept bytes', async () => {
  // The two owners' rows versions equal: only the key can tell their entries apart.
  await db.query(`UPDATE asset_owner_stats SET rows_version = 1000000 WHERE owner_id IN ('alice', 'bob')`);
  const alice = await warm(a);
  const bob = await list(a, 10, KEYS.bob);
  expect(bob.status).toBe(200);
  expect(items(bob).map((i: Json) => i.tags)).toEqual([['bobs']]);
  expect(bob.text).not.toBe(alice.text);
  expect(await warm(a, 10, KEYS.bob)).toEqual(bob);
  expect(await list(a)).toEqual(alice);
});

test('different variables are different entries', async () => {
  const ten = await warm(a, 10);
  const one = await warm(a, 1);
  expect(items(one)).toHaveLength(1);
  expect(JSON.parse(one.text).data.assets.hasMore).toBe(true);
  expect(items(ten)).toHaveLength(3);
  expect(await list(a, 10)).toEqual(ten);
  expect(await list(a, 1)).toEqual(one);
});

test('errors are never kept', async () => {
  for (let i = 0; i < 4; i++) {
    const bad = await list(a, 100_000);
    expect(JSON.parse(bad.text).errors[0].extensions.code).toBeDefined();
  }
  expect(items(await list(a, 10))).toHaveLength(3);
});

// The asset browser's first screen: the page, the tag facets and what the schema offers, in one request.
const FIRST_SCREEN = `query($limit: Int!) {
  asset: __type(name: "Asset") { fields { name } }
  assets(limit: $limit) { total items { id tags } }
  tagCounts(limit: 60) { name count }
}`;

async function firstScreen(svc: TestService): Promise<Answer> {
  const res = await svc.fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: FIRST_SCREEN, variables: { limit: 10 } }),
  });
  return { status: res.status, type: null, length: null, text: await res.text() };
}

test('the first screen (assets, tagCounts, __type) is kept, and its tag counts follow a change on the other instance', async () => {
  const first = await firstScreen(a);
  expect(first.status).toBe(200);
  for (let i = 0; i < 3; i++) expect(await firstScreen(a)).toEqual(first);
  const c = new Client({ connectionString: a.databaseUrl });
  await c.connect();
  try {
    await c.query(`SET session_replication_role = replica`);
    await c.query(`UPDATE asset_tag_count SET count = count + 100 WHERE owner_id = 'alice' AND tag = 'kept'`);
  } finally {
    await c.end();
  }
  // Kept: the counts changed behind the rows version's back are not read.
  expect(await firstScreen(a)).toEqual(first);
  await db.query(`UPDATE asset_tag_count SET count = count - 100 WHERE owner_id = 'alice' AND tag = 'kept'`);

  const added = await b.fetch(`/api/assets/${ids[0]}/tags`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tags: ['first-screen'] }),
  });
  expect(added.status).toBe(200);
  const now = JSON.parse((await firstScreen(a)).text).data;
  expect(now.tagCounts).toContainEqual({ name: 'first-screen', count: 1 });
  expect(now.assets.items.find((i: Json) => i.id === ids[0]).tags).toContain('first-screen');
  expect(now.asset.fields.map((f: Json) => f.name)).toContain('thumbnailUrl');
});

test('a query with a field beside them that reads anything else (tasks) is not kept', async () => {
  const MIXED = JSON.stringify({ query: '{ assets(limit: 1) { total } tasks(limit: 50) { items { id } } }' });
  const mixed = async () =>
    JSON.parse(
      await (
        await a.fetch('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: MIXED })
      ).text(),
    ).data;
  const before = await mixed();
  await mixed();
  // A task does not move the owner's rows version: a kept answer would not show it.
  const exp = await b.fetch('/api/assets/export', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ asset_ids: [ids[0]] }),
  });
  expect(exp.status).toBe(202);
  const { task_id } = (await json(exp)) as { task_id: string };
  const after = await mixed();
  expect(after.tasks.items.map((t: Json) => t.id)).toContain(task_id);
  expect(after.tasks.items.length).toBe(before.tasks.items.length + 1);
});
