import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { json, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { startS3Server, type TestS3Server } from '../helpers/rgw';
import { readZip } from '../helpers/zip';

/** Bulk export on S3 (Ceph RGW): the archive is one object under .objects/exports, handed out as a presigned URL. */
let s3: TestS3Server;
let svc: TestService;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-zip-s3-'));
beforeAll(async () => {
  s3 = await startS3Server();
  svc = await startTestService({ ...s3.env, EXPORT_TTL_SECONDS: '3' });
});
afterAll(async () => {
  await svc?.stop();
  await s3?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('export to S3: presigned URL, members equal to the blobs, removed after the TTL', async () => {
  const assets = [];
  for (const name of ['one.bin', 'two.bin']) {
    const res = await svc.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(crypto.randomBytes(300_000), { name }),
    });
    assets.push(await json(res));
  }
  const started = await json(
    await svc.fetch('/api/assets/export', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ asset_ids: assets.map((a) => a.id) }),
    }),
  );
  const task = await waitFor(async () => {
    const t = await json(await svc.fetch(`/api/tasks/${started.task_id}`));
    return t.status === 'completed' || t.status === 'failed' ? t : undefined;
  });
  expect(task.status).toBe('completed');
  const key = `.objects/exports/${task.result.export_name}`;
  expect(await s3.objectKeys()).toContain(key);
  const { url } = await json(await svc.fetch(`/api/assets/exports/${task.result.export_name}`));
  expect(url.startsWith(s3.endpoint)).toBe(true);
  expect(url).toContain('X-Amz-Signature=');
  const res = await fetch(url);
  expect(res.status).toBe(200);
  const file = path.join(tmp, 'a.zip');
  fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()));
  const members = await readZip(file);
  expect(members.map((m) => [m.name, m.blake3])).toEqual(assets.map((a) => [a.name, a.asset_hash]));

  await waitFor(
    async () => ((await svc.fetch(`/api/assets/exports/${task.result.export_name}`)).status === 404 ? true : undefined),
    { timeoutMs: 10_000 },
  );
  expect(await svc.container.exports.sweepExpired()).toBeGreaterThanOrEqual(1);
  expect(await s3.objectKeys()).not.toContain(key);
});

test('an export failing mid-archive on S3 (a blob read breaks after two 8 MiB parts went up) leaves no object and no pending multipart upload', async () => {
  const res = await svc.fetch('/api/assets', {
    method: 'POST',
    body: uploadForm(crypto.randomBytes(20 * 1024 * 1024), { name: 'big.bin' }),
  });
  const asset = await json(res);
  const store = svc.container.blobStore;
  const original = store.read.bind(store);
  jest.spyOn(store, 'read').mockImplementationOnce(async (hash) => {
    const whole = await original(hash);
    let seen = 0;
    return Readable.from(
      (async function* () {
        for await (const chunk of whole as AsyncIterable<Buffer>) {
          seen += chunk.length;
          if (seen > 18 * 1024 * 1024) throw Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
          yield chunk;
        }
      })(),
    );
  });
  const exportsBefore = (await s3.objectKeys()).filter((k) => k.startsWith('.objects/exports/'));
  const started = await json(
    await svc.fetch('/api/assets/export', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ asset_ids: [asset.id] }),
    }),
  );
  const task = await waitFor(async () => {
    const t = await json(await svc.fetch(`/api/tasks/${started.task_id}`));
    return t.status === 'completed' || t.status === 'failed' ? t : undefined;
  });
  expect(task.status).toBe('failed');
  expect(task.error_message).toMatch(/EIO/);
  expect((await s3.objectKeys()).filter((k) => k.startsWith('.objects/exports/'))).toEqual(exportsBefore);
  expect(await s3.pendingUploads()).toBe(0);
});
