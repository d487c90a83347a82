/**
 * Parity: the same scenario through REST and through GraphQL, compared on what is stored (read back through REST).
 * Both transports call the same domain service, so every rule (normalisation, defaults, dedupe, limits, owner
 * isolation, immutability) must come out identical.
 */
import crypto from 'node:crypto';
import { json, KEYS, startTestService, uploadForm, type TestService } from '../helpers/harness';
import { gql, gqlUpload, UPLOAD, type Json } from '../helpers/graphql';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

/** The stored asset as REST shows it, without what differs by nature between two assets (id, times, owner's grant). */
async function stored(id: string, key: string): Promise<Json> {
  const a = await json(await svc.fetch(`/api/assets/${id}`, { key }));
  const { id: own, created_at, updated_at, last_access_time, ...rest } = a;
  const mine = (url: string | undefined) => url?.replace(own, 'self').replace(/\?access=[\w.-]+$/, '?access=grant');
  return {
    ...rest,
    preview_id: rest.preview_id === own ? 'self' : rest.preview_id,
    preview_url: mine(rest.preview_url) ?? null,
    short_url: mine(rest.short_url),
  };
}

/** The same metadata as REST multipart fields and as the GraphQL input. */
function both(meta: {
  name?: string;
  tags?: unknown[];
  userMetadata?: unknown;
  mimeType?: string;
  previewId?: string;
  id?: string;
}) {
  const fields: Record<string, string> = {};
  if (meta.name !== undefined) fields.name = meta.name;
  if (meta.tags !== undefined) fields.tags = JSON.stringify(meta.tags);
  if (meta.userMetadata !== undefined) fields.user_metadata = JSON.stringify(meta.userMetadata);
  if (meta.mimeType !== undefined) fields.mime_type = meta.mimeType;
  if (meta.previewId !== undefined) fields.preview_id = meta.previewId;
  if (meta.id !== undefined) fields.id = meta.id;
  return { fields, input: meta };
}

async function restUpload(content: Buffer, fields: Record<string, string>, key: string, fileName: string) {
  const res = await svc.fetch('/api/assets', { method: 'POST', key, body: uploadForm(content, fields, fileName) });
  const body = await json(res);
  return { status: res.status, body, code: body.code as string | undefined };
}

test('upload: same bytes and metadata through REST (alice) and GraphQL (bob) store the same asset', async () => {
  const cases = [
    {
      content: Buffer.from(`model ${crypto.randomUUID()}`),
      fileName: 'weights.safetensors',
      meta: { tags: [' Models ', 'models', 'LoRAs', ''], userMetadata: { base: 'sdxl', n: 1 } },
    },
    {
      content: Buffer.concat([PNG, crypto.randomBytes(8)]),
      fileName: 'pic.png',
      meta: { name: ' My picture ', tags: ['Output'] },
    },
    { content: Buffer.from('plain'), fileName: 'a.txt', meta: { mimeType: 'Application/X-Custom' } },
  ];
  for (const c of cases) {
    const { fields, input } = both(c.meta);
    const rest = await restUpload(c.content, fields, KEYS.alice, c.fileName);
    const graph = await gqlUpload(svc, UPLOAD, { input }, c.content, { key: KEYS.bob, fileName: c.fileName });
    expect(rest.status).toBe(201);
    expect(graph.data.uploadAsset.createdNew).toBe(rest.body.created_new);
    expect(await stored(graph.data.uploadAsset.asset.id, KEYS.bob)).toEqual(await stored(rest.body.id, KEYS.alice));

    // Uploading again dedupes the same way through both.
    const rest2 = await restUpload(c.content, { name: 'other' }, KEYS.alice, 'x');
    const graph2 = await gqlUpload(svc, UPLOAD, { input: { name: 'other' } }, c.content, {
      key: KEYS.bob,
      fileName: 'x',
    });
    expect([rest2.status, rest2.body.created_new, rest2.body.id]).toEqual([200, false, rest.body.id]);
    expect([graph2.data.uploadAsset.createdNew, graph2.data.uploadAsset.asset.id]).toEqual([
      false,
      graph.data.uploadAsset.asset.id,
    ]);
  }
});

