import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { comfyTree, seeded } from '../helpers/comfy-tree';
import { blake3Of, createTestDatabase, json, waitFor } from '../helpers/harness';
import { spawnService, type ServiceProcess } from '../helpers/service-process';

/** The import as a real process killed with SIGKILL in the middle, then started again. */
jest.setTimeout(240_000);

const children: ServiceProcess[] = [];
afterAll(async () => {
  await Promise.all(children.map((c) => c.kill('SIGTERM')));
});

async function spawn(env: Record<string, string>): Promise<ServiceProcess> {
  const c = await spawnService(env);
  children.push(c);
  return c;
}

test('SIGKILL mid-import and a restart: the import resumes and ends with every file stored whole, once', async () => {
  const tree = comfyTree('alice');
  const files = new Map<string, Buffer>();
  for (let i = 0; i < 1500; i++) {
    const data = seeded(2048 + (i % 7) * 1000, 50_000 + i);
    files.set(`output/b/${i}.png`, data);
    tree.write(`output/b/${i}.png`, data);
  }
  const env = {
    ...tree.env,
    DATABASE_URL: await createTestDatabase(),
    DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-import-kill-')),
  };
  const first = await spawn(env);
  const started = await first.fetch('/api/assets/seed', { method: 'POST' });
  expect(started.status).toBe(202);
  const { task_id } = await json(started);
  await waitFor(
    async () =>
      (await json(await first.fetch('/api/assets/seed/status'))).progress?.created >= 100 ? true : undefined,
    { timeoutMs: 60_000 },
  );
  await first.kill('SIGKILL');

  const second = await spawn(env);
  // The dead worker's run is taken over once its heartbeat is stale; a new start meanwhile is refused.
  expect((await second.fetch('/api/assets/seed', { method: 'POST' })).status).toBe(409);
  const task = await waitFor(
    async () => {
      const t = await json(await second.fetch(`/api/tasks/${task_id}`));
      return t.status === 'completed' || t.status === 'failed' ? t : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 250 },
  );
  expect(task.status).toBe('completed');
  const assets: any[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await json(await second.fetch(`/api/assets?limit=500&offset=${offset}`));
    assets.push(...page.assets);
    if (!page.has_more) break;
  }
  expect(assets).toHaveLength(files.size);
  const byName = new Map(assets.map((a) => [a.name, a]));
  for (const [p, data] of files) expect(byName.get(p.slice('output/'.length))?.asset_hash).toBe(blake3Of(data));
  // Nothing half-stored: a sample of contents reads back whole.
  for (const a of assets.slice(0, 20)) {
    const bytes = Buffer.from(await (await second.fetch(`/api/assets/${a.id}/content`)).arrayBuffer());
    expect(blake3Of(bytes)).toBe(a.asset_hash);
  }
});
