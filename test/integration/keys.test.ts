/**
 * Key management (contract 8) over real HTTP: POST/GET/DELETE /api/keys and their GraphQL twins, `npm run keys
 * --scopes`, expiry and revocation on every instance within 5 s, last_used_at to the minute, the audit trail, hostile
 * keys, and the migration that gave keys made before scopes what they could do.
 */
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { gql } from '../helpers/graphql';
import { json, KEYS, startTestService, waitFor, type TestService } from '../helpers/harness';
import { rawRequest } from '../helpers/raw-http';

jest.setTimeout(120_000);
const ROOT = path.join(__dirname, '..', '..');

let a: TestService;
let b: TestService;
beforeAll(async () => {
  a = await startTestService({}, { validateResponses: true });
  // A second instance on the same database (as multi-instance.test.ts runs them): it caches keys on its own.
  b = await startTestService({}, { databaseUrl: a.databaseUrl, validateResponses: true });
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
});

const post = (svc: TestService, body: unknown, key: string = KEYS.alice) =>
  svc.fetch('/api/keys', {
    method: 'POST',
    key,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const made = async (body: unknown, key: string = KEYS.alice) => {
  const res = await post(a, body, key);
  expect(res.status).toBe(201);
  return (await json(res)) as { id: string; key: string; owner: string; scopes: string[] };
};

describe('POST /api/keys', () => {
  test('makes a key of the caller’s owner, read+write by default, the secret once; no null field', async () => {
    const res = await post(a, { label: 'ci' });
    expect(res.status).toBe(201);
    const k = await json(res);
    expect(k).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      key: expect.stringMatching(/^ask_/),
      owner: 'alice',
      label: 'ci',
      scopes: ['read', 'write'],
      created_at: expect.stringMatching(/Z$/),
    });
    expect((await a.fetch('/api/assets', { key: k.key })).status).toBe(200);
    const list = await json(await a.fetch('/api/keys'));
    const listed = list.keys.find((x: { id: string }) => x.id === k.id);
    expect(listed).toMatchObject({ id: k.id, owner: 'alice', label: 'ci', scopes: ['read', 'write'] });
    expect(listed.key).toBeUndefined();
    expect(JSON.stringify(list)).not.toContain(k.key);
    expect(JSON.stringify(list)).not.toContain('null');
  });

  test('at most the caller’s own scopes, never admin; another owner needs admin', async () => {
    const readOnly = await made({ scopes: ['read'] });
    expect(readOnly.scopes).toEqual(['read']);
    const up = await post(a, { scopes: ['read', 'write'] }, readOnly.key);
    expect([up.status, await json(up)]).toEqual([
      403,
      expect.objectContaining({ code: 'FORBIDDEN', details: { required_scope: 'write' } }),
    ]);
    const admin = await post(a, { scopes: ['admin'] });
    expect([admin.status, (await json(admin)).details]).toEqual([403, { required_scope: 'admin' }]);
    const other = await post(a, { owner: 'bob' });
    expect([other.status, (await json(other)).details]).toEqual([403, { required_scope: 'admin' }]);
    const forBob = await made({ owner: 'bob', scopes: ['read', 'write', 'admin'] }, KEYS.admin);
    expect(forBob).toMatchObject({ owner: 'bob', scopes: ['read', 'write', 'admin'] });
  });

  test('unknown scope, past expires_at, label over 128 characters: 400 INVALID_BODY', async () => {
    for (const body of [
      { scopes: ['read', 'delete'] },
      { scopes: [] },
      { expires_at: new Date(Date.now() - 1000).toISOString() },
      { expires_at: 'tomorrow' },
      { label: 'x'.repeat(129) },
      { owner: 'bad owner' },
    ]) {
      const res = await post(a, body);
      expect([body, res.status, (await json(res)).code]).toEqual([body, 400, 'INVALID_BODY']);
    }
  });
});

