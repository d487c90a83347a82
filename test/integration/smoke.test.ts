import { json, startTestService, uploadForm, type TestService } from '../helpers/harness';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

test('upload then read back', async () => {
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm('hello', { tags: 'a,b' }, 'h.txt') });
  expect(res.status).toBe(201);
  const asset = await json(res);
  const got = await svc.fetch(`/api/assets/${asset.id}/content`);
  expect(await got.text()).toBe('hello');
});
