import fs from 'node:fs';
import path from 'node:path';
import { addHostileEntries, comfyTree, seeded, type ComfyTree } from '../helpers/comfy-tree';
import { blake3Of, json, KEYS, startTestService, waitFor, type TestService } from '../helpers/harness';

/**
 * The server-side import (contract 6.4): POST /api/assets/seed over a ComfyUI-shaped tree, on the disk store.
 */
jest.setTimeout(120_000);

const services: TestService[] = [];
afterAll(async () => {
  await Promise.all(services.map((s) => s.stop()));
});

async function start(env: Record<string, string>): Promise<TestService> {
  const svc = await startTestService(env, { validateResponses: true });
  services.push(svc);
  return svc;
}

const seedWait = (svc: TestService, key: string = KEYS.alice) =>
  svc.fetch('/api/assets/seed?wait=true', { method: 'POST', key });

async function allAssets(svc: TestService): Promise<any[]> {
  const body = await json(await svc.fetch('/api/assets?limit=500'));
  return body.assets;
}

describe('a ComfyUI tree', () => {
  let svc: TestService;
  let tree: ComfyTree;
  const lora = seeded(70_000, 1);
  const base = seeded(200_000, 2);
  const photo = seeded(5_000, 3);
  const out1 = seeded(9_000, 4);

  beforeAll(async () => {
    tree = comfyTree('alice');
    tree.write('models/loras/style.safetensors', lora);
    tree.write('models/loras/style-copy.safetensors', lora);
    tree.write('models/checkpoints/SDXL/base ünï 🎨 v2.safetensors', base);
    tree.write('models/checkpoints/empty.safetensors', Buffer.alloc(0));
    tree.write('models/loose.bin', seeded(10, 5));
    tree.write('input/photos/a b.png', photo);
    tree.write('output/run 1/o.png', out1);
    addHostileEntries(tree);
    svc = await start(tree.env);
  });

  test("another owner's key cannot start, follow or cancel an import", async () => {
    for (const [p, method] of [
      ['/api/assets/seed', 'POST'],
      ['/api/assets/seed/status', 'GET'],
      ['/api/assets/seed/cancel', 'POST'],
    ] as const) {
      const res = await svc.fetch(p, { method, key: KEYS.bob });
      expect(res.status).toBe(403);
      expect((await json(res)).code).toBe('FORBIDDEN');
    }
    expect((await allAssets(svc)).length).toBe(0);
  });

  test('imports every regular file, tagged and named as push --comfyui, and names what it skipped', async () => {
    const res = await seedWait(svc);
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.status).toBe('completed');
    // 7 regular files (two of one content), the out-of-root link, the FIFO, the loop, the loose model file.
    expect(body.progress).toMatchObject({ total: 10, scanned: 10, created: 5, files_read: 6 });
    const byPath = new Map(body.errors.map((e: any) => [e.path, e.code]));
    expect(byPath).toEqual(
      new Map([
        ['models/loras/leak.safetensors', 'SYMLINK_OUTSIDE_ROOT'],
        ['models/loras/pipe.safetensors', 'NOT_A_FILE'],
        ['models/loras/loop.safetensors', 'UNREADABLE'],
        ['models/loose.bin', 'NOT_A_FILE'],
      ]),
    );

    const assets = await allAssets(svc);
    expect(assets).toHaveLength(5);
    expect(assets.some((a) => a.asset_hash === blake3Of(fs.readFileSync(tree.outside)))).toBe(false);
    const byHash = new Map(assets.map((a) => [a.asset_hash, a]));
    const styled = byHash.get(blake3Of(lora));
    expect(styled.tags).toEqual(['models', 'model_type:loras', 'loras']);
    // Files are read several at a time: the first of the two to be stored names the asset.
    expect(['style.safetensors', 'style-copy.safetensors']).toContain(styled.name);
    expect(styled.loader_path).toBe(styled.name);
    expect([...styled.metadata.paths].sort()).toEqual([
      'models/loras/style-copy.safetensors',
      'models/loras/style.safetensors',
    ]);
    const sdxl = byHash.get(blake3Of(base));
    expect(sdxl).toMatchObject({
      name: 'SDXL/base ünï 🎨 v2.safetensors',
      tags: ['models', 'model_type:checkpoints', 'checkpoints'],
    });
    expect(byHash.get(blake3Of(Buffer.alloc(0)))).toMatchObject({ name: 'empty.safetensors', size: 0 });
    expect(byHash.get(blake3Of(photo))).toMatchObject({ name: 'photos/a b.png', tags: ['input'] });
    expect(byHash.get(blake3Of(out1))).toMatchObject({
      name: 'run 1/o.png',
      tags: ['output'],
      metadata: { paths: ['output/run 1/o.png'] },
    });
    const bytes = Buffer.from(await (await svc.fetch(`/api/assets/${sdxl.id}/content`)).arrayBuffer());
    expect(bytes.equals(base)).toBe(true);

    const tasks = await json(await svc.fetch('/api/tasks?task_name=seed_assets'));
    expect(tasks.tasks).toHaveLength(1);
    expect(tasks.tasks[0]).toMatchObject({
      status: 'completed',
      payload: { roots: ['models', 'input', 'output'] },
      result: { success: true, created: 5 },
    });
    const status = await json(await svc.fetch('/api/assets/seed/status'));
    expect(status).toMatchObject({ state: 'IDLE', progress: { created: 5 } });
  });

  test('a second import reads no unchanged file; an edited file is read and imported again', async () => {
    const again = await json(await seedWait(svc));
    expect(again.progress).toMatchObject({ created: 0, files_read: 0, bytes_read: 0 });
    expect((await allAssets(svc)).length).toBe(5);

    const edited = seeded(9_001, 6);
    const p = tree.write('output/run 1/o.png', edited);
    // Another mtime than the first write's, whatever the file system's clock granularity.
    fs.utimesSync(p, new Date(), new Date(Date.now() + 5_000));
    const third = await json(await seedWait(svc));
    expect(third.progress).toMatchObject({ created: 1, files_read: 1, bytes_read: edited.length });
    const assets = await allAssets(svc);
    expect(assets.find((a) => a.asset_hash === blake3Of(edited))).toMatchObject({
      name: 'run 1/o.png',
      tags: ['output'],
    });
  });

  test('the admin key may import too; GraphQL lists the task', async () => {
    const res = await seedWait(svc, KEYS.admin);
    expect(res.status).toBe(200);
    const q = await svc.fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query:
          '{ tasks(filter: {taskName: "seed_assets"}) { items { taskName status importRoots result { seed { created filesRead } } } } }',
      }),
    });
    const body = await json(q);
    expect(body.errors).toBeUndefined();
    expect(body.data.tasks.items.length).toBeGreaterThanOrEqual(3);
    expect(body.data.tasks.items.every((t: any) => t.taskName === 'seed_assets' && t.status === 'completed')).toBe(
      true,
    );
  });
});

