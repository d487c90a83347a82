import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { blake3Of, json, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { gql } from '../helpers/graphql';
import { readZip } from '../helpers/zip';

/**
 * Bulk export against hostile input (issue 13's hostile-input pass): names that would not extract, the signed URL's
 * conditional and HEAD requests, a store that fails mid-archive. Real HTTP, real PostgreSQL, the disk store.
 */
let svc: TestService;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-zip-hostile-'));
beforeAll(async () => {
  svc = await startTestService({}, { validateResponses: true });
});
afterAll(async () => {
  await svc?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const hasUnzip = (() => {
  try {
    execFileSync('unzip', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

async function upload(name: string, bytes = crypto.randomBytes(100 + Math.floor(Math.random() * 2000))) {
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes, { name }, 'f.bin') });
  expect(res.status).toBe(201);
  return json(res);
}

async function exportTask(assetIds: string[]) {
  const res = await svc.fetch('/api/assets/export', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ asset_ids: assetIds }),
  });
  expect(res.status).toBe(202);
  const { task_id } = await json(res);
  return waitFor(
    async () => {
      const t = await json(await svc.fetch(`/api/tasks/${task_id}`));
      return t.status === 'completed' || t.status === 'failed' ? t : undefined;
    },
    { what: 'the export task' },
  );
}

async function signedUrl(exportName: string): Promise<string> {
  return (await json(await svc.fetch(`/api/assets/exports/${exportName}`))).url;
}

test('names that would not extract (a file beside its own folder, too long, device names, RTL overrides, dots only) extract everywhere, each member hash-checked', async () => {
  const names = [
    'a',
    'a/b',
    'A',
    'C:',
    'C:/x',
    '...',
    'evil\u202Etxt.exe',
    'CON',
    'aux.txt',
    'win<>:"|?*.txt',
    'trail. ',
    'x'.repeat(512),
    '🎨'.repeat(128),
    'd/' + 'ü'.repeat(300),
    'é',
    'e\u0301',
  ];
  const assets = [];
  for (const n of names) assets.push(await upload(n));
  const task = await exportTask(assets.map((a) => a.id));
  expect(task.status).toBe('completed');
  const file = path.join(tmp, task.result.export_name);
  fs.writeFileSync(file, Buffer.from(await (await fetch(await signedUrl(task.result.export_name))).arrayBuffer()));

  const members = await readZip(file);
  expect(members.map((m) => m.blake3)).toEqual(assets.map((a) => a.asset_hash));
  const paths = members.map((m) => m.name);
  const key = (p: string) => p.normalize('NFC').toLowerCase();
  expect(new Set(paths.map(key)).size).toBe(paths.length);
  for (const p of paths) {
    for (const seg of p.split('/')) {
      expect(Buffer.byteLength(seg)).toBeLessThanOrEqual(240);
      expect(seg).not.toMatch(
        /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069<>:"|?*\\]|[. ]$|^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/i,
      );
    }
    // No member is another's folder.
    expect(paths.some((q) => key(q).startsWith(key(p) + '/'))).toBe(false);
  }
  if (!hasUnzip) return;
  execFileSync('unzip', ['-tqq', file]);
  // Extracted for real: every member lands as a file inside the folder, with its bytes.
  const out = fs.mkdtempSync(path.join(tmp, 'x-'));
  execFileSync('unzip', ['-qq', file, '-d', out]);
  for (const [i, p] of paths.entries()) {
    const target = path.join(out, ...p.split('/'));
    expect(path.relative(out, target).startsWith('..')).toBe(false);
    expect(blake3Of(fs.readFileSync(target))).toBe(assets[i].asset_hash);
  }
});

test('the signed URL: an ETag, If-Range honoured only with it, HEAD without a body, expiry only in the form it was signed', async () => {
  const a = await upload('r.bin', crypto.randomBytes(5000));
  const task = await exportTask([a.id]);
  const url = await signedUrl(task.result.export_name);
  const whole = Buffer.from(await (await fetch(url)).arrayBuffer());
  const etag = `"${task.result.export_name.replace(/\.zip$/, '')}"`;

  const plain = await fetch(url, { headers: { range: 'bytes=0-9' } });
  expect([plain.status, plain.headers.get('etag')]).toEqual([206, etag]);
  await plain.arrayBuffer();
  const same = await fetch(url, { headers: { range: 'bytes=0-9', 'if-range': etag } });
  expect(same.status).toBe(206);
  expect(Buffer.from(await same.arrayBuffer()).equals(whole.subarray(0, 10))).toBe(true);
  for (const other of ['"something-else"', 'Wed, 21 Oct 2015 07:28:00 GMT']) {
    const res = await fetch(url, { headers: { range: 'bytes=0-9', 'if-range': other } });
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(whole)).toBe(true);
  }
  const head = await fetch(url, { method: 'HEAD' });
  expect([head.status, head.headers.get('content-length'), head.headers.get('etag')]).toEqual([
    200,
    String(whole.length),
    etag,
  ]);
  expect((await head.arrayBuffer()).byteLength).toBe(0);

  const u = new URL(url);
  const expires = u.searchParams.get('expires')!;
  for (const alias of [`0${expires}`, `${expires}.0`, Number(expires).toExponential(), ` ${expires}`]) {
    u.searchParams.set('expires', alias);
    const res = await fetch(u);
    expect(res.status).toBe(403);
    expect((await json(res)).code).toBe('FORBIDDEN');
  }
});

