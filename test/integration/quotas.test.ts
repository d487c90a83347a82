/**
 * Quotas per owner (contract 8, issue 42): usage kept by the database, limits set by admins, and every create path
 * refused with 403 QUOTA_EXCEEDED and its exact details, keeping nothing (rows and blob files counted before and
 * after). Concurrent uploads cannot pass a limit together. Real PostgreSQL, real HTTP, answers checked against
 * openapi.yaml.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { OPERATOR } from '../../src/domain/auth/api-key.service';
import { comfyTree, seeded } from '../helpers/comfy-tree';
import { startDownload, waitTask } from '../helpers/downloads';
import { bytes, startFakeProviders, type FakeProviders } from '../helpers/fake-providers';
import {
  blake3Of,
  json,
  KEYS,
  queryRows,
  startTestService,
  uploadForm,
  uploadHeadOnly,
  type TestService,
} from '../helpers/harness';
import { TUS, tusMetadata } from '../helpers/tus';

jest.setTimeout(120_000);

const MiB = 1024 * 1024;
let fake: FakeProviders;
let svc: TestService;
const tree = comfyTree('importer');
/** One owner per test (its key), so each starts at zero use and no limit. */
const keyOf: Record<string, string> = {};

beforeAll(async () => {
  fake = await startFakeProviders();
  svc = await startTestService(
    { ...fake.env, ...tree.env, DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'false' },
    { validateResponses: true },
  );
  for (const owner of ['carol', 'dave', 'erin', 'frank', 'gina', 'hank', 'ivy', 'jack', 'importer'])
    keyOf[owner] = (await svc.container.apiKeys.create(OPERATOR, { owner })).key;
});
afterAll(async () => {
  await svc?.stop();
  await fake?.close();
});

const sql = <T = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> =>
  queryRows<T>(svc.databaseUrl, text, values);

/** Blob files under their content address, and temporary and partial files, on disk. */
function blobFiles(): string[] {
  const root = path.join(svc.dataDir, 'blobs');
  const out: string[] = [];
  for (const a of fs.readdirSync(root).filter((n) => /^[0-9a-f]{2}$/.test(n)))
    for (const b of fs.readdirSync(path.join(root, a))) out.push(...fs.readdirSync(path.join(root, a, b)));
  for (const d of ['.tmp', '.partial'])
    if (fs.existsSync(path.join(root, d))) out.push(...fs.readdirSync(path.join(root, d)).map((f) => `${d}/${f}`));
  return out.sort();
}

/** Blobs moved aside for the retention period (`.orphans/<day>/ab/cd/<hex>`), by their hex. */
function movedAside(): string[] {
  const root = path.join(svc.dataDir, 'blobs', '.orphans');
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[])
    .map((f) => path.basename(f))
    .filter((f) => /^[0-9a-f]{64}$/.test(f))
    .sort();
}

/** What a refused create must leave as it was: rows of every table a create writes, and the files. */
async function kept() {
  type Counts = { assets: number; contents: number; uploads: number; tasks: number; transfers: number };
  const [r] = await sql<Counts>(`SELECT
    (SELECT count(*)::int FROM asset) AS assets, (SELECT count(*)::int FROM content) AS contents,
    (SELECT count(*)::int FROM upload) AS uploads, (SELECT count(*)::int FROM task) AS tasks,
    (SELECT count(*)::int FROM download_transfer) AS transfers`);
  return { ...r!, files: blobFiles(), movedAside: movedAside() };
}

