/**
 * The model import wizard: GET /api/assets/remote-metadata?url= against the fake Hugging
 * Face and Civitai servers, and GraphQL remoteMetadata. No byte of the model file may be fetched. Every JSON answer
 * is validated against openapi.yaml.
 */
import crypto from 'node:crypto';
import { gql } from '../helpers/graphql';
import { bytes, startFakeProviders, type FakeProviders } from '../helpers/fake-providers';
import { json, startTestService, type TestService } from '../helpers/harness';

let fake: FakeProviders;
let svc: TestService;
beforeAll(async () => {
  fake = await startFakeProviders();
  // No Civitai token: early-access models need one. MAX_UPLOAD_BYTES small enough to test FILE_TOO_LARGE.
  svc = await startTestService(
    { ...fake.env, CIVITAI_API_TOKEN: '', MAX_UPLOAD_BYTES: String(3 * 1024 * 1024) },
    { validateResponses: true },
  );
});
afterAll(async () => {
  await svc?.stop();
  await fake?.close();
});

const remote = async (url: string) => {
  const res = await svc.fetch(`/api/assets/remote-metadata?url=${encodeURIComponent(url)}`);
  return { status: res.status, body: await json(res) };
};

/** Nothing was fetched from the CDN that serves the files' bytes. */
const cdnGets = () => fake.cdn.requests.length;

test('the route is not captured by /api/assets/{id} (no INVALID_ID), and url is required', async () => {
  const r = await svc.fetch('/api/assets/remote-metadata');
  expect(r.status).toBe(400);
  expect((await json(r)).code).toBe('INVALID_QUERY');
});

test('Civitai: file name, size, model type → tags, name, preview image as a data: URL, valid', async () => {
  const image = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), crypto.randomBytes(200)]);
  const cases: [string, string | undefined][] = [
    ['Checkpoint', 'checkpoints'],
    ['LORA', 'loras'],
    ['LoCon', 'loras'],
    ['TextualInversion', 'embeddings'],
    ['VAE', 'vae'],
    ['Controlnet', 'controlnet'],
    ['Upscaler', 'upscale_models'],
    ['Poses', undefined],
  ];
  const before = cdnGets();
  let id = 7100;
  for (const [modelType, folder] of cases) {
    const data = bytes(2048, id);
    const url = fake.civitai.add(++id, {
      data,
      name: `m-${id}.safetensors`,
      modelType,
      modelName: 'Great model',
      image,
    });
    const { status, body } = await remote(url);
    expect([modelType, status]).toEqual([modelType, 200]);
    expect(body).toMatchObject({
      content_length: data.length,
      final_url: url,
      filename: `m-${id}.safetensors`,
      name: 'Great model v1.0',
      preview_image: `data:image/png;base64,${image.toString('base64')}`,
      validation: { is_valid: true, errors: [] },
    });
    // models, model_type:<folder> and the plain folder (contract 3.7): old and new ComfyUI clients both find it.
    if (folder) expect(body.tags).toEqual(['models', `model_type:${folder}`, folder]);
    else expect('tags' in body).toBe(false);
  }
  expect(cdnGets()).toBe(before);
});

test('Civitai: a model page URL as users paste it (?modelVersionId=) is that version, like its download URL', async () => {
  const data = bytes(4096, 7150);
  const download = fake.civitai.add(7150, { data, name: 'paged.safetensors', modelType: 'LORA', modelName: 'Paged' });
  const before = cdnGets();
  for (const page of [
    `${fake.civitai.url}/models/880?modelVersionId=7150`,
    `${fake.civitai.url}/models/880/paged-lora?modelVersionId=7150`,
  ]) {
    const { status, body } = await remote(page);
    expect([page, status]).toEqual([page, 200]);
    expect(body).toMatchObject({
      content_length: data.length,
      final_url: `${fake.civitai.url}/api/download/models/7150`,
      filename: 'paged.safetensors',
      tags: ['models', 'model_type:loras', 'loras'],
      validation: { is_valid: true },
    });
  }
  expect((await remote(download)).body.filename).toBe('paged.safetensors');
  expect(cdnGets()).toBe(before);
});

