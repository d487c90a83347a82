import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import sharp from 'sharp';
import { ContentRepository } from '../../src/domain/content/content.repository';
import { verifyContent } from '../../src/domain/content/content-verify';
import { comfyTree, seeded, type ComfyTree } from '../helpers/comfy-tree';
import { blake3Of, json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { readZip } from '../helpers/zip';

/**
 * In-place import roots (contract 6.4, `IMPORT_ROOTS=models=/path:in-place`): a ComfyUI models folder indexed where it
 * is, served from its files, never written; drift (a file changed or gone) is `409 CONTENT_CHANGED` and the `missing`
 * tag, prune deletes what is missing, and an upload of the same bytes makes the content independent of its file.
 */
jest.setTimeout(120_000);

const services: TestService[] = [];
afterAll(async () => {
  await Promise.all(services.map((s) => s.stop()));
});

let svc: TestService;
let tree: ComfyTree;
/** What each file under models/ is (its bytes and mtime) as this test last wrote it: the service never changes one. */
const written = new Map<string, { data: Buffer; mtimeMs: number }>();
const write = (rel: string, data: Buffer): void => {
  const p = tree.write(rel, data);
  written.set(rel, { data, mtimeMs: fs.statSync(p).mtimeMs });
};
const remove = (rel: string): void => {
  fs.rmSync(path.join(tree.root, ...rel.split('/')));
  written.delete(rel);
};

const lora = seeded(70_001, 11);
const base = seeded(300_003, 12);
const base2 = seeded(310_007, 13);
const out = seeded(9_009, 14);
let preview: Buffer;

const seedWait = async () => {
  const res = await svc.fetch('/api/assets/seed?wait=true', { method: 'POST' });
  expect(res.status).toBe(200);
  return json(res);
};
const assetsByName = async (): Promise<Map<string, any>> => {
  const body = await json(await svc.fetch('/api/assets?limit=500'));
  return new Map((body.assets as any[]).map((a) => [a.name, a]));
};
const assetOf = async (id: string) => json(await svc.fetch(`/api/assets/${id}`));
const content = async (id: string, headers: Record<string, string> = {}) => {
  const res = await svc.fetch(`/api/assets/${id}/content`, { headers });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
};

/** Every regular file under the service's data dir, by size: the store never holds an in-place file's bytes. */
function storedSizes(): Set<number> {
  const sizes = new Set<number>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) sizes.add(fs.statSync(p).size);
    }
  };
  walk(svc.dataDir);
  return sizes;
}

beforeAll(async () => {
  tree = comfyTree('alice');
  write('models/loras/style.safetensors', lora);
  write('models/checkpoints/base.safetensors', base);
  preview = await sharp(seeded(640 * 480 * 3, 15), { raw: { width: 640, height: 480, channels: 3 } })
    .png()
    .toBuffer();
  write('models/loras/style.png', preview);
  tree.write('output/o.bin', out);
  fs.symlinkSync(tree.outside, path.join(tree.root, 'models', 'loras', 'leak.safetensors'));
  svc = await startTestService(
    {
      IMPORT_ROOTS: `models=${path.join(tree.root, 'models')}:in-place,output=${path.join(tree.root, 'output')}`,
      IMPORT_ROOTS_OWNER: 'alice',
    },
    { validateResponses: true },
  );
  services.push(svc);
});

test('a seed indexes the in-place root where it is: served from the files, ranges, HEAD hash, no bytes in the store', async () => {
  const body = await seedWait();
  expect(body.progress).toMatchObject({ created: 4, files_read: 4 });
  expect(body.errors).toEqual([
    expect.objectContaining({ path: 'models/loras/leak.safetensors', code: 'SYMLINK_OUTSIDE_ROOT' }),
  ]);
  const assets = await assetsByName();
  const style = assets.get('style.safetensors');
  expect(style).toMatchObject({ size: lora.length, asset_hash: blake3Of(lora) });
  expect(style.tags).toEqual(expect.arrayContaining(['models', 'model_type:loras', 'loras']));
  expect(style.tags).not.toContain('missing');

  const whole = await content(style.id);
  expect([whole.status, whole.body.equals(lora), whole.headers.get('etag')]).toEqual([
    200,
    true,
    `"${blake3Of(lora)}"`,
  ]);
  const part = await content(style.id, { range: 'bytes=100-4195' });
  expect([part.status, part.headers.get('content-range'), part.body.equals(lora.subarray(100, 4196))]).toEqual([
    206,
    `bytes 100-4195/${lora.length}`,
    true,
  ]);
  const head = await svc.fetch(`/api/assets/hash/${blake3Of(lora)}`, { method: 'HEAD' });
  expect(head.status).toBe(200);
  // Another owner makes an asset of it by hash, as of any stored content.
  const bobs = await svc.fetch('/api/assets/from-hash', {
    method: 'POST',
    key: KEYS.bob,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ hash: blake3Of(base), tags: ['models'] }),
  });
  expect(bobs.status).toBe(201);

  // The copied root is stored as before; the in-place files are not.
  const sizes = storedSizes();
  expect([sizes.has(out.length), sizes.has(lora.length), sizes.has(base.length)]).toEqual([true, false, false]);
});