test('with no IMPORT_ROOTS there is nothing to seed: 200 completed, for any key', async () => {
  const svc = await start({});
  for (const key of [KEYS.alice, KEYS.bob]) {
    const res = await svc.fetch('/api/assets/seed', { method: 'POST', key });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      status: 'completed',
      progress: { scanned: 0, total: 0, created: 0, skipped: 0, files_read: 0, bytes_read: 0 },
      errors: [],
    });
  }
  expect(await json(await svc.fetch('/api/assets/seed/status'))).toEqual({ state: 'IDLE', errors: [] });
});

test('one import at a time: a second start is 409 already_running; cancel stops it, nothing half-stored', async () => {
  const tree = comfyTree('alice');
  for (let i = 0; i < 3000; i++) tree.write(`output/batch/${String(i).padStart(5, '0')}.png`, seeded(512, 10_000 + i));
  const svc = await start(tree.env);
  const first = await svc.fetch('/api/assets/seed', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ roots: ['output'] }),
  });
  expect(first.status).toBe(202);
  expect((await json(first)).status).toBe('started');
  const second = await svc.fetch('/api/assets/seed', { method: 'POST', key: KEYS.admin });
  expect(second.status).toBe(409);
  expect((await json(second)).status).toBe('already_running');
  await waitFor(
    async () => ((await json(await svc.fetch('/api/assets/seed/status'))).progress?.created > 20 ? true : undefined),
    { timeoutMs: 60_000 },
  );
  const cancel = await svc.fetch('/api/assets/seed/cancel', { method: 'POST' });
  expect(await json(cancel)).toEqual({ status: 'cancelling' });
  const done = await waitFor(
    async () => {
      const s = await json(await svc.fetch('/api/assets/seed/status'));
      return s.state === 'IDLE' ? s : undefined;
    },
    { timeoutMs: 60_000 },
  );
  expect(done.progress.created).toBeLessThan(3000);
  const tasks = await json(await svc.fetch('/api/tasks?task_name=seed_assets'));
  expect(tasks.tasks[0]).toMatchObject({ status: 'cancelled' });
  // Every asset made is whole: as many as were counted, each of its file's bytes.
  const page = await json(await svc.fetch('/api/assets?limit=1'));
  expect(page.total).toBe(done.progress.created);
  // A later import finishes the job.
  const rest = await json(await seedWait(svc));
  expect({ status: rest.status, created: rest.progress.created, errors: rest.errors.slice(0, 3) }).toEqual({
    status: 'completed',
    created: 3000 - done.progress.created,
    errors: [],
  });
});

test('bad roots are 400 INVALID_BODY', async () => {
  const tree = comfyTree('alice');
  const svc = await start(tree.env);
  const res = await svc.fetch('/api/assets/seed', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ roots: ['custom_nodes'] }),
  });
  expect(res.status).toBe(400);
  expect((await json(res)).code).toBe('INVALID_BODY');
  expect(fs.existsSync(path.join(tree.root, 'models'))).toBe(true);
});