const setQuota = (owner: string, body: unknown, key: string = KEYS.admin) =>
  svc.fetch(`/api/owners/${owner}/quota`, {
    method: 'PUT',
    key,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const usage = async (owner: string) => json(await svc.fetch('/api/usage', { key: keyOf[owner] }));

const upload = (owner: string, data: Buffer, fields: Record<string, string> = {}) =>
  svc.fetch('/api/assets', { method: 'POST', key: keyOf[owner], body: uploadForm(data, fields) });

const postJson = (owner: string, p: string, body: unknown) =>
  svc.fetch(p, {
    method: 'POST',
    key: keyOf[owner],
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

async function gql(key: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await svc.fetch('/graphql', {
    method: 'POST',
    key,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return json(res);
}

async function expectRefused(
  res: Response,
  details: { limit: number; used: number; requested: number; kind: 'bytes' | 'assets' },
) {
  expect(res.status).toBe(403);
  const body = await json(res);
  expect(Object.keys(body).sort()).toEqual(['code', 'details', 'message']);
  expect(body.code).toBe('QUOTA_EXCEEDED');
  expect(typeof body.message).toBe('string');
  expect(body.details).toEqual(details);
}

describe('setting quotas and reading usage', () => {
  test('PUT by an admin answers the usage; null clears a limit; an absent one is kept; the change is audited', async () => {
    const res = await setQuota('carol', { max_bytes: 1000, max_assets: 5 });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ owner: 'carol', bytes: 0, assets: 0, max_bytes: 1000, max_assets: 5 });
    expect(await usage('carol')).toEqual({ owner: 'carol', bytes: 0, assets: 0, max_bytes: 1000, max_assets: 5 });

    const cleared = await json(await setQuota('carol', { max_bytes: null }));
    expect(cleared).toEqual({ owner: 'carol', bytes: 0, assets: 0, max_assets: 5 });
    expect(await json(await setQuota('carol', {}))).toEqual(cleared);
    expect(await json(await setQuota('carol', { max_assets: null }))).toEqual({ owner: 'carol', bytes: 0, assets: 0 });

    // An admin reads another owner's usage; an owner only its own.
    expect(await json(await svc.fetch('/api/usage?owner=carol', { key: KEYS.admin }))).toEqual({
      owner: 'carol',
      bytes: 0,
      assets: 0,
    });
    const other = await svc.fetch('/api/usage?owner=carol', { key: KEYS.bob });
    expect(other.status).toBe(403);
    expect(await json(other)).toMatchObject({ code: 'FORBIDDEN', details: { required_scope: 'admin' } });

    const events = (await json(await svc.fetch('/api/audit?limit=500', { key: KEYS.admin }))).events.filter(
      (e: any) => e.action === 'quota.set' && e.target_owner === 'carol',
    );
    expect(events).toHaveLength(4);
    expect(events.at(-1)).toMatchObject({
      actor: { key_id: 'env:admin', owner: 'admin' },
      action: 'quota.set',
      target_owner: 'carol',
      details: { set: { max_bytes: 1000, max_assets: 5 }, cleared: [] },
    });
    expect(events[0].details).toEqual({ set: {}, cleared: ['max_assets'] });
    expect(JSON.stringify(events)).not.toContain(KEYS.admin);
  });

  test('a key without admin is 403 FORBIDDEN with required_scope admin, and nothing changes', async () => {
    for (const key of [KEYS.alice, keyOf.carol!]) {
      const res = await setQuota('carol', { max_bytes: 1 }, key);
      expect(res.status).toBe(403);
      expect(await json(res)).toMatchObject({ code: 'FORBIDDEN', details: { required_scope: 'admin' } });
    }
    expect(await usage('carol')).toEqual({ owner: 'carol', bytes: 0, assets: 0 });
  });

  test('a negative, fractional or non-number limit is 400 INVALID_BODY', async () => {
    for (const body of [{ max_bytes: -1 }, { max_assets: 1.5 }, { max_bytes: '5' }, { max_assets: 2 ** 31 }]) {
      const res = await setQuota('carol', body);
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({ code: 'INVALID_BODY' });
    }
    expect(await usage('carol')).toEqual({ owner: 'carol', bytes: 0, assets: 0 });
  });

  test('usage is exact after creates, duplicates, shared content and deletes (kept by the database)', async () => {
    const a = crypto.randomBytes(1000);
    const b = crypto.randomBytes(2345);
    const first = await json(await upload('dave', a));
    expect(await usage('dave')).toEqual({ owner: 'dave', bytes: 1000, assets: 1 });
    // One owner's duplicate is one asset, counted once.
    const dup = await upload('dave', a);
    expect(dup.status).toBe(200);
    expect(await usage('dave')).toEqual({ owner: 'dave', bytes: 1000, assets: 1 });
    const second = await json(await upload('dave', b));
    expect(await usage('dave')).toEqual({ owner: 'dave', bytes: 3345, assets: 2 });
    // Shared content counts for each owner.
    expect((await upload('erin', a)).status).toBe(201);
    expect(await usage('erin')).toEqual({ owner: 'erin', bytes: 1000, assets: 1 });
    expect(await usage('dave')).toEqual({ owner: 'dave', bytes: 3345, assets: 2 });

    expect((await svc.fetch(`/api/assets/${first.id}`, { method: 'DELETE', key: keyOf.dave })).status).toBe(204);
    expect(await usage('dave')).toEqual({ owner: 'dave', bytes: 2345, assets: 1 });
    expect((await svc.fetch(`/api/assets/${second.id}`, { method: 'DELETE', key: keyOf.dave })).status).toBe(204);
    expect(await usage('dave')).toEqual({ owner: 'dave', bytes: 0, assets: 0 });
    // The counters agree with the rows.
    const [row] = await sql<{ n: number; s: number }>(
      "SELECT count(*)::int AS n, coalesce(sum(size), 0)::int AS s FROM asset WHERE owner_id = 'erin'",
    );
    expect(await usage('erin')).toMatchObject({ bytes: row!.s, assets: row!.n });
  });

  test('GraphQL usage and setOwnerQuota: the same service, admin only for another owner', async () => {
    const set = await gql(
      KEYS.admin,
      'mutation($i: OwnerQuotaInput!) { setOwnerQuota(owner: "frank", input: $i) { owner bytes assets maxBytes maxAssets } }',
      { i: { maxBytes: 5000, maxAssets: 2 } },
    );
    expect(set).toEqual({
      data: { setOwnerQuota: { owner: 'frank', bytes: 0, assets: 0, maxBytes: 5000, maxAssets: 2 } },
    });
    // Only maxAssets is cleared: maxBytes, not sent, is kept.
    const cleared = await gql(
      KEYS.admin,
      'mutation { setOwnerQuota(owner: "frank", input: { maxAssets: null }) { maxBytes maxAssets } }',
    );
    expect(cleared).toEqual({ data: { setOwnerQuota: { maxBytes: 5000, maxAssets: null } } });
    expect(await gql(keyOf.frank!, '{ usage { owner bytes assets maxBytes } }')).toEqual({
      data: { usage: { owner: 'frank', bytes: 0, assets: 0, maxBytes: 5000 } },
    });
    expect(await gql(KEYS.admin, '{ usage(owner: "frank") { owner maxBytes } }')).toEqual({
      data: { usage: { owner: 'frank', maxBytes: 5000 } },
    });
    const refused = await gql(
      keyOf.frank!,
      'mutation { setOwnerQuota(owner: "frank", input: { maxBytes: null }) { owner } }',
    );
    expect(refused.errors[0].extensions).toMatchObject({ code: 'FORBIDDEN', details: { required_scope: 'admin' } });
    const bad = await gql(KEYS.admin, 'mutation { setOwnerQuota(owner: "frank", input: { maxAssets: -1 }) { owner } }');
    expect(bad.errors[0].extensions.code).toBe('INVALID_BODY');
    expect(await usage('frank')).toEqual({ owner: 'frank', bytes: 0, assets: 0, max_bytes: 5000 });
    await setQuota('frank', { max_bytes: null });
  });
});

describe('every create path is refused with QUOTA_EXCEEDED and keeps nothing', () => {
  test('multipart upload: bytes and assets limits; a duplicate of an asset the owner has is never refused', async () => {
    const a = crypto.randomBytes(3000);
    expect((await upload('gina', a)).status).toBe(201);
    await setQuota('gina', { max_bytes: 5000 });
    const before = await kept();
    await expectRefused(await upload('gina', crypto.randomBytes(2001)), {
      limit: 5000,
      used: 3000,
      requested: 2001,
      kind: 'bytes',
    });
    expect(await kept()).toEqual(before);
    expect((await upload('gina', crypto.randomBytes(2000))).status).toBe(201);

    await setQuota('gina', { max_bytes: null, max_assets: 2 });
    const before2 = await kept();
    await expectRefused(await upload('gina', crypto.randomBytes(10)), {
      limit: 2,
      used: 2,
      requested: 1,
      kind: 'assets',
    });
    expect(await kept()).toEqual(before2);
    // At the limit (and over a byte limit lowered below the use), the same content again is its asset: 200.
    await setQuota('gina', { max_bytes: 100 });
    const again = await upload('gina', a);
    expect(again.status).toBe(200);
    expect((await json(again)).created_new).toBe(false);
    expect(await usage('gina')).toEqual({ owner: 'gina', bytes: 5000, assets: 2, max_bytes: 100, max_assets: 2 });
  });

  test('multipart upload whose Content-Length cannot fit: refused at the head, before a byte of the body', async () => {
    await setQuota('hank', { max_bytes: MiB });
    const before = await kept();
    const answer = await uploadHeadOnly(svc.url, keyOf.hank!, 64 * MiB);
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body)).toEqual({
      code: 'QUOTA_EXCEEDED',
      message: expect.any(String),
      // The file is at least the body less 1 MiB for the other parts.
      details: { limit: MiB, used: 0, requested: 63 * MiB, kind: 'bytes' },
    });
    expect(await kept()).toEqual(before);
  });

  test('from-hash (REST and GraphQL): stored content of another owner becomes no asset past the limit', async () => {
    const data = crypto.randomBytes(4000);
    expect((await svc.fetch('/api/assets', { method: 'POST', key: KEYS.bob, body: uploadForm(data) })).status).toBe(
      201,
    );
    await setQuota('ivy', { max_bytes: 3999 });
    const before = await kept();
    await expectRefused(await postJson('ivy', '/api/assets/from-hash', { hash: blake3Of(data), tags: ['x'] }), {
      limit: 3999,
      used: 0,
      requested: 4000,
      kind: 'bytes',
    });
    const g = await gql(
      keyOf.ivy!,
      'mutation($h: String!) { createAssetFromHash(input: { hash: $h, tags: ["x"] }) { asset { id } } }',
      { h: blake3Of(data) },
    );
    expect(g.errors[0].extensions).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      details: { limit: 3999, used: 0, requested: 4000, kind: 'bytes' },
    });
    expect(await kept()).toEqual(before);
    await setQuota('ivy', { max_bytes: 4000 });
    expect((await postJson('ivy', '/api/assets/from-hash', { hash: blake3Of(data), tags: ['x'] })).status).toBe(201);
  });

  test('tus: refused at creation by its Upload-Length, and at its last PATCH under a limit lowered meanwhile', async () => {
    await setQuota('jack', { max_bytes: 10_000 });
    const before = await kept();
    const create = (length: number) =>
      svc.fetch('/api/uploads', {
        method: 'POST',
        key: keyOf.jack,
        headers: { ...TUS, 'Upload-Length': String(length), 'Upload-Metadata': tusMetadata({ filename: 'f.bin' }) },
      });
    await expectRefused(await create(10_001), { limit: 10_000, used: 0, requested: 10_001, kind: 'bytes' });
    expect(await kept()).toEqual(before);

    const made = await create(8000);
    expect(made.status).toBe(201);
    const id = made.headers.get('location')!.split('/').pop()!;
    const data = crypto.randomBytes(8000);
    const patch = (offset: number, body: Buffer) =>
      svc.fetch(`/api/uploads/${id}`, {
        method: 'PATCH',
        key: keyOf.jack,
        headers: { ...TUS, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' },
        body,
      });
    expect((await patch(0, data.subarray(0, 3000))).status).toBe(204);
    // The limit applies at the upload's completion, as it is then.
    await setQuota('jack', { max_bytes: 7999 });
    await expectRefused(await patch(3000, data.subarray(3000)), {
      limit: 7999,
      used: 0,
      requested: 8000,
      kind: 'bytes',
    });
    expect(await kept()).toEqual(before);
    expect((await svc.fetch(`/api/uploads/${id}`, { method: 'HEAD', key: keyOf.jack, headers: TUS })).status).toBe(404);
  });

  test('URL upload: refused by the size the provider states, and at the insert when the bytes are in', async () => {
    const owner = 'carol';
    await setQuota(owner, { max_bytes: MiB, max_assets: null });
    const big = fake.hf.lfs(`org/quota-${crypto.randomUUID()}/big.bin`, bytes(MiB + 1, 7));
    const before = await kept();
    await expectRefused(await postJson(owner, '/api/assets', { url: big, tags: ['x'] }), {
      limit: MiB,
      used: 0,
      requested: MiB + 1,
      kind: 'bytes',
    });
    expect(await kept()).toEqual(before);

    // Downloaded in full, then refused by the asset limit: the blob it stored goes too.
    await setQuota(owner, { max_bytes: null, max_assets: 0 });
    const small = fake.hf.lfs(`org/quota-${crypto.randomUUID()}/small.bin`, bytes(5000, 8));
    await expectRefused(await postJson(owner, '/api/assets', { url: small, tags: ['x'] }), {
      limit: 0,
      used: 0,
      requested: 1,
      kind: 'assets',
    });
    expect(await kept()).toEqual(before);
    await setQuota(owner, { max_assets: null });
  });

  test('download task: refused at the start by a stated size; failed with QUOTA_EXCEEDED when it finishes over', async () => {
    const owner = 'erin';
    const used = (await usage(owner)).bytes as number;
    await setQuota(owner, { max_bytes: used + 100_000 });
    const before = await kept();
    const big = fake.hf.lfs(`org/quota-${crypto.randomUUID()}/big.bin`, bytes(200_000, 9));
    await expectRefused(await startDownload(svc, { source_url: big, tags: ['x'] }, keyOf[owner]), {
      limit: used + 100_000,
      used,
      requested: 200_000,
      kind: 'bytes',
    });
    expect(await kept()).toEqual(before);

    // Fits at the start; the limit is lowered while it downloads: the task fails with the code, no asset is made.
    const slow = fake.hf.lfs(`org/quota-${crypto.randomUUID()}/slow.bin`, bytes(64_000, 10), { throttle: 64_000 });
    const started = await startDownload(svc, { source_url: slow, tags: ['x'] }, keyOf[owner]);
    expect(started.status).toBe(202);
    const { task_id } = await json(started);
    await setQuota(owner, { max_bytes: used });
    const task = await waitTask(svc, task_id, { key: keyOf[owner] });
    expect(task.status).toBe('failed');
    expect(task.error_message).toMatch(/^QUOTA_EXCEEDED: /);
    expect(await usage(owner)).toMatchObject({ bytes: used });
    const [n] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM asset WHERE owner_id = 'erin'");
    expect(n!.n).toBe((await usage(owner)).assets);
    await setQuota(owner, { max_bytes: null });
  });

  test('import (seed): the files that fit become assets, the rest are skipped with QUOTA_EXCEEDED', async () => {
    for (let i = 0; i < 5; i++) tree.write(`output/q/file_${i}.bin`, seeded(1000 + i, 500 + i));
    await setQuota('importer', { max_assets: 2 });
    const before = await kept();
    const res = await json(await svc.fetch('/api/assets/seed?wait=true', { method: 'POST', key: KEYS.admin }));
    expect(res.status).toBe('completed');
    expect(res.progress).toMatchObject({ created: 2, skipped: 3 });
    expect(res.errors).toHaveLength(3);
    for (const e of res.errors) expect(JSON.stringify(e)).toContain('QUOTA_EXCEEDED');
    expect(await usage('importer')).toMatchObject({ assets: 2, max_assets: 2 });
    const after = await kept();
    expect(after.assets).toBe(before.assets + 2);
    // The refused files' blobs are gone (temporaries and content-addressed ones alike).
    expect(after.files.filter((f) => !before.files.includes(f))).toHaveLength(2);
    // An admin's import into another owner's assets is in the audit trail.
    const events = (await json(await svc.fetch('/api/audit?limit=500', { key: KEYS.admin }))).events;
    expect(events.find((e: any) => e.action === 'import.start')).toMatchObject({
      actor: { owner: 'admin' },
      target_owner: 'importer',
    });
  });
});

test('8 parallel uploads of distinct content against a limit that fits 3: exactly 3 are made, no orphan blob', async () => {
  const owner = 'hank';
  await setQuota(owner, { max_bytes: 30_000 });
  const before = await kept();
  const files = Array.from({ length: 8 }, () => crypto.randomBytes(10_000));
  const answers = await Promise.all(files.map((f) => upload(owner, f)));
  const statuses = answers.map((r) => r.status).sort();
  // The contract allows one file over; the final check under the owner's row lock makes it none.
  expect(statuses).toEqual([201, 201, 201, 403, 403, 403, 403, 403]);
  for (const r of answers.filter((a) => a.status === 403)) {
    const body = await json(r);
    expect(body).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { limit: 30_000, used: 30_000, kind: 'bytes' } });
  }
  expect(await usage(owner)).toEqual({ owner, bytes: 30_000, assets: 3, max_bytes: 30_000 });
  const after = await kept();
  expect(after.assets).toBe(before.assets + 3);
  expect(after.contents).toBe(before.contents + 3);
  expect(after.tasks).toBe(before.tasks);
  const made = after.files.filter((f) => !before.files.includes(f));
  expect(made).toHaveLength(3);
  // The losers passed the early check together and put their blobs in place before the final one refused them:
  // those are moved aside for the retention period (as any refused create's), never left under a content address.
  const aside = after.movedAside.filter((f) => !before.movedAside.includes(f));
  expect(aside.sort()).toEqual(
    answers
      .map((r, i) => (r.status === 403 ? blake3Of(files[i]!).slice('blake3:'.length) : undefined))
      .filter(Boolean)
      .sort(),
  );
});
