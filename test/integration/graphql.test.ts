/**
 * GraphQL over real HTTP: every asset query and mutation, the multipart upload, error codes, owner isolation,
 * admin-only operations, CSRF, query limits and error masking. (Tasks and downloads: graphql-tasks.test.ts.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { blake3Of, granted, json, KEYS, sha256Of, startTestService, type TestService } from '../helpers/harness';
import { ASSET_FIELDS, gql, gqlUpload, UPLOAD, type Json } from '../helpers/graphql';

const MAX_UPLOAD = 256 * 1024;
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ MAX_UPLOAD_BYTES: String(MAX_UPLOAD) });
});
afterAll(async () => {
  await svc?.stop();
});
afterEach(() => jest.restoreAllMocks());

let n = 0;
/** Unique bytes per call, so dedupe never joins two tests' assets. */
const unique = (label = 'x') => `${label}-${++n}-${Math.random()}`;

async function upload(
  content: string | Buffer,
  input: Json = {},
  key: string = KEYS.alice,
  fileName = 'f.bin',
): Promise<Json> {
  const r = await gqlUpload(svc, UPLOAD, { input }, content, { key, fileName });
  if (r.errors) throw new Error(JSON.stringify(r.errors));
  return r.data.uploadAsset;
}

describe('authentication', () => {
  test('no key or an unknown key: HTTP 401 with UNAUTHORIZED, and nothing runs', async () => {
    for (const key of [null, 'not-a-key']) {
      const r = await gql(svc, '{ assets { total } }', {}, { key });
      expect(r.status).toBe(401);
      expect(r.code).toBe('UNAUTHORIZED');
      expect(r.data).toBeUndefined();
    }
  });

  test('an upload without a key is refused before any byte is stored; the connection stays usable', async () => {
    const content = Buffer.alloc(200 * 1024, 3);
    const r = await gqlUpload(svc, UPLOAD, {}, content, { key: null });
    expect([r.status, r.code]).toEqual([401, 'UNAUTHORIZED']);
    for (let i = 0; i < 3; i++) expect((await gql(svc, '{ assets { total } }')).status).toBe(200);
    expect(
      (await gql(svc, 'query($h: String!) { contentExists(hash: $h) }', { h: sha256Of(content) })).data.contentExists,
    ).toBe(false);
  });

  test('Authorization: Bearer works like X-API-Key', async () => {
    const r = await gql(
      svc,
      '{ assets { total } }',
      {},
      { key: null, headers: { authorization: `Bearer ${KEYS.bob}` } },
    );
    expect(r.status).toBe(200);
    expect(r.data.assets.total).toEqual(expect.any(Number));
  });

  test('introspection is on (with a key)', async () => {
    const r = await gql(
      svc,
      '{ __schema { queryType { name } mutationType { name } } __type(name: "Asset") { fields { name } } }',
    );
    expect(r.data.__schema).toEqual({ queryType: { name: 'Query' }, mutationType: { name: 'Mutation' } });
    expect(r.data.__type.fields.map((f: Json) => f.name)).toEqual(
      expect.arrayContaining(['assetHash', 'mimeType', 'userMetadata', 'previewUrl', 'isImmutable', 'size']),
    );
  });
});