test('the store failing mid-archive (ENOSPC) fails the task and leaves no archive, no temporary, no record', async () => {
  const assets = [
    await upload('one.bin', crypto.randomBytes(300_000)),
    await upload('two.bin', crypto.randomBytes(300_000)),
  ];
  const exportsDir = path.join(svc.dataDir, 'blobs', '.objects', 'exports');
  const archives = () => (fs.existsSync(exportsDir) ? fs.readdirSync(exportsDir).sort() : []);
  const before = { archives: archives(), records: await svc.container.database.prisma.exportArchive.count() };
  const store = svc.container.blobStore as unknown as { writeTemp: (src: AsyncIterable<Buffer>) => Promise<unknown> };
  const original = store.writeTemp.bind(store);
  let written = 0;
  jest.spyOn(store, 'writeTemp').mockImplementationOnce((src) =>
    original(
      (async function* () {
        for await (const chunk of src) {
          yield chunk;
          written += chunk.length;
          if (written > 200_000)
            throw Object.assign(new Error('ENOSPC: no space left on device, write'), {
              code: 'ENOSPC',
              errno: -28,
              syscall: 'write',
            });
        }
      })(),
    ),
  );
  const task = await exportTask(assets.map((a) => a.id));
  expect(task.status).toBe('failed');
  expect(task.error_message).toMatch(/ENOSPC/);
  expect(task.result?.export_name).toBeUndefined();
  expect(written).toBeGreaterThan(200_000);
  expect(archives()).toEqual(before.archives);
  expect(fs.readdirSync(path.join(svc.dataDir, 'blobs', '.tmp'))).toEqual([]);
  expect(await svc.container.database.prisma.exportArchive.count()).toBe(before.records);
});

test('GraphQL startExport refuses what REST refuses: a NUL or lone surrogate in job_asset_name_filters is INVALID_BODY, not INTERNAL', async () => {
  const job = crypto.randomUUID();
  for (const name of ['a\u0000b', 'lone \ud800 surrogate']) {
    const res = await gql(
      svc,
      `mutation($f: JSON) { startExport(input: { jobIds: ["${job}"], jobAssetNameFilters: $f }) { id } }`,
      { f: { [job]: [name] } },
    );
    expect(res.errors?.[0]?.extensions?.code).toBe('INVALID_BODY');
    const rest = await svc.fetch('/api/assets/export', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ job_ids: [job], job_asset_name_filters: { [job]: [name] } }),
    });
    expect([rest.status, (await json(rest)).code]).toEqual([400, 'INVALID_BODY']);
  }
});

test('an Idempotency-Key over 255 characters is 400 INVALID_BODY (was a database error: 500)', async () => {
  const a = await upload('idem.bin');
  const res = await svc.fetch('/api/assets/export', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': crypto.randomBytes(5000).toString('base64') },
    body: JSON.stringify({ asset_ids: [a.id] }),
  });
  expect([res.status, (await json(res)).code]).toEqual([400, 'INVALID_BODY']);
  const ok = await svc.fetch('/api/assets/export', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'k'.repeat(255) },
    body: JSON.stringify({ asset_ids: [a.id] }),
  });
  expect(ok.status).toBe(202);
  // GraphQL's key is any string: a NUL is refused as such (the same rule as a download's key), not as a long key.
  const nul = await gql(
    svc,
    `mutation($k: String) { startExport(input: { assetIds: ["${a.id}"], idempotencyKey: $k }) { id } }`,
    { k: 'a\u0000b' },
  );
  expect(nul.errors?.[0]?.extensions?.code).toBe('INVALID_BODY');
  expect(nul.errors?.[0]?.message).toMatch(/NUL/);
});

test('a selection of nothing (unknown or foreign ids, duplicates of them, jobs without outputs) and assets all deleted before the job ran complete without success and leave no archive', async () => {
  const archives = (dir: string) => {
    const d = path.join(dir, 'blobs', '.objects', 'exports');
    return fs.existsSync(d) ? fs.readdirSync(d) : [];
  };
  // The earlier tests' exports finished first: only this test's could add an archive.
  await waitFor(
    async () =>
      (await svc.container.database.prisma.task.count({ where: { status: { in: ['created', 'running'] } } })) === 0 ||
      undefined,
  );
  const before = archives(svc.dataDir);
  const unknown = crypto.randomUUID();
  for (const body of [{ asset_ids: [unknown, unknown, unknown.toUpperCase()] }, { job_ids: [crypto.randomUUID()] }]) {
    const res = await svc.fetch('/api/assets/export', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(202);
    const { task_id } = await json(res);
    let t: any;
    for (let i = 0; i < 200 && !['completed', 'failed', 'cancelled'].includes(t?.status); i++) {
      await new Promise((r) => setTimeout(r, 50));
      t = await json(await svc.fetch(`/api/tasks/${task_id}`));
    }
    expect([t.status, t.result?.success, t.result?.error, t.result?.export_name]).toEqual([
      'completed',
      false,
      'No valid assets to export',
      undefined,
    ]);
  }
  expect(archives(svc.dataDir)).toEqual(before);

  // Deleted between the request and its job: an API-only instance takes the request, its job is run here by hand.
  const api = await startTestService({ ROLE: 'api' });
  try {
    const a = await json(
      await api.fetch('/api/assets', {
        method: 'POST',
        body: uploadForm(crypto.randomBytes(500), { name: 'gone.bin' }),
      }),
    );
    const started = await json(
      await api.fetch('/api/assets/export', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ asset_ids: [a.id] }),
      }),
    );
    expect((await api.fetch(`/api/assets/${a.id}`, { method: 'DELETE' })).status).toBe(204);
    await api.container.exports.run(started.task_id);
    const t = await json(await api.fetch(`/api/tasks/${started.task_id}`));
    expect([t.status, t.result?.success, t.result?.export_name]).toEqual(['completed', false, undefined]);
    expect(archives(api.dataDir)).toEqual([]);
  } finally {
    await api.stop();
  }
});
