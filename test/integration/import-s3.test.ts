import { addHostileEntries, comfyTree, seeded } from '../helpers/comfy-tree';
import { blake3Of, json, startTestService, type TestService } from '../helpers/harness';
import { startS3Server, type TestS3Server } from '../helpers/rgw';

/** The server-side import (contract 6.4) on the S3 store: the same assets, the same skips, a second import reads nothing. */
jest.setTimeout(120_000);

let s3: TestS3Server;
let svc: TestService;
afterAll(async () => {
  await svc?.stop();
  await s3?.stop();
});

test('a ComfyUI tree imported into S3, deduplicated, its odd entries skipped; a second import reads no file', async () => {
  const tree = comfyTree('alice');
  const lora = seeded(3 * 1024 * 1024, 21);
  tree.write('models/loras/a.safetensors', lora);
  tree.write('models/vae/a-copy.safetensors', lora);
  tree.write('input/x y/ü.png', seeded(1000, 22));
  tree.write('output/empty.png', Buffer.alloc(0));
  addHostileEntries(tree);
  s3 = await startS3Server();
  svc = await startTestService({ ...s3.env, ...tree.env }, { validateResponses: true });

  const first = await json(await svc.fetch('/api/assets/seed?wait=true', { method: 'POST' }));
  expect(first.status).toBe('completed');
  expect(first.progress).toMatchObject({ total: 7, created: 3, files_read: 4 });
  expect(first.errors.map((e: any) => e.code).sort()).toEqual(['NOT_A_FILE', 'SYMLINK_OUTSIDE_ROOT', 'UNREADABLE']);
  const assets = (await json(await svc.fetch('/api/assets?limit=100'))).assets;
  const model = assets.find((a: any) => a.asset_hash === blake3Of(lora));
  expect(model.tags).toEqual(expect.arrayContaining(['models', 'model_type:loras', 'loras', 'model_type:vae', 'vae']));
  expect([...model.metadata.paths].sort()).toEqual(['models/loras/a.safetensors', 'models/vae/a-copy.safetensors']);
  const bytes = Buffer.from(await (await svc.fetch(`/api/assets/${model.id}/content`)).arrayBuffer());
  expect(bytes.equals(lora)).toBe(true);

  const second = await json(await svc.fetch('/api/assets/seed?wait=true', { method: 'POST' }));
  expect(second.progress).toMatchObject({ created: 0, files_read: 0 });
});