describe('GET /api/keys and DELETE /api/keys/{id}', () => {
  test('an admin lists another owner’s or every owner’s keys; a non-admin gets 403', async () => {
    const bobs = await made({ owner: 'bob', label: 'bob-1' }, KEYS.admin);
    expect((await a.fetch('/api/keys?owner=bob')).status).toBe(403);
    expect((await a.fetch('/api/keys?all_owners=true')).status).toBe(403);
    const ofBob = await json(await a.fetch('/api/keys?owner=bob', { key: KEYS.admin }));
    expect(ofBob.keys.map((k: { id: string }) => k.id)).toContain(bobs.id);
    expect(ofBob.keys.every((k: { owner: string }) => k.owner === 'bob')).toBe(true);
    const all = await json(await a.fetch('/api/keys?all_owners=true', { key: KEYS.admin }));
    expect(new Set(all.keys.map((k: { owner: string }) => k.owner))).toEqual(new Set(['alice', 'bob']));
  });

  test('another owner’s key is 404 for a non-admin; its owner revokes it: 204, then 401 everywhere', async () => {
    const bobs = await made({ owner: 'bob' }, KEYS.admin);
    const del = await a.fetch(`/api/keys/${bobs.id}`, { method: 'DELETE' });
    expect([del.status, (await json(del)).code]).toEqual([404, 'NOT_FOUND']);
    expect((await a.fetch(`/api/keys/${crypto.randomUUID()}`, { method: 'DELETE' })).status).toBe(404);
    expect((await a.fetch('/api/assets', { key: bobs.key })).status).toBe(200);
    expect((await a.fetch(`/api/keys/${bobs.id}`, { method: 'DELETE', key: KEYS.bob })).status).toBe(204);
    expect((await a.fetch(`/api/keys/${bobs.id}`, { method: 'DELETE', key: KEYS.bob })).status).toBe(204);
    const after = await a.fetch('/api/assets', { key: bobs.key });
    expect([after.status, (await json(after)).code]).toEqual([401, 'UNAUTHORIZED']);
    const listed = await json(await a.fetch('/api/keys', { key: KEYS.bob }));
    expect(listed.keys.find((k: { id: string }) => k.id === bobs.id).revoked_at).toMatch(/Z$/);
  });
});

