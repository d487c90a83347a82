/**
 * What the asset browser's everyday use reads from GraphQL (contract 6.3): `Asset.downloadUrl` (a signed attachment
 * URL an `<a href>` saves without the key, ranges included), the `kinds`, `createdAfter`/`createdBefore` and
 * `baseModel` filters of `assets` and `tagCounts`, `baseModels`, and `viewer` (the key's owner and scopes).
 */
import { gql } from '../helpers/graphql';
import { json, KEYS, startTestService, uploadForm, type TestService } from '../helpers/harness';
import { safetensors } from '../helpers/ui-checks';

let svc: TestService;
const ids: Record<string, string> = {};
let between: string;

async function upload(data: Buffer, name: string, mime: string, tags: string[]): Promise<string> {
  const form = uploadForm(data, { tags, mime_type: mime }, name);
  const res = await svc.fetch('/api/assets', { method: 'POST', body: form });
  expect(res.status).toBe(201);
  return (await json(res)).id;
}

beforeAll(async () => {
  svc = await startTestService();
  ids.image = await upload(Buffer.from('not really a png 1'), 'a.png', 'image/png', ['everyday']);
  ids.text = await upload(Buffer.from('{"a": 1}'), 'b.json', 'application/json', ['everyday']);
  // The created_at of the rows before and after this instant differ (the database's clock, milliseconds apart).
  await new Promise((r) => setTimeout(r, 20));
  between = new Date().toISOString();
  await new Promise((r) => setTimeout(r, 20));
  ids.model = await upload(Buffer.alloc(4096, 7), 'x.safetensors', 'application/octet-stream', ['everyday', 'models']);
  ids.audio = await upload(Buffer.from('ID3 not really audio'), 'c.mp3', 'audio/mpeg', ['everyday', 'sound']);
  ids.other = await upload(Buffer.from('PK zip-ish'), 'd.zip', 'application/zip', ['everyday']);
});
afterAll(async () => {
  await svc?.stop();
});

const names = async (filter: Record<string, unknown>): Promise<string[]> => {
  const r = await gql(
    svc,
    'query($f: AssetFilter) { assets(filter: $f, limit: 50, sort: name, order: asc) { items { name } total } }',
    { f: { tagsAll: ['everyday'], ...filter } },
  );
  expect(r.errors).toBeUndefined();
  expect(r.data.assets.total).toBe(r.data.assets.items.length);
  return r.data.assets.items.map((a: { name: string }) => a.name);
};

test('downloadUrl is a signed attachment URL: no key, Content-Disposition attachment, byte ranges', async () => {
  const r = await gql(svc, 'query($id: ID!) { asset(id: $id) { downloadUrl } }', { id: ids.model });
  const url: string = r.data.asset.downloadUrl;
  expect(url).toMatch(
    new RegExp(`^${svc.url}/api/assets/${ids.model}/content\\?access=[\\w.-]+&disposition=attachment$`),
  );
  expect(url).not.toContain(KEYS.alice);
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename=/);
  expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.alloc(4096, 7))).toBe(true);
  const part = await fetch(url, { headers: { range: 'bytes=10-19' } });
  expect([part.status, part.headers.get('content-range')]).toEqual([206, 'bytes 10-19/4096']);
  // An image is an attachment too when downloaded (its preview is another URL).
  const img = await gql(svc, 'query($id: ID!) { asset(id: $id) { downloadUrl } }', { id: ids.image });
  expect((await fetch(img.data.asset.downloadUrl)).headers.get('content-disposition')).toMatch(/^attachment/);
  // Another owner's asset through a grant of alice is still a 404.
  const bobs = await svc.fetch('/api/assets', {
    method: 'POST',
    key: KEYS.bob,
    body: uploadForm(Buffer.from('bob'), {}, 'bob.txt'),
  });
  const grant = new URL(url).searchParams.get('access');
  expect((await fetch(`${svc.url}/api/assets/${(await json(bobs)).id}/content?access=${grant}`)).status).toBe(404);
});