test('thumbnails and exports read the files in place; the sweeps and verify leave them alone', async () => {
  const assets = await assetsByName();
  const image = assets.get('style.png');
  const thumb = await waitFor(async () => (await assetOf(image.id)).thumbnail_url as string | undefined, {
    what: 'the thumbnail of an in-place image',
    timeoutMs: 30_000,
  });
  const res = await fetch(thumb);
  expect(res.status).toBe(200);
  expect((await sharp(Buffer.from(await res.arrayBuffer())).metadata()).width).toBe(512);

  const style = assets.get('style.safetensors');
  const started = await svc.fetch('/api/assets/export', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ asset_ids: [style.id, image.id] }),
  });
  expect(started.status).toBe(202);
  const taskId = (await json(started)).task_id;
  const task = await waitFor(async () => {
    const t = await json(await svc.fetch(`/api/tasks/${taskId}`));
    return t.status === 'completed' || t.status === 'failed' ? t : undefined;
  });
  expect(task).toMatchObject({ status: 'completed', result: { assets_failed: 0 } });
  const { url } = await json(await svc.fetch(`/api/assets/exports/${task.result.export_name}`));
  const zip = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'in-place-export-')), 'a.zip');
  fs.writeFileSync(zip, Buffer.from(await (await fetch(url)).arrayBuffer()));
  expect((await readZip(zip)).map((m) => m.blake3).sort()).toEqual([blake3Of(lora), blake3Of(preview)].sort());

  // The orphan sweep and the quarantine's review see no in-place content as a blob to move; verify skips them.
  const { content: contents, database, blobStore } = svc.container;
  expect(await contents.sweepOrphanBlobs(0)).toBe(0);
  expect(await contents.reviewQuarantine()).toEqual({ restored: 0, removed: 0 });
  const repo = new ContentRepository(database.prisma, database.pool, database.transactions);
  const report = await verifyContent(repo, blobStore, { sample: 'all' });
  expect([report.consistent, report.missing.count]).toEqual([true, 0]);
  expect((await content(style.id)).body.equals(lora)).toBe(true);
});

test('a second seed of the unchanged tree reads no file', async () => {
  const body = await seedWait();
  expect(body.progress).toMatchObject({ created: 0, files_read: 0, bytes_read: 0 });
});