test('invalid uploads are refused with the same code through both', async () => {
  const content = Buffer.from(`never stored ${crypto.randomUUID()}`);
  const bad = [
    { tags: Array.from({ length: 65 }, (_, i) => `t${i}`) },
    { tags: ['x'.repeat(129)] },
    { userMetadata: [1] },
    { userMetadata: { big: 'y'.repeat(256 * 1024) } },
    // (A blank `name` is left out: a multipart form's empty text field means "not given" in REST uploads, while
    // GraphQL, like the REST JSON routes, refuses an explicit blank name; see the from-hash test.)
    { name: 'n'.repeat(513) },
    { mimeType: 'nonsense' },
    { id: 'not-a-uuid' },
    { previewId: crypto.randomUUID() },
  ];
  for (const meta of bad) {
    const { fields, input } = both(meta);
    const rest = await restUpload(content, fields, KEYS.alice, 'f.bin');
    const graph = await gqlUpload(svc, UPLOAD, { input }, content, { key: KEYS.alice });
    expect({ meta: Object.keys(meta), graphql: graph.code }).toEqual({ meta: Object.keys(meta), graphql: rest.code });
    expect(rest.code).toMatch(/^(INVALID_BODY|PAYLOAD_TOO_LARGE|INVALID_PREVIEW_ID)$/);
  }
  // 64 tags that normalise to fewer are fine through both (blanks and exact repeats; another case is another tag).
  const dupTags = [
    ...Array.from({ length: 64 }, (_, i) => `T${i}`),
    ...Array.from({ length: 10 }, (_, i) => ` T${i} `),
  ];
  const ok = both({ tags: dupTags });
  expect((await restUpload(Buffer.from(`a ${crypto.randomUUID()}`), ok.fields, KEYS.alice, 'f')).status).toBe(201);
  expect(
    (await gqlUpload(svc, UPLOAD, { input: ok.input }, `b ${crypto.randomUUID()}`)).data.uploadAsset.asset.tags,
  ).toHaveLength(64);
});

test('from-hash: the same asset through both; the same codes for unknown and malformed hashes', async () => {
  const content = Buffer.from(`shared ${crypto.randomUUID()}`);
  await restUpload(content, {}, KEYS.admin, 'first-name.bin');
  const hash = 'sha256:' + crypto.createHash('sha256').update(content).digest('hex');
  const body = { hash, tags: ['Shared', 'shared'], user_metadata: { from: 'hash' } };
  const m = `mutation($i: CreateAssetFromHashInput!) { createAssetFromHash(input: $i) { createdNew asset { id } } }`;
  const rest = await svc.fetch('/api/assets/from-hash', {
    method: 'POST',
    key: KEYS.alice,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const restBody = await json(rest);
  const graph = await gql(
    svc,
    m,
    { i: { hash, tags: body.tags, userMetadata: body.user_metadata } },
    { key: KEYS.bob },
  );
  expect([rest.status, graph.data.createAssetFromHash.createdNew]).toEqual([201, true]);
  expect(await stored(graph.data.createAssetFromHash.asset.id, KEYS.bob)).toEqual(
    await stored(restBody.id, KEYS.alice),
  );

  const cases: [string, string[], string?][] = [
    ['blake3:' + '0'.repeat(64), ['x']],
    ['md5:1', ['x']],
    [hash, []],
    [hash, ['x'], '   '],
    [hash, ['x'.repeat(200)]],
  ];
  for (const [h, tags, name] of cases) {
    const r = await svc.fetch('/api/assets/from-hash', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ hash: h, tags, name }),
    });
    const g = await gql(svc, m, { i: { hash: h, tags, name } });
    expect({ h, tags, name, code: g.code }).toEqual({ h, tags, name, code: (await json(r)).code });
    expect(g.code).toMatch(/^(CONTENT_NOT_FOUND|INVALID_BODY)$/);
  }
});