test('kinds filters by what an asset is: a model by its name, the rest by media type, other by none', async () => {
  expect(await names({ kinds: ['image'] })).toEqual(['a.png']);
  expect(await names({ kinds: ['text'] })).toEqual(['b.json']);
  expect(await names({ kinds: ['model'] })).toEqual(['x.safetensors']);
  expect(await names({ kinds: ['audio', 'image'] })).toEqual(['a.png', 'c.mp3']);
  expect(await names({ kinds: ['other'] })).toEqual(['d.zip']);
  expect(await names({ kinds: ['video'] })).toEqual([]);
  const bad = await gql(svc, '{ assets(filter: {kinds: [picture]}) { total } }');
  expect(bad.status).toBe(400);
});

test('createdAfter and createdBefore bound the creation time; tagCounts take the same filters', async () => {
  expect(await names({ createdAfter: between })).toEqual(['c.mp3', 'd.zip', 'x.safetensors']);
  expect(await names({ createdBefore: between })).toEqual(['a.png', 'b.json']);
  expect(await names({ createdBefore: between, kinds: ['text'] })).toEqual(['b.json']);
  const facets = await gql(svc, 'query($f: AssetFilter) { tagCounts(filter: $f) { name count } }', {
    f: { createdAfter: between, tagsNone: ['models'] },
  });
  expect(facets.data.tagCounts).toEqual([
    { name: 'everyday', count: 2 },
    { name: 'sound', count: 1 },
  ]);
  const bad = await gql(svc, '{ assets(filter: {createdAfter: "yesterday"}) { total } }');
  expect(bad.status).toBe(400);
});

test('baseModel filters by the derived metadata.base_model; baseModels lists the values, most used first', async () => {
  const lora = (name: string, base: string) =>
    upload(
      safetensors({ ss_base_model_version: base, ss_output_name: name }),
      `${name}.safetensors`,
      'application/octet-stream',
      ['based'],
    );
  await lora('l1', 'sdxl_base_v1-0');
  await lora('l2', 'sdxl_base_v1-0');
  await lora('l3', 'sd_v1');
  const based = async (baseModel: string) => {
    const r = await gql(
      svc,
      'query($f: AssetFilter) { assets(filter: $f, sort: name, order: asc) { items { name } total } tagCounts(filter: $f) { name count } }',
      { f: { tagsAll: ['based'], baseModel } },
    );
    expect(r.errors).toBeUndefined();
    return { names: r.data.assets.items.map((a: { name: string }) => a.name), facets: r.data.tagCounts };
  };
  expect(await based('sdxl_base_v1-0')).toEqual({
    names: ['l1.safetensors', 'l2.safetensors'],
    facets: [{ name: 'based', count: 2 }],
  });
  expect((await based('sd_v1')).names).toEqual(['l3.safetensors']);
  expect((await based('flux')).names).toEqual([]);
  // The everyday model without metadata names none; other owners' models are not listed.
  await svc.fetch('/api/assets', {
    method: 'POST',
    key: KEYS.bob,
    body: uploadForm(safetensors({ ss_base_model_version: 'bobs_model' }), {}, 'b.safetensors'),
  });
  const list = await gql(svc, '{ baseModels { name count } }');
  expect(list.data.baseModels).toEqual([
    { name: 'sdxl_base_v1-0', count: 2 },
    { name: 'sd_v1', count: 1 },
  ]);
  expect((await gql(svc, '{ baseModels(limit: 1) { name } }')).data.baseModels).toEqual([{ name: 'sdxl_base_v1-0' }]);
  // Out of range: the argument validator's INVALID_BODY, naming the field.
  const zero = await gql(svc, '{ baseModels(limit: 0) { name } }');
  expect(zero.errors?.[0]?.extensions?.code).toBe('INVALID_BODY');
  const long = await gql(svc, `{ assets(filter: {baseModel: "${'x'.repeat(300)}"}) { total } }`);
  expect(long.errors?.[0]?.extensions?.code).toBe('INVALID_BODY');
});

test('viewer names the key’s owner and scopes', async () => {
  const a = await gql(svc, '{ viewer { owner scopes } }');
  expect(a.data.viewer.owner).toBe('alice');
  expect(a.data.viewer.scopes).not.toContain('admin');
  const admin = await gql(svc, '{ viewer { scopes } }', {}, { key: KEYS.admin });
  expect(admin.data.viewer.scopes).toContain('admin');
});
