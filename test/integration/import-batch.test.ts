import fs from 'node:fs';
import path from 'node:path';
import { ImportBatches } from '../../src/domain/imports/import-batch';
import { comfyTree, seeded } from '../helpers/comfy-tree';
import { blake3Of, json, queryRows, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';

/**
 * The import's many small files (issue 28): their assets are made a batch of files per transaction, with the same
 * outcome as one create per file (duplicates under two names, content the owner has already, thumbnail jobs), and a
 * batch that one file makes fail is made file by file so only that file is skipped.
 */
jest.setTimeout(120_000);

const services: TestService[] = [];
afterAll(async () => {
  await Promise.all(services.map((s) => s.stop()));
});

const seedWait = async (svc: TestService) => json(await svc.fetch('/api/assets/seed?wait=true', { method: 'POST' }));

async function assetsOf(svc: TestService): Promise<any[]> {
  return (await json(await svc.fetch('/api/assets?limit=500'))).assets;
}

const sql = <T>(svc: TestService, text: string, values: unknown[] = []): Promise<T[]> =>
  queryRows<T>(svc.databaseUrl, text, values);

test('150 files are made in a few transactions, as one create per file would make them', async () => {
  const commits = jest.spyOn(ImportBatches.prototype, 'commit');
  const tree = comfyTree('alice');
  const n = 150;
  for (let i = 0; i < n; i++) tree.write(`output/run/img_${i}.png`, seeded(2_000 + i, 100 + i));
  tree.write('output/run/copy of img_0.png', seeded(2_000, 100));
  const kept = seeded(3_000, 7);
  tree.write('input/again.png', kept);
  const svc = await startTestService(tree.env);
  services.push(svc);
  const up = await svc.fetch('/api/assets', {
    method: 'POST',
    body: uploadForm(kept, { tags: 'mine' }, 'kept.png'),
  });
  expect(up.status).toBe(201);
  const upId = (await json(up)).id;

  const res = await seedWait(svc);
  expect(res.status).toBe('completed');
  expect(res.progress).toMatchObject({ total: n + 2, scanned: n + 2, created: n, skipped: 2, files_read: n + 2 });
  expect(res.errors).toEqual([]);

  // A few transactions of at most 64 files, every one committed: not one per file, and no fallback.
  expect(commits.mock.calls.length).toBeGreaterThanOrEqual(3);
  expect(commits.mock.calls.length).toBeLessThan(10);
  for (const [, files] of commits.mock.calls) expect(files.length).toBeLessThanOrEqual(64);
  const settled = await Promise.allSettled(commits.mock.results.map((r) => r.value));
  expect(settled.every((s) => s.status === 'fulfilled')).toBe(true);
  commits.mockRestore();

  const all = await assetsOf(svc);
  expect(all).toHaveLength(n + 1);
  const first = all.find((a) => a.hash === blake3Of(seeded(2_000, 100)));
  expect(first.tags).toEqual(['output']);
  expect([...first.metadata.paths].sort()).toEqual(['output/run/copy of img_0.png', 'output/run/img_0.png']);
  expect(first.preview_id).toBe(first.id);
  const again = all.find((a) => a.id === upId);
  expect(again.metadata.paths).toEqual(['input/again.png']);
  expect([...again.tags].sort()).toEqual(['input', 'mine']);
  expect(again.name).toBe('kept.png');

  // Every new content has its thumbnail job, run to an outcome (these bytes are no image: failed).
  const made = await waitFor(async () => {
    const [row] = await sql<{ n: number }>(svc, 'SELECT count(*)::int AS n FROM thumbnail');
    return row!.n >= n + 1 ? row!.n : undefined;
  });
  // The uploaded content has its own, from its upload.
  expect(made).toBe(n + 1);
});

test("a batch one file makes fail is made file by file: that file is reported, the batch's others are stored", async () => {
  const tree = comfyTree('alice');
  for (let i = 0; i < 10; i++) tree.write(`output/img_${i}.png`, seeded(1_000 + i, 300 + i));
  const svc = await startTestService(tree.env);
  services.push(svc);
  // A content row whose SHA-256 disagrees with the bytes of img_3 (as a corrupted database would have).
  const hex = blake3Of(seeded(1_003, 303)).slice('blake3:'.length);
  await sql(
    svc,
    `INSERT INTO content (blake3, sha256, size, mime_type, first_name) VALUES ($1, $2, 1003, 'image/png', 'x')`,
    [hex, '0'.repeat(64)],
  );

  const res = await seedWait(svc);
  expect(res.status).toBe('completed');
  expect(res.progress).toMatchObject({ total: 10, created: 9, skipped: 1 });
  expect(res.errors).toEqual([{ path: 'output/img_3.png', code: 'HASH_MISMATCH', message: expect.any(String) }]);
  expect(await assetsOf(svc)).toHaveLength(9);
  // Nothing of any file stayed in the temporary area.
  expect(fs.readdirSync(path.join(svc.dataDir, 'blobs', '.tmp'))).toEqual([]);
});