test('update: the same change through PUT and updateAsset stores the same result; errors agree', async () => {
  const content = Buffer.concat([PNG, crypto.randomBytes(8)]);
  const a = (await restUpload(content, { tags: 'a' }, KEYS.alice, 'u.png')).body;
  const b = (await gqlUpload(svc, UPLOAD, { input: { tags: ['a'] } }, content, { key: KEYS.bob, fileName: 'u.png' }))
    .data.uploadAsset.asset;
  const change = {
    name: ' New name ',
    tags: ['Z', 'y', 'z'],
    mime_type: 'image/x-test',
    user_metadata: { v: 2 },
    preview_id: null,
  };
  const put = await svc.fetch(`/api/assets/${a.id}`, {
    method: 'PUT',
    key: KEYS.alice,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(change),
  });
  expect(put.status).toBe(200);
  const m = 'mutation($id: ID!, $i: UpdateAssetInput!) { updateAsset(id: $id, input: $i) { id } }';
  const g = await gql(
    svc,
    m,
    {
      id: b.id,
      i: {
        name: change.name,
        tags: change.tags,
        mimeType: change.mime_type,
        userMetadata: change.user_metadata,
        previewId: null,
      },
    },
    { key: KEYS.bob },
  );
  expect(g.errors).toBeUndefined();
  expect(await stored(b.id, KEYS.bob)).toEqual(await stored(a.id, KEYS.alice));

  const errors: [Json, Json][] = [
    [{}, {}],
    [{ name: '' }, { name: '' }],
    [{ tags: 'notalist' }, undefined],
    [{ user_metadata: 'x' }, { userMetadata: 'x' }],
    [{ preview_id: crypto.randomUUID() }, { previewId: crypto.randomUUID() }],
  ];
  for (const [restBody, input] of errors) {
    const r = await json(
      await svc.fetch(`/api/assets/${a.id}`, {
        method: 'PUT',
        key: KEYS.alice,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(restBody),
      }),
    );
    if (input === undefined) {
      // A non-list `tags` cannot even be expressed in GraphQL ([String!]); the schema refuses it as INVALID_BODY too.
      expect(r.code).toBe('INVALID_BODY');
      expect(
        (
          await gql(
            svc,
            `mutation($id: ID!) { updateAsset(id: $id, input: {tags: 5}) { id } }`,
            { id: b.id },
            { key: KEYS.bob },
          )
        ).code,
      ).toBe('INVALID_BODY');
      continue;
    }
    const gr = await gql(svc, m, { id: b.id, i: input }, { key: KEYS.bob });
    expect({ restBody, code: gr.code }).toEqual({ restBody, code: r.code });
  }
  // Another owner's asset does not exist, through both.
  const other = await json(
    await svc.fetch(`/api/assets/${a.id}`, {
      method: 'PUT',
      key: KEYS.bob,
      headers: { 'content-type': 'application/json' },
      body: '{"name":"x"}',
    }),
  );
  expect((await gql(svc, m, { id: a.id, i: { name: 'x' } }, { key: KEYS.bob })).code).toBe(other.code);
});

test('list and tags: the same query through both gives the same page', async () => {
  const tag = `par-${Date.now()}`;
  for (const name of ['delta', 'Alpha', 'charlie', 'bravo']) {
    await restUpload(
      Buffer.from(`${name} ${crypto.randomUUID()}`),
      { name, tags: `${tag},${name.toLowerCase()}`, user_metadata: JSON.stringify({ group: name.length % 2 }) },
      KEYS.alice,
      name,
    );
  }
  const queries: [string, Json][] = [
    [
      `include_tags=${tag}&sort=name&order=asc&limit=2&offset=1`,
      { filter: { includeTags: [tag] }, sort: 'name', order: 'asc', limit: 2, offset: 1 },
    ],
    [
      `include_tags=${tag}&exclude_tags=bravo&sort=size&order=desc`,
      { filter: { includeTags: [tag], excludeTags: ['bravo'] }, sort: 'size', order: 'desc' },
    ],
    [
      `tags_all=${tag}&tags_any=alpha,delta&tags_none=delta`,
      { filter: { tagsAll: [tag], tagsAny: ['alpha', 'delta'], tagsNone: ['delta'] } },
    ],
    [`include_tags=${tag}&name_contains=ALP`, { filter: { includeTags: [tag], nameContains: 'ALP' } }],
    [
      `include_tags=${tag}&metadata_filter=${encodeURIComponent('{"group":1}')}&sort=name&order=asc`,
      { filter: { includeTags: [tag], metadataFilter: { group: 1 } }, sort: 'name', order: 'asc' },
    ],
  ];
  const q = `query($filter: AssetFilter, $sort: AssetSort! = created_at, $order: SortOrder! = desc, $limit: Int! = 20, $offset: Int! = 0) {
    assets(filter: $filter, sort: $sort, order: $order, limit: $limit, offset: $offset) { items { id } total hasMore } }`;
  for (const [qs, vars] of queries) {
    const rest = await json(await svc.fetch(`/api/assets?${qs}`));
    const graph = (await gql(svc, q, vars)).data.assets;
    expect({ qs, ids: graph.items.map((a: Json) => a.id), total: graph.total, hasMore: graph.hasMore }).toEqual({
      qs,
      ids: rest.assets.map((a: Json) => a.id),
      total: rest.total,
      hasMore: rest.has_more,
    });
    expect(rest.assets.length).toBeGreaterThan(0);
  }
  for (const order of ['count_desc', 'name_asc']) {
    const rest = await json(await svc.fetch(`/api/tags?prefix=${tag.slice(0, 4)}&order=${order}&limit=3`));
    const graph = (
      await gql(
        svc,
        `{ tags(prefix: "${tag.slice(0, 4)}", order: ${order}, limit: 3) { items { name count } total hasMore } }`,
      )
    ).data.tags;
    expect(graph).toEqual({ items: rest.tags, total: rest.total, hasMore: rest.has_more });
  }
});

