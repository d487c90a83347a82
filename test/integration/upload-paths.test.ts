import fs from 'node:fs';
import path from 'node:path';
import { seeded } from '../helpers/comfy-tree';
import { blake3Of, json, startTestService, uploadForm, type TestService } from '../helpers/harness';

/**
 * A tree path sent with the create (multipart `path` fields, from-hash `paths`): kept in `metadata.paths` as
 * POST /api/assets/{id}/paths keeps it, so `assets push` records a file's path with its upload in one request.
 */
jest.setTimeout(60_000);

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({}, { validateResponses: true });
});
afterAll(async () => {
  await svc.stop();
});

const upload = (data: Buffer, fields: Record<string, string | string[]>) =>
  svc.fetch('/api/assets', { method: 'POST', body: uploadForm(data, fields, 'lora.safetensors') });

test('a new asset keeps the paths of its upload; the same content uploaded or linked again adds its own', async () => {
  const data = seeded(40_000, 11);
  const first = await upload(data, {
    tags: 'models',
    path: ['models/loras/a.safetensors', 'models/loras/b.safetensors'],
  });
  expect(first.status).toBe(201);
  const a = await json(first);
  expect(a.metadata.paths).toEqual(['models/loras/a.safetensors', 'models/loras/b.safetensors']);

  const again = await upload(data, { tags: 'models', path: 'models/vae/c.safetensors' });
  expect(again.status).toBe(200);
  expect((await json(again)).metadata.paths).toEqual([
    'models/loras/a.safetensors',
    'models/loras/b.safetensors',
    'models/vae/c.safetensors',
  ]);

  const linked = await svc.fetch('/api/assets/from-hash', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ hash: blake3Of(data), tags: ['models'], paths: ['models/vae/c.safetensors', 'd.bin'] }),
  });
  expect(linked.status).toBe(200);
  const after = await json(linked);
  expect(after.id).toBe(a.id);
  expect(after.metadata.paths).toEqual([
    'models/loras/a.safetensors',
    'models/loras/b.safetensors',
    'models/vae/c.safetensors',
    'd.bin',
  ]);
  expect((await json(await svc.fetch(`/api/assets/${a.id}`))).metadata.paths).toEqual(after.metadata.paths);
});

test('a path the paths route would refuse is 400 INVALID_BODY, and nothing is stored', async () => {
  const data = seeded(30_000, 12);
  for (const bad of ['../escape.bin', '/abs.bin', 'a//b.bin', 'x'.repeat(1025)]) {
    const res = await upload(data, { path: bad });
    expect([bad.slice(0, 20), res.status]).toEqual([bad.slice(0, 20), 400]);
    expect(await json(res)).toMatchObject({ code: 'INVALID_BODY' });
  }
  const linked = await svc.fetch('/api/assets/from-hash', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ hash: blake3Of(data), tags: ['x'], paths: ['ok.bin', '../no.bin'] }),
  });
  expect(linked.status).toBe(400);
  const all = (await json(await svc.fetch('/api/assets?limit=100'))).assets;
  expect(all.some((x: { asset_hash: string }) => x.asset_hash === blake3Of(data))).toBe(false);
  expect(fs.readdirSync(path.join(svc.dataDir, 'blobs', '.tmp'))).toEqual([]);
});
