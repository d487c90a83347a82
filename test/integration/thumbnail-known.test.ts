/**
 * The thumbnail route keeps its asset → content lookups while it hears every delete (known-thumbnails.ts, migration
 * 20261128100000). What must hold whatever it keeps: another owner's asset is never served; a delete on the same
 * instance is seen by its next request; a delete on another instance as soon as PostgreSQL announces it; while the
 * listening connection is lost nothing is answered from what was kept, and after it is back what was kept is gone.
 * A row deleted behind the service's back (triggers off, so no announcement) shows the lookups really are kept.
 */
import { Client } from 'pg';
import sharp from 'sharp';
import { json, KEYS, startTestService, uploadForm, waitFor, type TestService, granted } from '../helpers/harness';

let a: TestService;
let b: TestService;
let db: Client;

beforeAll(async () => {
  a = await startTestService();
  b = await startTestService({}, { databaseUrl: a.databaseUrl, dataDir: a.dataDir });
  db = new Client({ connectionString: a.databaseUrl });
  await db.connect();
  // Both instances listen (they start listening beside their start, not before it ends).
  await waitFor(async () => ((await idleListeners()) === 2 ? true : undefined), { what: 'listeners', intervalMs: 20 });
  await new Promise((r) => setTimeout(r, 200));
});
afterAll(async () => {
  await db?.end();
  await b?.stop();
  await a?.stop();
});

let seed = 0;
/** An uploaded image of alice's whose thumbnail is made. */
async function imageWithThumbnail(): Promise<string> {
  seed++;
  const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: seed, g: 90, b: 30 } } })
    .png()
    .toBuffer();
  const res = await a.fetch('/api/assets', { method: 'POST', body: uploadForm(png, {}, `k${seed}.png`) });
  expect(res.status).toBe(201);
  const { id } = await json(res);
  await waitFor(async () => ((await json(await a.fetch(`/api/assets/${id}`))).thumbnail_url ? true : undefined), {
    what: `thumbnail of ${id}`,
    timeoutMs: 30_000,
  });
  return id as string;
}

const thumbnail = (svc: TestService, id: string, key: string = KEYS.alice) =>
  svc.fetch(`/api/assets/${id}/thumbnail`, { key });
const grantedThumbnail = (svc: TestService, id: string, owner: string) =>
  fetch(granted(svc, `${svc.url}/api/assets/${id}/thumbnail`, owner));

/** The row gone without the delete's triggers (no announcement, no owner counts), as a manual fix-up would. */
async function deleteBehindTheBack(id: string): Promise<void> {
  const c = new Client({ connectionString: a.databaseUrl });
  await c.connect();
  try {
    await c.query(`SET session_replication_role = replica`);
    await c.query(`DELETE FROM asset WHERE id = $1`, [id]);
  } finally {
    await c.end();
  }
}

const idleListeners = async (): Promise<number> =>
  Number(
    (
      await db.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'asset-service:asset_gone' AND state = 'idle'
         AND datname = current_database()`,
      )
    ).rows[0]!.n,
  );

const listeners = async (): Promise<number[]> =>
  (
    await db.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE application_name = 'asset-service:asset_gone' AND datname = current_database()`,
    )
  ).rows.map((r) => r.pid);

test('a looked-up thumbnail is answered again without its row, to its owner only', async () => {
  const id = await imageWithThumbnail();
  expect((await grantedThumbnail(a, id, 'alice')).status).toBe(200);
  const bobs = await thumbnail(a, id, KEYS.bob);
  expect(bobs.status).toBe(404);
  expect((await json(bobs)).code).toBe('ASSET_NOT_FOUND');
  expect((await grantedThumbnail(a, id, 'bob')).status).toBe(404);

  await deleteBehindTheBack(id);
  // Kept: the lookup is not read again (a delete through the service would have been announced).
  const kept = await thumbnail(a, id);
  expect(kept.status).toBe(200);
  expect(kept.headers.get('etag')).toMatch(/^"thumbnail-blake3:[0-9a-f]{64}"$/);
  expect((await grantedThumbnail(a, id, 'bob')).status).toBe(404);
  // b never looked it up: it reads the row, which is gone.
  expect((await thumbnail(b, id)).status).toBe(404);
});

test('a delete on the same instance: its next request is a 404', async () => {
  const id = await imageWithThumbnail();
  for (let i = 0; i < 3; i++) expect((await grantedThumbnail(a, id, 'alice')).status).toBe(200);
  expect((await a.fetch(`/api/assets/${id}`, { method: 'DELETE' })).status).toBe(204);
  expect((await grantedThumbnail(a, id, 'alice')).status).toBe(404);
  expect((await thumbnail(a, id)).status).toBe(404);
});