test('new files in batches (more than one): each content in place with its location, none orphaned; one asset per content', async () => {
  // 70 new files (the import commits 64 per transaction), two of them the same bytes under two names.
  const files = Array.from({ length: 70 }, (_, i) => seeded(2_000 + i, 100 + i));
  files.forEach((data, i) => write(`models/embeddings/e${i}.safetensors`, data));
  write('models/embeddings/again.safetensors', files[3]!);
  const body = await seedWait();
  expect(body.progress).toMatchObject({ created: 70, files_read: 71 });
  const assets = await assetsByName();
  expect(files.every((data, i) => i === 3 || assets.get(`e${i}.safetensors`)?.asset_hash === blake3Of(data))).toBe(
    true,
  );
  // The pair of one content: one asset, named after whichever file the readers came to first.
  const pair = [assets.get('e3.safetensors'), assets.get('again.safetensors')].filter(Boolean);
  expect(pair.map((a) => a.asset_hash)).toEqual([blake3Of(files[3]!)]);
  const hashes = files.map((d) => blake3Of(d).slice('blake3:'.length));
  const { rows } = await svc.container.database.pool.query<{ in_place: boolean; orphaned: boolean; located: boolean }>(
    `SELECT c.in_place, c.orphaned_at IS NOT NULL AS orphaned, l.blake3 IS NOT NULL AS located
       FROM content c LEFT JOIN content_location l USING (blake3) WHERE c.blake3 = ANY($1::text[])`,
    [hashes],
  );
  expect(rows).toHaveLength(70);
  expect(rows.every((r) => r.in_place && !r.orphaned && r.located)).toBe(true);
  // No JSON null where the column has none (the batch's rows go in as one JSON parameter).
  const nulls = await svc.container.database.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM asset a JOIN content c ON c.blake3 = a.content_hash
      WHERE c.blake3 = ANY($1::text[]) AND (jsonb_typeof(a.metadata) = 'null' OR jsonb_typeof(c.metadata) = 'null'
        OR jsonb_typeof(a.user_metadata) <> 'object' OR a.metadata->'paths' IS NULL)`,
    [hashes],
  );
  expect(nulls.rows[0]!.n).toBe(0);
  expect(storedSizes().has(files[0]!.length)).toBe(false);
  const first = await content(assets.get('e5.safetensors').id);
  expect([first.status, first.body.equals(files[5]!)]).toEqual([200, true]);
});

test('a file changed: 409 CONTENT_CHANGED and `missing`; a re-seed makes its new bytes new content', async () => {
  const old = (await assetsByName()).get('base.safetensors');
  expect((await svc.fetch(`/api/assets/${old.id}/content`, { method: 'HEAD' })).status).toBe(200);
  write('models/checkpoints/base.safetensors', base2);
  // A HEAD answers as the GET will: the file no longer holds that content.
  const head = await svc.fetch(`/api/assets/${old.id}/content`, { method: 'HEAD' });
  expect(head.status).toBe(409);
  const res = await content(old.id);
  expect(res.status).toBe(409);
  expect(JSON.parse(res.body.toString())).toMatchObject({
    code: 'CONTENT_CHANGED',
    details: { path: 'models/checkpoints/base.safetensors' },
  });
  expect((await assetOf(old.id)).tags).toContain('missing');

  const body = await seedWait();
  expect(body.progress).toMatchObject({ created: 1, files_read: 1 });
  const now = await json(await svc.fetch(`/api/assets?hash=${blake3Of(base2)}`));
  expect(now.assets).toHaveLength(1);
  expect(now.assets[0]).toMatchObject({ name: 'base.safetensors', size: base2.length });
  expect(now.assets[0].tags).not.toContain('missing');
  expect((await content(now.assets[0].id)).body.equals(base2)).toBe(true);
  expect((await assetOf(old.id)).tags).toContain('missing');
  expect((await content(old.id)).status).toBe(409);
});

test('a file gone: `missing` after a seed; an identical file back: the tag is cleared', async () => {
  const style = (await assetsByName()).get('style.safetensors');
  remove('models/loras/style.safetensors');
  await seedWait();
  expect((await assetOf(style.id)).tags).toContain('missing');
  expect((await content(style.id)).status).toBe(409);
  const listed = await json(await svc.fetch('/api/assets?tags_all=missing'));
  expect((listed.assets as any[]).map((a) => a.id)).toContain(style.id);

  write('models/loras/style.safetensors', lora);
  await seedWait();
  expect((await assetOf(style.id)).tags).not.toContain('missing');
  const back = await content(style.id);
  expect([back.status, back.body.equals(lora)]).toEqual([200, true]);
});

test('prune deletes the assets whose files are missing, and touches no file', async () => {
  const old = (await json(await svc.fetch(`/api/assets?hash=${blake3Of(base)}`))).assets[0];
  expect(old.tags).toContain('missing');
  const res = await svc.fetch('/api/assets/prune', { method: 'POST' });
  expect([res.status, await json(res)]).toEqual([200, { status: 'completed', marked: 1 }]);
  expect((await svc.fetch(`/api/assets/${old.id}`)).status).toBe(404);
  // Bob's asset of the same content is his to prune.
  const bobs = await json(await svc.fetch(`/api/assets?hash=${blake3Of(base)}`, { key: KEYS.bob }));
  expect(bobs.assets).toHaveLength(1);
  const again = await svc.fetch('/api/assets/prune', { method: 'POST' });
  expect(await json(again)).toEqual({ status: 'completed', marked: 0 });
  expect((await assetsByName()).has('style.safetensors')).toBe(true);
});

test('an upload of the same bytes stores them: the content no longer depends on its file', async () => {
  const current = (await json(await svc.fetch(`/api/assets?hash=${blake3Of(base2)}`))).assets[0];
  const up = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(base2, {}, 'base.safetensors') });
  expect(up.status).toBe(200);
  expect((await json(up)).id).toBe(current.id);
  expect(storedSizes().has(base2.length)).toBe(true);
  remove('models/checkpoints/base.safetensors');
  const served = await content(current.id);
  expect([served.status, served.body.equals(base2)]).toEqual([200, true]);
  await seedWait();
  expect((await assetOf(current.id)).tags).not.toContain('missing');
});

test('an instance that cannot see the root answers 503 CONTENT_UNAVAILABLE for its files', async () => {
  const other = await startTestService({}, { databaseUrl: svc.databaseUrl, validateResponses: true });
  services.push(other);
  const style = (await assetsByName()).get('style.safetensors');
  const res = await other.fetch(`/api/assets/${style.id}/content`);
  expect(res.status).toBe(503);
  expect(await json(res)).toMatchObject({ code: 'CONTENT_UNAVAILABLE', details: { root: 'models' } });
});

test('every file under the in-place root is as this test left it: same bytes, same mtime', () => {
  const found: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      const r = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(p, r);
      else if (e.isFile()) found.push(r);
    }
  };
  walk(path.join(tree.root, 'models'), 'models');
  expect(found.sort()).toEqual([...written.keys()].sort());
  for (const [rel, w] of written) {
    const p = path.join(tree.root, ...rel.split('/'));
    expect([rel, fs.readFileSync(p).equals(w.data), fs.statSync(p).mtimeMs]).toEqual([rel, true, w.mtimeMs]);
  }
  expect(fs.lstatSync(path.join(tree.root, 'models', 'loras', 'leak.safetensors')).isSymbolicLink()).toBe(true);
});