describe('uploadAsset (GraphQL multipart request)', () => {
  test('creates an asset with normalised tags, the file name and a sniffed MIME type; the bytes are stored', async () => {
    const content = unique('upload');
    const r = await upload(
      content,
      { tags: [' Models ', 'models', 'LoRAs', ''], userMetadata: { a: 1 } },
      KEYS.alice,
      'notes.txt',
    );
    expect(r.createdNew).toBe(true);
    expect(r.asset).toMatchObject({
      name: 'notes.txt',
      size: Buffer.byteLength(content),
      assetHash: blake3Of(Buffer.from(content)),
      mimeType: 'text/plain',
      // Case kept (contract 2); plain text is its own preview (contract 3.7).
      tags: ['Models', 'models', 'LoRAs'],
      userMetadata: { a: 1 },
      previewId: null,
      previewUrl: granted(svc, `${svc.url}/api/assets/${r.asset.id}/content`),
      isImmutable: false,
    });
    expect(r.asset.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const bytes = await svc.fetch(`/api/assets/${r.asset.id}/content`);
    expect(await bytes.text()).toBe(content);
  });

  test('same content again: the existing asset, createdNew false; a chosen id is idempotent; another owner gets ID_CONFLICT', async () => {
    const content = unique('dedupe');
    const first = await upload(content, { name: 'one' });
    const again = await upload(content, { name: 'two', tags: ['ignored'] });
    expect(again).toMatchObject({ createdNew: false, asset: { id: first.asset.id, name: 'one' } });

    const id = '0b9a6f0e-4f5e-4d3b-9c41-6a1d2f0c7e11';
    const withId = await upload(unique('id'), { id });
    expect(withId).toMatchObject({ createdNew: true, asset: { id } });
    const sameId = await upload(unique('id-again'), { id });
    expect(sameId).toMatchObject({ createdNew: false, asset: { id } });
    const bob = await gqlUpload(svc, UPLOAD, { input: { id } }, unique('bob'), { key: KEYS.bob });
    expect(bob.code).toBe('ID_CONFLICT');
  });

  test('an image is its own preview; a zero-byte file is content too', async () => {
    const img = await upload(Buffer.concat([PNG, Buffer.from(unique())]), {}, KEYS.alice, 'p.png');
    expect(img.asset).toMatchObject({
      mimeType: 'image/png',
      previewId: img.asset.id,
      previewUrl: granted(svc, `${svc.url}/api/assets/${img.asset.id}/content`),
    });
    const empty = await gqlUpload(svc, UPLOAD, {}, Buffer.alloc(0), { key: KEYS.bob, fileName: 'empty' });
    expect(empty.data.uploadAsset.asset.size).toBe(0);
  });

  test('invalid metadata: INVALID_BODY / PAYLOAD_TOO_LARGE, and nothing is stored', async () => {
    const content = unique('invalid');
    const cases: [Json, string][] = [
      [{ tags: Array.from({ length: 65 }, (_, i) => `t${i}`) }, 'INVALID_BODY'],
      [{ tags: ['x'.repeat(129)] }, 'INVALID_BODY'],
      [{ userMetadata: [1, 2] }, 'INVALID_BODY'],
      [{ userMetadata: { big: 'x'.repeat(257 * 1024) } }, 'PAYLOAD_TOO_LARGE'],
      [{ name: '   ' }, 'INVALID_BODY'],
      [{ mimeType: 'not a mime' }, 'INVALID_BODY'],
      [{ id: 'not-a-uuid' }, 'INVALID_BODY'],
      [{ previewId: '5f0c1a52-8d1e-4b8e-a1f2-3c4d5e6f7a8b' }, 'INVALID_PREVIEW_ID'],
    ];
    for (const [input, code] of cases) {
      const r = await gqlUpload(svc, UPLOAD, { input }, content);
      expect({ input, code: r.code }).toEqual({ input, code });
    }
    expect(
      (await gql(svc, 'query($h: String!) { contentExists(hash: $h) }', { h: blake3Of(Buffer.from(content)) })).data
        .contentExists,
    ).toBe(false);
  });

  test('over MAX_UPLOAD_BYTES: PAYLOAD_TOO_LARGE, no content and no temporary left', async () => {
    const big = Buffer.alloc(MAX_UPLOAD + 1, 7);
    const r = await gqlUpload(svc, UPLOAD, {}, big);
    expect(r.code).toBe('PAYLOAD_TOO_LARGE');
    expect(
      (await gql(svc, 'query($h: String!) { contentExists(hash: $h) }', { h: sha256Of(big) })).data.contentExists,
    ).toBe(false);
    const tmp = path.join(svc.dataDir, 'blobs', '.tmp');
    expect(fs.existsSync(tmp) ? fs.readdirSync(tmp) : []).toEqual([]);
    // A declared body far over the limit is refused before it is parsed: HTTP 413.
    const huge = await gqlUpload(svc, UPLOAD, {}, Buffer.alloc(MAX_UPLOAD + 2 * 1024 * 1024));
    expect([huge.status, huge.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    // The service still answers on fresh connections.
    expect((await gql(svc, '{ assets { total } }')).status).toBe(200);
  });

  test('the map names a file part that never comes: MISSING_FILE; no file at all for Upload!: INVALID_BODY', async () => {
    const form = new FormData();
    form.append('operations', JSON.stringify({ query: UPLOAD, variables: { file: null } }));
    form.append('map', JSON.stringify({ 0: ['variables.file'] }));
    const res = await svc.fetch('/graphql', {
      method: 'POST',
      headers: { 'apollo-require-preflight': 'true' },
      body: form,
    });
    expect((await json(res)).errors[0].extensions.code).toBe('MISSING_FILE');
    // With no map entry the variable stays null, which the schema (Upload!) refuses before any resolver runs.
    expect((await gqlUpload(svc, UPLOAD, {}, undefined)).code).toBe('INVALID_BODY');
  });

  test('CSRF prevention: a multipart request without a preflight header is refused, nothing stored', async () => {
    const content = unique('csrf');
    const r = await gqlUpload(svc, UPLOAD, {}, content, { preflight: false });
    expect(r.status).toBe(400);
    expect(r.code).toBe('INVALID_BODY');
    expect(r.errors![0].message).toMatch(/Cross-Site Request Forgery|Apollo-Require-Preflight/i);
    expect(
      (await gql(svc, 'query($h: String!) { contentExists(hash: $h) }', { h: blake3Of(Buffer.from(content)) })).data
        .contentExists,
    ).toBe(false);
    // x-apollo-operation-name is the other accepted preflight header.
    const form = new FormData();
    form.append('operations', JSON.stringify({ query: UPLOAD, variables: { file: null } }));
    form.append('map', JSON.stringify({ 0: ['variables.file'] }));
    form.append('0', new Blob([content]), 'c.txt');
    const ok = await svc.fetch('/graphql', {
      method: 'POST',
      headers: { 'x-apollo-operation-name': 'Up' },
      body: form,
    });
    expect((await json(ok)).data.uploadAsset.createdNew).toBe(true);
  });
});

describe('queries', () => {
  test('asset(id): own asset as REST shows it; another owner gets ASSET_NOT_FOUND; a bad id INVALID_ID', async () => {
    const { asset } = await upload(unique('get'), { tags: ['q'] });
    const r = await gql(svc, `query($id: ID!) { asset(id: $id) { ${ASSET_FIELDS} } }`, { id: asset.id });
    const rest = await json(await svc.fetch(`/api/assets/${asset.id}`));
    expect(r.data.asset).toMatchObject({
      id: rest.id,
      name: rest.name,
      size: rest.size,
      assetHash: rest.asset_hash,
      tags: rest.tags,
      createdAt: rest.created_at,
    });
    expect(
      (await gql(svc, 'query($id: ID!) { asset(id: $id) { id } }', { id: asset.id }, { key: KEYS.bob })).code,
    ).toBe('ASSET_NOT_FOUND');
    expect((await gql(svc, '{ asset(id: "nope") { id } }')).code).toBe('INVALID_ID');
  });

  test('assets: filters, sort, pagination; only this owner', async () => {
    const tag = `list-${Date.now()}`;
    const made = [];
    for (const name of ['b-model', 'a-model', 'c-image'])
      made.push(
        (await upload(unique(name), { name, tags: [tag, name.slice(2)], userMetadata: { kind: name.slice(2) } })).asset,
      );
    await upload(unique('bob'), { tags: [tag] }, KEYS.bob);
    const q = `query($f: AssetFilter, $limit: Int!, $offset: Int!, $sort: AssetSort!, $order: SortOrder!) {
      assets(filter: $f, limit: $limit, offset: $offset, sort: $sort, order: $order) { items { name } total hasMore } }`;
    const page = async (f: Json, extra: Json = {}) =>
      (await gql(svc, q, { f, limit: 20, offset: 0, sort: 'name', order: 'asc', ...extra })).data.assets;
    expect(await page({ includeTags: [tag.toUpperCase()] })).toEqual({ items: [], total: 0, hasMore: false });
    expect(await page({ includeTags: [tag] })).toEqual({
      items: [{ name: 'a-model' }, { name: 'b-model' }, { name: 'c-image' }],
      total: 3,
      hasMore: false,
    });
    expect((await page({ includeTags: [tag], excludeTags: ['image'] })).total).toBe(2);
    expect((await page({ includeTags: [tag], nameContains: 'MODEL' })).total).toBe(2);
    expect((await page({ includeTags: [tag], metadataFilter: { kind: 'image' } })).items).toEqual([
      { name: 'c-image' },
    ]);
    expect(await page({ includeTags: [tag] }, { limit: 1, offset: 1, order: 'desc' })).toEqual({
      items: [{ name: 'b-model' }],
      total: 3,
      hasMore: true,
    });
    const defaults = await gql(svc, `{ assets(filter: {includeTags: ["${tag}"]}) { items { id } } }`);
    expect(defaults.data.assets.items.map((a: Json) => a.id)).toEqual(made.map((a) => a.id).reverse()); // created_at desc
    expect((await gql(svc, '{ assets(limit: 501) { total } }')).code).toBe('INVALID_BODY');
    expect((await gql(svc, '{ assets(filter: {metadataFilter: [1]}) { total } }')).code).toBe('INVALID_BODY');
  });

  test('assets with their previews: one batched lookup for the whole page', async () => {
    const tag = `previews-${Date.now()}`;
    const previews = [];
    for (let i = 0; i < 3; i++) previews.push((await upload(unique('pv'), { tags: ['pv'] })).asset);
    for (let i = 0; i < 3; i++) await upload(unique('main'), { tags: [tag], previewId: previews[i].id });
    const spy = jest.spyOn(svc.container.assets, 'getMany');
    const r = await gql(
      svc,
      `{ assets(filter: {includeTags: ["${tag}"]}, sort: name) { items { previewId preview { id name } } } }`,
    );
    expect(r.data.assets.items).toHaveLength(3);
    for (const item of r.data.assets.items) expect(item.preview.id).toBe(item.previewId);
    expect(spy).toHaveBeenCalledTimes(1);
  });

  test('previews on the same page come from the page: no second query; those off the page, one batched query for the rest', async () => {
    const tag = `same-page-${Date.now()}`;
    const made: Json[] = [];
    for (let i = 0; i < 4; i++) made.push((await upload(unique('sp'), { tags: [tag] })).asset);
    const outside = (await upload(unique('off-page'), { tags: ['elsewhere'] })).asset;
    const m = 'mutation($id: ID!, $i: UpdateAssetInput!) { updateAsset(id: $id, input: $i) { id } }';
    // 0 → 1, 1 → 2, 2 → 3 (all on the page), 3 → an asset not on it.
    for (let i = 0; i < 4; i++)
      await gql(svc, m, { id: made[i].id, i: { previewId: i < 3 ? made[i + 1].id : outside.id } });
    const spy = jest.spyOn(svc.container.assets, 'getMany');
    const q = `query($t: String!, $l: Int!) { assets(filter: {includeTags: [$t]}, limit: $l) { items { id previewId preview { ${ASSET_FIELDS} } } } }`;
    const all = await gql(svc, q, { t: tag, l: 10 });
    expect(all.data.assets.items).toHaveLength(4);
    for (const item of all.data.assets.items) expect(item.preview.id).toBe(item.previewId);
    expect(spy).toHaveBeenCalledTimes(1);
    expect(spy.mock.calls[0]![1]).toEqual([outside.id]);
    // The previews read from the page are the assets as asset(id) shows them.
    const one = await gql(svc, `query($id: ID!) { asset(id: $id) { ${ASSET_FIELDS} } }`, { id: made[1].id });
    const fromPage = all.data.assets.items.find((x: Json) => x.id === made[0].id).preview;
    expect({ ...fromPage, lastAccessTime: undefined }).toEqual({ ...one.data.asset, lastAccessTime: undefined });
    spy.mockClear();
    // A page of the first two only: the preview of the second is off this page.
    const two = await gql(
      svc,
      `query($t: String!) { assets(filter: {includeTags: [$t]}, limit: 2, sort: created_at, order: asc) { items { id preview { id } } } }`,
      { t: tag },
    );
    expect(two.data.assets.items.map((x: Json) => x.preview.id)).toEqual([made[1].id, made[2].id]);
    expect(spy).toHaveBeenCalledTimes(1);
    expect(spy.mock.calls[0]![1]).toEqual([made[2].id]);
  });

  test("contentExists sees every owner's content, by blake3 or sha256; a malformed hash is INVALID_HASH", async () => {
    const content = Buffer.from(unique('exists'));
    await upload(content, {}, KEYS.bob);
    const q = 'query($h: String!) { contentExists(hash: $h) }';
    expect((await gql(svc, q, { h: blake3Of(content) })).data.contentExists).toBe(true);
    expect((await gql(svc, q, { h: sha256Of(content) })).data.contentExists).toBe(true);
    expect((await gql(svc, q, { h: blake3Of(Buffer.from('never stored')) })).data.contentExists).toBe(false);
    expect((await gql(svc, q, { h: 'md5:abc' })).code).toBe('INVALID_HASH');
  });

  test('tags: counts of this owner, prefix, limit/offset, order', async () => {
    const p = `tg${Date.now()}`;
    await upload(unique(), { tags: [`${p}-a`, `${p}-b`] });
    await upload(unique(), { tags: [`${p}-a`] });
    await upload(unique(), { tags: [`${p}-c`] }, KEYS.bob);
    const q =
      'query($p: String, $l: Int!, $o: Int!, $order: TagOrder!) { tags(prefix: $p, limit: $l, offset: $o, order: $order) { items { name count } total hasMore } }';
    expect((await gql(svc, q, { p, l: 10, o: 0, order: 'count_desc' })).data.tags).toEqual({
      items: [
        { name: `${p}-a`, count: 2 },
        { name: `${p}-b`, count: 1 },
      ],
      total: 2,
      hasMore: false,
    });
    expect((await gql(svc, q, { p, l: 1, o: 1, order: 'name_asc' })).data.tags).toEqual({
      items: [{ name: `${p}-b`, count: 1 }],
      total: 2,
      hasMore: false,
    });
    expect((await gql(svc, q, { p, l: 1, o: 0, order: 'name_asc' })).data.tags.hasMore).toBe(true);
  });
});

describe('mutations', () => {
  test("createAssetFromHash: stored content (any owner's) becomes this owner's asset; unknown content CONTENT_NOT_FOUND", async () => {
    const content = Buffer.from(unique('fromhash'));
    const alice = await upload(content, { name: 'orig.bin' });
    const m = `mutation($i: CreateAssetFromHashInput!) { createAssetFromHash(input: $i) { createdNew asset { id name tags assetHash mimeType } } }`;
    const bob = await gql(svc, m, { i: { hash: sha256Of(content), tags: ['From', 'hash'] } }, { key: KEYS.bob });
    // Never alice's upload file name: the first 16 hex of the BLAKE3.
    const name = alice.asset.assetHash.slice(7, 23);
    expect(bob.data.createAssetFromHash).toMatchObject({
      createdNew: true,
      asset: { name, tags: ['From', 'hash'], assetHash: alice.asset.assetHash },
    });
    expect(bob.data.createAssetFromHash.asset.id).not.toBe(alice.asset.id);
    const again = await gql(svc, m, { i: { hash: blake3Of(content), tags: ['x'] } }, { key: KEYS.bob });
    expect(again.data.createAssetFromHash).toMatchObject({
      createdNew: false,
      asset: { id: bob.data.createAssetFromHash.asset.id },
    });
    expect((await gql(svc, m, { i: { hash: blake3Of(Buffer.from('nothing')), tags: ['x'] } })).code).toBe(
      'CONTENT_NOT_FOUND',
    );
    expect((await gql(svc, m, { i: { hash: 'blake3:xyz', tags: ['x'] } })).code).toBe('INVALID_BODY');
    expect((await gql(svc, m, { i: { hash: blake3Of(content), tags: [] } })).code).toBe('INVALID_BODY');
    expect((await gql(svc, m, { i: { hash: blake3Of(content) } })).code).toBe('INVALID_BODY');
  });

  test('updateAsset: fields applied and normalised, previewId null clears, empty input INVALID_BODY, other owner ASSET_NOT_FOUND', async () => {
    const img = await upload(Buffer.concat([PNG, Buffer.from(unique())]), {}, KEYS.alice, 'i.png');
    const m = `mutation($id: ID!, $i: UpdateAssetInput!) { updateAsset(id: $id, input: $i) { ${ASSET_FIELDS} } }`;
    const r = await gql(svc, m, {
      id: img.asset.id,
      i: { name: ' renamed ', tags: ['B', 'a', 'b'], userMetadata: { v: 2 }, mimeType: 'Image/PNG' },
    });
    expect(r.data.updateAsset).toMatchObject({
      name: 'renamed',
      tags: ['B', 'a', 'b'],
      userMetadata: { v: 2 },
      mimeType: 'image/png',
      previewId: img.asset.id,
    });
    const cleared = await gql(svc, m, { id: img.asset.id, i: { previewId: null } });
    // No nominated preview: an image is its own (contract 3.7).
    expect(cleared.data.updateAsset).toMatchObject({
      previewId: null,
      previewUrl: granted(svc, `${svc.url}/api/assets/${img.asset.id}/content`),
      name: 'renamed',
    });
    expect((await gql(svc, m, { id: img.asset.id, i: {} })).code).toBe('INVALID_BODY');
    expect((await gql(svc, m, { id: img.asset.id, i: { name: null } })).code).toBe('INVALID_BODY');
    expect((await gql(svc, m, { id: img.asset.id, i: { name: 'x' } }, { key: KEYS.bob })).code).toBe('ASSET_NOT_FOUND');
  });

  test('deleteAsset: true, then gone; another owner ASSET_NOT_FOUND', async () => {
    const { asset } = await upload(unique('del'));
    const m = 'mutation($id: ID!) { deleteAsset(id: $id) }';
    expect((await gql(svc, m, { id: asset.id }, { key: KEYS.bob })).code).toBe('ASSET_NOT_FOUND');
    expect((await gql(svc, m, { id: asset.id })).data.deleteAsset).toBe(true);
    expect((await gql(svc, 'query($id: ID!) { asset(id: $id) { id } }', { id: asset.id })).code).toBe(
      'ASSET_NOT_FOUND',
    );
    expect((await gql(svc, m, { id: asset.id })).code).toBe('ASSET_NOT_FOUND');
  });

  test('setAssetImmutable: admin only (FORBIDDEN otherwise); immutable assets refuse update and delete', async () => {
    const { asset } = await upload(unique('imm'));
    const m = 'mutation($id: ID!, $v: Boolean!) { setAssetImmutable(id: $id, immutable: $v) { id isImmutable } }';
    expect((await gql(svc, m, { id: asset.id, v: true })).code).toBe('FORBIDDEN');
    expect((await gql(svc, m, { id: asset.id, v: true }, { key: KEYS.admin })).data.setAssetImmutable).toEqual({
      id: asset.id,
      isImmutable: true,
    });
    const upd = await gql(svc, 'mutation($id: ID!) { updateAsset(id: $id, input: {name: "x"}) { id } }', {
      id: asset.id,
    });
    expect(upd.code).toBe('ASSET_IMMUTABLE');
    expect((await gql(svc, 'mutation($id: ID!) { deleteAsset(id: $id) }', { id: asset.id })).code).toBe(
      'ASSET_IMMUTABLE',
    );
    expect(
      (await gql(svc, m, { id: asset.id, v: false }, { key: KEYS.admin })).data.setAssetImmutable.isImmutable,
    ).toBe(false);
    expect((await gql(svc, 'mutation($id: ID!) { deleteAsset(id: $id) }', { id: asset.id })).data.deleteAsset).toBe(
      true,
    );
    expect((await gql(svc, m, { id: asset.id, v: true }, { key: KEYS.admin })).code).toBe('ASSET_NOT_FOUND');
  });
});

describe('request errors and limits', () => {
  test('syntax errors, unknown fields and bad variables: HTTP 400 with INVALID_BODY', async () => {
    for (const q of ['{ assets { ', '{ assets { nope } }', '{ assets(sort: sideways) { total } }']) {
      const r = await gql(svc, q);
      expect({ q, status: r.status, code: r.code }).toEqual({ q, status: 400, code: 'INVALID_BODY' });
    }
    const v = await gql(svc, 'query($l: Int!) { assets(limit: $l) { total } }', { l: 'many' });
    expect([v.status, v.code]).toEqual([400, 'INVALID_BODY']);
  });

  test('a body that is not JSON: 400 INVALID_JSON in the GraphQL error shape', async () => {
    const res = await svc.fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query": ',
    });
    expect(res.status).toBe(400);
    expect((await json(res)).errors[0].extensions.code).toBe('INVALID_JSON');
  });

  test('depth limit: a deep preview chain is refused before it runs', async () => {
    let sel = 'id';
    for (let i = 0; i < 12; i++) sel = `id preview { ${sel} }`;
    const r = await gql(svc, `{ assets { items { ${sel} } } }`);
    expect([r.status, r.code]).toEqual([400, 'INVALID_BODY']);
    expect(r.errors![0].message).toMatch(/levels deep/);
  });

  test('cost limit: many aliased full pages are refused', async () => {
    const aliases = Array.from(
      { length: 10 },
      (_, i) => `a${i}: assets(limit: 500) { items { ${ASSET_FIELDS} } }`,
    ).join('\n');
    const r = await gql(svc, `{ ${aliases} }`);
    expect([r.status, r.code]).toEqual([400, 'INVALID_BODY']);
    expect(r.errors![0].message).toMatch(/costs more than/);
    // One full page with previews is fine.
    expect(
      (await gql(svc, `{ assets(limit: 500) { items { ${ASSET_FIELDS} preview { ${ASSET_FIELDS} } } total } }`)).status,
    ).toBe(200);
  });

  test('unexpected errors: INTERNAL with the request id, no message leak, no stack trace; logged', async () => {
    jest.spyOn(svc.container.assets, 'list').mockRejectedValueOnce(new Error('secret database detail'));
    const log = { debug: jest.fn(), info: jest.fn(), warn: jest.fn(), error: jest.fn(), child: jest.fn() };
    const child = jest.spyOn(svc.container.logger, 'child').mockReturnValue(log);
    const res = await svc.fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ assets { total } }' }),
    });
    const text = await res.text();
    expect(text).not.toMatch(/secret|stack|at \w+ \(/);
    const body = JSON.parse(text);
    expect(body.errors[0]).toMatchObject({
      message: 'internal error',
      extensions: { code: 'INTERNAL', details: { request_id: res.headers.get('x-request-id') } },
    });
    expect(child).toHaveBeenCalledWith({ request_id: res.headers.get('x-request-id') });
    expect(log.error).toHaveBeenCalledWith(
      'unhandled error in a GraphQL resolver',
      expect.objectContaining({ err: expect.objectContaining({ message: 'secret database detail' }) }),
    );
  });

  test('GET queries work with a preflight header and are refused without one (CSRF)', async () => {
    const q = encodeURIComponent('{ assets { total } }');
    const ok = await svc.fetch(`/graphql?query=${q}`, { headers: { 'apollo-require-preflight': 'true' } });
    expect(ok.status).toBe(200);
    const blocked = await svc.fetch(`/graphql?query=${q}`);
    expect(blocked.status).toBe(400);
    // GET cannot run mutations at all.
    const m = await svc.fetch(
      `/graphql?query=${encodeURIComponent('mutation { deleteAsset(id: "0b9a6f0e-4f5e-4d3b-9c41-6a1d2f0c7e11") }')}`,
      {
        headers: { 'apollo-require-preflight': 'true' },
      },
    );
    expect(m.status).toBe(405);
  });
});