test('Civitai: a model page without a version is its newest version (the models API); an unknown model is 404', async () => {
  fake.civitai.add(7160, { data: bytes(1000, 7160), name: 'old.safetensors', modelId: 881, modelType: 'Checkpoint' });
  fake.civitai.add(7161, { data: bytes(2000, 7161), name: 'new.safetensors', modelId: 881, modelType: 'Checkpoint' });
  const before = cdnGets();
  for (const page of [`${fake.civitai.url}/models/881`, `${fake.civitai.url}/models/881/some-model`]) {
    const { status, body } = await remote(page);
    expect([page, status]).toEqual([page, 200]);
    expect(body).toMatchObject({
      final_url: `${fake.civitai.url}/api/download/models/7161`,
      filename: 'new.safetensors',
      content_length: 2000,
      tags: ['models', 'model_type:checkpoints', 'checkpoints'],
    });
  }
  expect(await remote(`${fake.civitai.url}/models/882`)).toMatchObject({
    status: 404,
    body: { code: 'SOURCE_NOT_FOUND' },
  });
  expect(await remote(`${fake.civitai.url}/models/881?modelVersionId=abc`)).toMatchObject({
    status: 400,
    body: { code: 'SOURCE_NOT_ALLOWED' },
  });
  expect(await remote(`${fake.civitai.url}/user/someone`)).toMatchObject({
    status: 400,
    body: { code: 'SOURCE_NOT_ALLOWED' },
  });
  expect(cdnGets()).toBe(before);
});

test('Civitai: early access without a token → 403; unknown version → 404; a non-model file → FORMAT_NOT_ALLOWED', async () => {
  const early = fake.civitai.add(7201, { data: bytes(100, 1), name: 'e.safetensors', earlyAccess: true });
  expect(await remote(early)).toMatchObject({ status: 403, body: { code: 'SOURCE_AUTH_REQUIRED' } });
  expect(await remote(`${fake.civitai.url}/api/download/models/999999`)).toMatchObject({
    status: 404,
    body: { code: 'SOURCE_NOT_FOUND' },
  });
  const zip = fake.civitai.add(7202, { data: bytes(100, 2), name: 'poses.zip', modelType: 'Poses' });
  const { status, body } = await remote(zip);
  expect(status).toBe(200);
  expect(body.validation).toMatchObject({ is_valid: false, errors: [{ code: 'FORMAT_NOT_ALLOWED', field: 'url' }] });
  const big = fake.civitai.add(7203, { data: bytes(4 * 1024 * 1024, 3), name: 'big.safetensors' });
  expect((await remote(big)).body.validation).toMatchObject({ is_valid: false, errors: [{ code: 'FILE_TOO_LARGE' }] });
});

test('Hugging Face: HEAD only (size from X-Linked-Size), folder → tags; gated → 403; missing → 404; not a provider → 400', async () => {
  const data = bytes(3000, 9);
  const url = fake.hf.lfs('org/repo/loras/style.safetensors', data);
  const before = cdnGets();
  const { status, body } = await remote(url);
  expect(status).toBe(200);
  expect(body).toMatchObject({
    content_length: data.length,
    final_url: url,
    filename: 'style.safetensors',
    tags: ['models', 'model_type:loras', 'loras'],
    validation: { is_valid: true, errors: [] },
  });
  expect('preview_image' in body).toBe(false);
  expect(cdnGets()).toBe(before);
  expect(fake.hf.requests.filter((r) => r.path.endsWith('loras/style.safetensors')).map((r) => r.method)).toEqual([
    'HEAD',
  ]);

  const plain = await remote(fake.hf.lfs('org/repo/readme-image.png', bytes(10, 10)));
  expect(plain.body.validation.errors).toEqual([expect.objectContaining({ code: 'FORMAT_NOT_ALLOWED' })]);
  expect('tags' in plain.body).toBe(false);

  fake.hf.gated.set('org/gated', 'another-token');
  fake.hf.lfs('org/gated/model.safetensors', bytes(10, 11));
  expect(await remote(`${fake.hf.url}/org/gated/resolve/main/model.safetensors`)).toMatchObject({
    status: 403,
    body: { code: 'SOURCE_AUTH_REQUIRED' },
  });
  expect(await remote(`${fake.hf.url}/org/repo/resolve/main/nope.safetensors`)).toMatchObject({
    status: 404,
    body: { code: 'SOURCE_NOT_FOUND' },
  });
  expect(await remote('https://example.com/model.safetensors')).toMatchObject({
    status: 400,
    body: { code: 'SOURCE_NOT_ALLOWED' },
  });
});

test('GraphQL remoteMetadata answers the same', async () => {
  const url = fake.civitai.add(7301, { data: bytes(1024, 12), name: 'g.safetensors', modelType: 'VAE' });
  const r = await gql(
    svc,
    'query($u: String!) { remoteMetadata(url: $u) { contentLength finalUrl filename tags validation { isValid errors { code } } } }',
    { u: url },
  );
  expect(r.data.remoteMetadata).toEqual({
    contentLength: 1024,
    finalUrl: url,
    filename: 'g.safetensors',
    tags: ['models', 'model_type:vae', 'vae'],
    validation: { isValid: true, errors: [] },
  });
});