test('tag filters: the same cap through both (100 tags once normalised; 101 is INVALID_TAG_FILTER)', async () => {
  const tag = `cap-${Date.now()}`;
  await restUpload(Buffer.from(`cap ${crypto.randomUUID()}`), { tags: tag }, KEYS.alice, 'cap');
  const distinct = (n: number) => [tag, ...Array.from({ length: n - 1 }, (_, i) => `x${i}`)];
  // 100 distinct tags sent as 300 spellings (spaces, repeats) are 100 once normalised: fine.
  const spelled = distinct(100).flatMap((t) => [t, ` ${t} `, t]);
  const q = `query($f: AssetFilter) { assets(filter: $f) { total } tagCounts(filter: $f) { name } }`;
  for (const [param, field] of [
    ['include_tags', 'includeTags'],
    ['exclude_tags', 'excludeTags'],
    ['tags_any', 'anyTags'],
    ['tags_all', 'tagsAll'],
    ['tags_any', 'tagsAny'],
    ['tags_none', 'tagsNone'],
  ] as const) {
    const ok = await gql(svc, q, { f: { [field]: spelled } });
    const rest = await svc.fetch(`/api/assets?${spelled.map((t) => `${param}=${encodeURIComponent(t)}`).join('&')}`);
    expect([field, ok.errors, rest.status]).toEqual([field, undefined, 200]);
    const over = await gql(svc, q, { f: { [field]: distinct(101) } });
    const restOver = await json(
      await svc.fetch(
        `/api/assets?${distinct(101)
          .map((t) => `${param}=${t}`)
          .join('&')}`,
      ),
    );
    expect([field, over.code, over.errors?.[0]?.extensions?.details]).toEqual([
      field,
      restOver.code,
      { parameter: field, count: 101, max: 100 },
    ]);
    expect(restOver.details).toEqual({ parameter: param, count: 101, max: 100 });
    expect(restOver.code).toBe('INVALID_TAG_FILTER');
  }
});

test('immutability and delete: the same answers through both', async () => {
  const a = (await restUpload(Buffer.from(`imm ${crypto.randomUUID()}`), {}, KEYS.alice, 'i')).body;
  await gql(
    svc,
    'mutation($id: ID!) { setAssetImmutable(id: $id, immutable: true) { id } }',
    { id: a.id },
    { key: KEYS.admin },
  );
  const put = await svc.fetch(`/api/assets/${a.id}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: '{"name":"x"}',
  });
  const del = await svc.fetch(`/api/assets/${a.id}`, { method: 'DELETE' });
  expect([put.status, (await json(put)).code, del.status, (await json(del)).code]).toEqual([
    409,
    'ASSET_IMMUTABLE',
    409,
    'ASSET_IMMUTABLE',
  ]);
  expect(
    (await gql(svc, 'mutation($id: ID!) { updateAsset(id: $id, input: {name: "x"}) { id } }', { id: a.id })).code,
  ).toBe('ASSET_IMMUTABLE');
  expect((await gql(svc, 'mutation($id: ID!) { deleteAsset(id: $id) }', { id: a.id })).code).toBe('ASSET_IMMUTABLE');

  await gql(
    svc,
    'mutation($id: ID!) { setAssetImmutable(id: $id, immutable: false) { id } }',
    { id: a.id },
    { key: KEYS.admin },
  );
  expect((await gql(svc, 'mutation($id: ID!) { deleteAsset(id: $id) }', { id: a.id })).data.deleteAsset).toBe(true);
  const gone = await svc.fetch(`/api/assets/${a.id}`, { method: 'DELETE' });
  expect([gone.status, (await json(gone)).code]).toEqual([404, 'ASSET_NOT_FOUND']);
});
