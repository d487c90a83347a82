import crypto from 'node:crypto';
import { OPERATOR } from '../../src/domain/auth/api-key.service';
import { json, KEYS, startTestService, uploadForm, type TestService } from '../helpers/harness';
import { startS3Server, type TestS3Server } from '../helpers/rgw';

/** A quota refusal on the S3 store (Ceph RGW): the refused upload leaves no object, content-addressed or temporary. */
jest.setTimeout(180_000);

let s3: TestS3Server;
let svc: TestService;
let key: string;
beforeAll(async () => {
  s3 = await startS3Server();
  svc = await startTestService(s3.env, { validateResponses: true });
  key = (await svc.container.apiKeys.create(OPERATOR, { owner: 'quota-s3' })).key;
});
afterAll(async () => {
  await svc?.stop();
  await s3?.stop();
});

test('an upload past the asset limit is 403 QUOTA_EXCEEDED and leaves no object in the bucket', async () => {
  const put = await svc.fetch('/api/owners/quota-s3/quota', {
    method: 'PUT',
    key: KEYS.admin,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ max_assets: 1 }),
  });
  expect(put.status).toBe(200);
  const upload = (data: Buffer) => svc.fetch('/api/assets', { method: 'POST', key, body: uploadForm(data) });
  expect((await upload(crypto.randomBytes(6000))).status).toBe(201);
  const before = await s3.objectKeys();
  const refused = await upload(crypto.randomBytes(7000));
  expect(refused.status).toBe(403);
  expect(await json(refused)).toEqual({
    code: 'QUOTA_EXCEEDED',
    message: expect.any(String),
    details: { limit: 1, used: 1, requested: 1, kind: 'assets' },
  });
  expect(await s3.objectKeys()).toEqual(before);
  expect(await s3.pendingUploads()).toBe(0);
});