test('a delete on another instance: a 404 as soon as it is announced', async () => {
  const id = await imageWithThumbnail();
  for (let i = 0; i < 3; i++) expect((await thumbnail(a, id)).status).toBe(200);
  expect((await b.fetch(`/api/assets/${id}`, { method: 'DELETE' })).status).toBe(204);
  expect((await thumbnail(b, id)).status).toBe(404);
  const t0 = Date.now();
  await waitFor(async () => ((await thumbnail(a, id)).status === 404 ? true : undefined), {
    what: 'a 404 from the other instance',
    timeoutMs: 2_000,
    intervalMs: 5,
  });
  // Milliseconds, not a polling window.
  expect(Date.now() - t0).toBeLessThan(2_000);
  expect((await grantedThumbnail(a, id, 'alice')).status).toBe(404);
});

test('a lost listening connection: what was kept is dropped, and kept again once it listens again', async () => {
  const id = await imageWithThumbnail();
  expect((await thumbnail(a, id)).status).toBe(200);
  const before = await listeners();
  expect(before).toHaveLength(2);
  await db.query(`SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid`, [before]);
  // Both instances listen again, on new connections.
  await waitFor(
    async () => {
      const now = await listeners();
      return now.length === 2 && now.every((p) => !before.includes(p)) ? true : undefined;
    },
    { what: 'listening again', timeoutMs: 10_000, intervalMs: 50 },
  );
  await deleteBehindTheBack(id);
  expect((await thumbnail(a, id)).status).toBe(404);

  // Listening again, lookups are kept again.
  const other = await imageWithThumbnail();
  await waitFor(
    async () => {
      // The LISTEN itself follows the connection by a moment: until then nothing is kept.
      expect((await thumbnail(a, other)).status).toBe(200);
      return (await idleListeners()) === 2 ? true : undefined;
    },
    { what: 'idle listeners', timeoutMs: 5_000, intervalMs: 20 },
  );
  // The instance learns of its LISTEN's answer a moment after the server shows the connection idle.
  await new Promise((r) => setTimeout(r, 200));
  expect((await thumbnail(a, other)).status).toBe(200);
  await deleteBehindTheBack(other);
  expect((await thumbnail(a, other)).status).toBe(200);
});

test('one statement deleting many assets announces them all, 200 ids at most per notification', async () => {
  const listen = new Client({ connectionString: a.databaseUrl });
  await listen.connect();
  const heard: string[] = [];
  listen.on('notification', (n) => n.channel === 'asset_gone' && heard.push(n.payload ?? ''));
  await listen.query('LISTEN asset_gone');
  try {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await a.fetch('/api/assets', {
        method: 'POST',
        key: KEYS.bob,
        body: uploadForm(Buffer.from(`gone ${i} ${Date.now()}`), {}, `gone${i}.txt`),
      });
      expect(res.status).toBe(201);
      ids.push((await json(res)).id);
    }
    // More than 200 in one statement: rows made in SQL (one owner each, the same content) and deleted at once.
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO asset (id, owner_id, name, content_hash, mime_type, size)
       SELECT gen_random_uuid(), 'many' || g, 'many', a.content_hash, a.mime_type, a.size
       FROM asset a, generate_series(1, 450) AS g WHERE a.id = $1 RETURNING id`,
      [ids[0]],
    );
    expect(rows).toHaveLength(450);
    await db.query(`DELETE FROM asset WHERE owner_id LIKE 'many%'`);
    await waitFor(async () => (heard.join(',').split(',').length >= rows.length ? true : undefined), {
      what: 'every announcement',
      timeoutMs: 5_000,
    });
    expect(heard).toHaveLength(3);
    expect(heard.every((p) => p.split(',').length <= 200 && Buffer.byteLength(p) < 8000)).toBe(true);
    expect(new Set(heard.join(',').split(','))).toEqual(new Set(rows.map((r) => r.id)));

    heard.length = 0;
    await db.query(`DELETE FROM asset WHERE id = ANY($1::uuid[])`, [ids]);
    await waitFor(async () => (heard.length ? true : undefined), { what: 'the announcement', timeoutMs: 5_000 });
    expect(heard).toHaveLength(1);
    expect(heard[0]!.split(',').sort()).toEqual([...ids].sort());
  } finally {
    await listen.end();
  }
});

test('THUMBNAIL_LOOKUP_CACHE=false: no listening connection, every thumbnail reads its row', async () => {
  const c = await startTestService(
    { THUMBNAIL_LOOKUP_CACHE: 'false' },
    { databaseUrl: a.databaseUrl, dataDir: a.dataDir },
  );
  try {
    const id = await imageWithThumbnail();
    for (let i = 0; i < 3; i++) expect((await thumbnail(c, id)).status).toBe(200);
    expect(await listeners()).toHaveLength(2);
    await deleteBehindTheBack(id);
    expect((await thumbnail(c, id)).status).toBe(404);
  } finally {
    await c.stop();
  }
});