describe('revocation and expiry on every instance within 5 s', () => {
  test('a key revoked on one instance is refused on the other within 5 s (its cache was warm)', async () => {
    const k = await made({});
    expect((await b.fetch('/api/assets', { key: k.key })).status).toBe(200);
    expect((await a.fetch('/api/assets', { key: k.key })).status).toBe(200);
    const revokedAt = Date.now();
    expect((await a.fetch(`/api/keys/${k.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await a.fetch('/api/assets', { key: k.key })).status).toBe(401);
    await waitFor(async () => ((await b.fetch('/api/assets', { key: k.key })).status === 401 ? true : undefined), {
      timeoutMs: 5_000,
      intervalMs: 100,
      what: 'the other instance to refuse the revoked key',
    });
    expect(Date.now() - revokedAt).toBeLessThan(5_000);
  });

  test('an expired key is 401 on both instances', async () => {
    const expiresAt = Date.now() + 1500;
    const k = await made({ expires_at: new Date(expiresAt).toISOString() });
    expect((await a.fetch('/api/keys')).status).toBe(200);
    expect((await b.fetch('/api/assets', { key: k.key })).status).toBe(200);
    expect((await a.fetch('/api/assets', { key: k.key })).status).toBe(200);
    await waitFor(async () => (Date.now() > expiresAt ? true : undefined), { intervalMs: 100 });
    for (const svc of [a, b]) {
      const res = await svc.fetch('/api/assets', { key: k.key });
      expect([res.status, (await json(res)).code]).toEqual([401, 'UNAUTHORIZED']);
    }
  });
});

test('last_used_at is kept to the minute, not written on every request', async () => {
  const k = await made({});
  const listed = async () =>
    (await json(await a.fetch('/api/keys'))).keys.find((x: { id: string }) => x.id === k.id) as {
      last_used_at?: string;
    };
  expect((await listed()).last_used_at).toBeUndefined();
  const before = Date.now();
  expect((await b.fetch('/api/assets', { key: k.key })).status).toBe(200);
  const first = await waitFor(async () => (await listed()).last_used_at);
  expect(Math.abs(new Date(first).getTime() - before)).toBeLessThan(60_000);
  for (let i = 0; i < 5; i++) expect((await a.fetch('/api/assets', { key: k.key })).status).toBe(200);
  for (let i = 0; i < 5; i++) expect((await b.fetch('/api/assets', { key: k.key })).status).toBe(200);
  expect((await listed()).last_used_at).toBe(first);
});

test('hostile keys (long, binary, NUL, many spaces) are 401, never 500', async () => {
  for (const key of ['k'.repeat(10_000), 'ÿþ\u0080\u00ff', 'ask_ x', ' '.repeat(50) + 'a']) {
    const res = await rawRequest(a.url, 'GET', '/api/keys', [['X-API-Key', key]]);
    expect([key.slice(0, 10), res.status]).toEqual([key.slice(0, 10), 401]);
  }
  const nul = await rawRequest(a.url, 'GET', '/api/keys', [['Authorization', 'Bearer ab\u0000cd']]);
  expect(nul.status).toBeGreaterThanOrEqual(400);
  expect(nul.status).toBeLessThan(500);
  const bin = await rawRequest(a.url, 'POST', '/api/keys', [['Authorization', `Bearer ${'\u00e9'.repeat(4000)}`]]);
  expect(bin.status).toBe(401);
});

describe('GraphQL', () => {
  test('createApiKey, apiKeys, revokeApiKey', async () => {
    const made = await gql(
      a,
      'mutation { createApiKey(input: { label: "gql", scopes: [read] }) { key apiKey { id owner label scopes } } }',
    );
    expect(made.errors).toBeUndefined();
    const { key, apiKey } = made.data.createApiKey;
    expect(apiKey).toMatchObject({ owner: 'alice', label: 'gql', scopes: ['read'] });
    expect((await a.fetch('/api/assets', { key })).status).toBe(200);
    const listed = await gql(a, '{ apiKeys { id scopes } }');
    expect(listed.data.apiKeys.map((k: { id: string }) => k.id)).toContain(apiKey.id);
    const up = await gql(a, 'mutation { createApiKey(input: { scopes: [admin] }) { key } }');
    expect([up.code, up.errors?.[0].extensions.details]).toEqual(['FORBIDDEN', { required_scope: 'admin' }]);
    const revoked = await gql(a, `mutation { revokeApiKey(id: "${apiKey.id}") }`);
    expect(revoked.data).toEqual({ revokeApiKey: true });
    expect((await a.fetch('/api/assets', { key })).status).toBe(401);
    const notMine = await gql(b, `mutation { revokeApiKey(id: "${apiKey.id}") }`, {}, { key: KEYS.bob });
    expect(notMine.code).toBe('NOT_FOUND');
  });
});

describe('the audit trail', () => {
  test('key creation and revocation, by whom, for whom; never a secret; admin only; cursor pages', async () => {
    const k = await made({ owner: 'bob', label: 'audited' }, KEYS.admin);
    expect((await a.fetch(`/api/keys/${k.id}`, { method: 'DELETE', key: KEYS.admin })).status).toBe(204);
    const denied = await a.fetch('/api/audit');
    expect([denied.status, (await json(denied)).details]).toEqual([403, { required_scope: 'admin' }]);
    const res = await a.fetch('/api/audit?limit=500', { key: KEYS.admin });
    const text = await res.text();
    expect(text).not.toContain('ask_');
    const events = JSON.parse(text).events as { id: string; action: string; target_id: string; actor: unknown }[];
    const mine = events.filter((e) => e.target_id === k.id);
    expect(mine.map((e) => e.action)).toEqual(['key.revoke', 'key.create']);
    expect(mine[1]).toMatchObject({ actor: { key_id: 'env:admin', owner: 'admin' }, target_owner: 'bob' });
    // Pages of one, newest first, each next_cursor continuing where the last stopped, the last without one.
    const seen: string[] = [];
    let after = '';
    for (;;) {
      const page = await json(await a.fetch(`/api/audit?limit=1${after}`, { key: KEYS.admin }));
      seen.push(...page.events.map((e: { id: string }) => e.id));
      if (!page.next_cursor) break;
      after = `&after=${page.next_cursor}`;
    }
    expect(seen).toEqual(events.map((e) => e.id));
    expect((await a.fetch('/api/audit?after=nonsense', { key: KEYS.admin })).status).toBe(400);
    const g = await gql(
      a,
      '{ auditEvents(limit: 2) { items { action actorKeyId targetId } nextCursor } }',
      {},
      {
        key: KEYS.admin,
      },
    );
    expect(g.data.auditEvents.items).toHaveLength(2);
    expect(typeof g.data.auditEvents.nextCursor).toBe('string');
  });

  test("an admin's change of another owner's asset is recorded", async () => {
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('audited bytes')]), 'a.txt');
    form.append('tags', 'models');
    const up = await json(await a.fetch('/api/assets', { method: 'POST', body: form }));
    const set = await gql(
      a,
      `mutation { setAssetImmutable(id: "${up.id}", immutable: true) { id } }`,
      {},
      {
        key: KEYS.admin,
      },
    );
    expect(set.errors).toBeUndefined();
    const events = (await json(await a.fetch('/api/audit', { key: KEYS.admin }))).events;
    expect(events[0]).toMatchObject({
      action: 'asset.set_immutable',
      target_owner: 'alice',
      target_id: up.id,
      details: { is_immutable: true },
    });
  });
});

test('npm run keys: create --scopes read makes a read-only key; list shows scopes', () => {
  const env = { PATH: process.env.PATH ?? '', DATABASE_URL: a.databaseUrl, LOG_LEVEL: 'silent' };
  const run = (...args: string[]) =>
    execFileSync(process.execPath, ['dist/src/cli/keys.js', ...args], { cwd: ROOT, env, encoding: 'utf8' });
  const key = run('create', '--owner', 'carol', '--scopes', 'read', '--label', 'wall').trim();
  expect(key).toMatch(/^ask_/);
  expect(run('list')).toMatch(/\tcarol\tread\t/);
  return (async () => {
    expect((await a.fetch('/api/assets', { key })).status).toBe(200);
    const w = await a.fetch('/api/assets/download', {
      method: 'POST',
      key,
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect([w.status, (await json(w)).details]).toEqual([403, { required_scope: 'write' }]);
  })();
});

test('the migration: keys made before scopes keep what they could do', async () => {
  const template = process.env.TEST_PG_TEMPLATE_URL!;
  const name = `m_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: template.replace(/\/template_assets$/, '/postgres') });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`);
  await admin.end();
  const db = new Client({ connectionString: template.replace(/\/template_assets$/, `/${name}`) });
  await db.connect();
  try {
    const dir = path.join(ROOT, 'prisma', 'migrations');
    const all = fs
      .readdirSync(dir)
      .filter((d) => /^\d+_/.test(d))
      .sort();
    const at = all.indexOf('20261202100000_api_key_scopes_audit');
    expect(at).toBeGreaterThan(0);
    for (const m of all.slice(0, at)) await db.query(fs.readFileSync(path.join(dir, m, 'migration.sql'), 'utf8'));
    await db.query(`INSERT INTO api_key (id, owner_id, key_hash, is_admin) VALUES
      ('00000000-0000-4000-8000-000000000001', 'o', '${'a'.repeat(64)}', false),
      ('00000000-0000-4000-8000-000000000002', 'root', '${'b'.repeat(64)}', true)`);
    for (const m of all.slice(at)) await db.query(fs.readFileSync(path.join(dir, m, 'migration.sql'), 'utf8'));
    const rows = await db.query<{ owner_id: string; scopes: string[] }>(
      'SELECT owner_id, scopes FROM api_key ORDER BY id',
    );
    expect(rows.rows).toEqual([
      { owner_id: 'o', scopes: ['read', 'write'] },
      { owner_id: 'root', scopes: ['read', 'write', 'admin'] },
    ]);
  } finally {
    await db.end();
  }
});
