/**
 * ComfyUI's asset API as of August 2026 (contract 2 and 3.7), the service's half: tags keep their case through every
 * route, `model_type:` folders, tag filters as ComfyUI answers them (REST and GraphQL), previews of the asset's own
 * media, and a job's outputs. Every JSON answer is validated against openapi.yaml.
 */
import crypto from 'node:crypto';
import { gql, type Json } from '../helpers/graphql';
import { blake3Of, granted, KEYS } from '../helpers/harness';
import { TUS, tusUpload } from '../helpers/tus';
import { comfySuite } from '../helpers/comfy-suite';

const suite = comfySuite();
const { upload, get, send, unique } = suite;
/** A tag no other test uses. */
const fresh = (label: string) => `${label}${crypto.randomBytes(3).toString('hex')}`;

const ids = async (qs: string, key: string = KEYS.alice): Promise<string[]> => {
  const r = await get(`/api/assets?limit=500&${qs}`, key);
  expect([qs, r.status]).toEqual([qs, 200]);
  return (r.body.assets as Json[]).map((a) => a.id).sort();
};

describe('tags keep their case (contract 2)', () => {
  test('NewTag stays NewTag through multipart, PUT, tus, the tags routes, refine, /api/tags and GraphQL', async () => {
    const t = fresh('NewTag');
    const lower = t.toLowerCase();
    const a = await upload(unique('case'), { tags: `${t}, ${lower} ,${t}` });
    expect(a.tags).toEqual([t, lower]);
    expect((await get(`/api/assets/${a.id}`)).body.tags).toEqual([t, lower]);

    const put = await send('PUT', `/api/assets/${a.id}`, { tags: [` ${t} `, 'Other', 'other', 'Other'] });
    expect(put.body.tags).toEqual([t, 'Other', 'other']);

    const data = unique('tus-case');
    const { url } = await tusUpload(suite.svc.url, data, {
      metadata: { filename: 'case.bin', tags: JSON.stringify([t, 'TusOnly']) },
    });
    const head = await suite.svc.fetch(url.replace(suite.svc.url, ''), { method: 'HEAD', headers: TUS });
    const tusAsset = (await get(`/api/assets/${head.headers.get('asset-id')}`)).body;
    expect(tusAsset).toMatchObject({ tags: [t, 'TusOnly'], asset_hash: blake3Of(data) });

    const add = await send('POST', `/api/assets/${a.id}/tags`, { tags: ['Added', 'added', t] });
    expect(add.body).toEqual({
      added: ['Added', 'added'],
      already_present: [t],
      total_tags: [t, 'Other', 'other', 'Added', 'added'],
    });
    const rm = await send('DELETE', `/api/assets/${a.id}/tags`, { tags: ['ADDED', 'added', 'other'] });
    expect(rm.body).toEqual({
      removed: ['added', 'other'],
      not_present: ['ADDED'],
      total_tags: [t, 'Other', 'Added'],
      protected: [],
    });

    // Filters match exactly: the spelling that was stored, not another case.
    expect(await ids(`tags_all=${t}`)).toEqual([a.id, tusAsset.id].sort());
    expect(await ids(`tags_all=${t.toUpperCase()}`)).toEqual([]);
    expect(await ids(`include_tags=${lower}`)).toEqual([]);
    expect(await ids(`tags_any=TusOnly,Added`)).toEqual([a.id, tusAsset.id].sort());
    expect(await ids(`tags_all=${t}&tags_none=Added`)).toEqual([tusAsset.id]);

    const refine = await get(`/api/assets/tags/refine?tags_all=${t}`);
    expect(refine.body.tag_counts).toEqual({ [t]: 2, Other: 1, Added: 1, TusOnly: 1 });

    const tags = await get(`/api/tags?prefix=${t.slice(0, 6)}&order=name_asc`);
    expect(tags.body.tags).toEqual(expect.arrayContaining([{ name: t, count: 2 }]));
    expect((await get(`/api/tags?prefix=${t}`)).body.tags).toEqual([{ name: t, count: 2 }]);

    const g = await gql(
      suite.svc,
      `query($t: [String!]) { assets(filter: { tagsAll: $t }, limit: 10) { items { id tags } total } tagCounts(filter: { includeTags: $t }) { name count } tags(prefix: "${t}") { items { name count } } }`,
      { t: [t] },
    );
    expect(g.errors).toBeUndefined();
    expect(g.data.assets.total).toBe(2);
    expect(g.data.assets.items.find((x: Json) => x.id === a.id).tags).toEqual([t, 'Other', 'Added']);
    expect(g.data.tagCounts).toEqual(
      expect.arrayContaining([
        { name: t, count: 2 },
        { name: 'TusOnly', count: 1 },
      ]),
    );
    expect(g.data.tags.items).toEqual([{ name: t, count: 2 }]);
    const m = await gql(
      suite.svc,
      'mutation($id: ID!) { updateAsset(id: $id, input: { tags: ["GqlTag", "gqltag"] }) { tags } }',
      { id: a.id },
    );
    expect(m.data.updateAsset.tags).toEqual(['GqlTag', 'gqltag']);
  });

  test('a tag stored lower-cased by an earlier version keeps its spelling, still filters, and counts on its own', async () => {
    const spelt = fresh('Legacy');
    const old = spelt.toLowerCase();
    const a = await upload(unique('legacy'), { tags: 'x' });
    const b = await upload(unique('legacy'), { tags: spelt });
    // As the previous version stored it: lower-cased, written straight into the row (the triggers keep the counts).
    await suite.db.query('UPDATE asset SET tags = $1 WHERE id = $2', [[old, 'models'], a.id]);
    expect((await get(`/api/assets/${a.id}`)).body.tags).toEqual([old, 'models']);
    expect(await ids(`tags_all=${old}`)).toEqual([a.id]);
    expect(await ids(`include_tags=${spelt}`)).toEqual([b.id]);
    expect(await ids(`tags_any=${old},${spelt}`)).toEqual([a.id, b.id].sort());
    expect(await ids(`tags_none=${old}&tags_any=${old},${spelt}`)).toEqual([b.id]);
    const counts = (await get(`/api/tags?prefix=${old.slice(0, 6)}`)).body.tags;
    expect(counts).toEqual([{ name: old, count: 1 }]);
    expect((await get(`/api/tags?prefix=${spelt.slice(0, 6)}`)).body.tags).toEqual([{ name: spelt, count: 1 }]);
  });
});

describe('model_type: folders (contract 3.7)', () => {
  test('a model_type:<folder> tag makes an asset a model: loader_path in GET, the listing and GraphQL', async () => {
    const t = fresh('mt');
    const modern = await upload(unique('mt'), { tags: [t, 'model_type:loras'], name: 'SDXL/Style One.safetensors' });
    const legacy = await upload(unique('mt'), { tags: ['models', 'loras', t], name: 'sub/legacy.safetensors' });
    const label = await upload(unique('mt'), { tags: ['loras', t], name: 'sub/label.safetensors' });
    const unsafe = await upload(unique('mt'), { tags: ['model_type:vae', t], name: '../up.safetensors' });
    expect(modern.loader_path).toBe('SDXL/Style One.safetensors');
    expect(legacy.loader_path).toBe('sub/legacy.safetensors');
    expect('loader_path' in label).toBe(false);
    expect('loader_path' in unsafe).toBe(false);
    const listed = (await get(`/api/assets?tags_all=${t}&sort=name&order=asc`)).body.assets as Json[];
    expect(Object.fromEntries(listed.map((a) => [a.id, a.loader_path]))).toEqual({
      [modern.id]: 'SDXL/Style One.safetensors',
      [legacy.id]: 'sub/legacy.safetensors',
      [label.id]: undefined,
      [unsafe.id]: undefined,
    });
    const g = await gql(
      suite.svc,
      'query($t: [String!]) { assets(filter: { tagsAll: $t }, sort: name, order: asc) { items { id loaderPath } } }',
      { t: [t] },
    );
    expect(Object.fromEntries(g.data.assets.items.map((a: Json) => [a.id, a.loaderPath]))).toEqual({
      [modern.id]: 'SDXL/Style One.safetensors',
      [legacy.id]: 'sub/legacy.safetensors',
      [label.id]: null,
      [unsafe.id]: null,
    });
    // The folder filter ComfyUI's model library sends.
    expect(await ids(`tags_all=model_type:loras,${t}`)).toEqual([modern.id]);
  });
});

describe('tag filters as ComfyUI answers them, in GraphQL (contract 3.7)', () => {
  const ASSETS = 'query($f: AssetFilter) { assets(filter: $f) { total items { id } } }';
  const FACETS = 'query($f: AssetFilter) { tagCounts(filter: $f) { name count } }';

  test('the same errors and details as REST, in extensions', async () => {
    const many = Array.from({ length: 101 }, (_, i) => `c${i}`);
    for (const [f, details] of [
      [{ includeTags: ['a'], tagsAll: ['b'] }, { parameters: ['includeTags', 'tagsAll'] }],
      [{ excludeTags: ['a'], tagsNone: ['b'] }, { parameters: ['excludeTags', 'tagsNone'] }],
      [{ anyTags: ['a'], tagsAny: ['b'] }, { parameters: ['anyTags', 'tagsAny'] }],
      [
        { tagsAll: ['a', 'B'], tagsNone: ['B', 'a', 'c'] },
        { parameters: ['tagsAll', 'tagsNone'], conflicting_tags: ['a', 'B'] },
      ],
      [
        { includeTags: ['a'], excludeTags: ['a'], tagsAny: ['z'] },
        { parameters: ['includeTags', 'excludeTags'], conflicting_tags: ['a'] },
      ],
      [{ tagsAny: many }, { parameter: 'tagsAny', count: 101, max: 100 }],
    ] as const) {
      for (const q of [ASSETS, FACETS]) {
        const r = await gql(suite.svc, q, { f });
        expect([JSON.stringify(f), r.code, r.errors?.[0].extensions.details]).toEqual([
          JSON.stringify(f),
          'INVALID_TAG_FILTER',
          details,
        ]);
      }
    }
  });

  test('empty lists are absent, exact spellings, old names only: an empty page; tagsNone wins', async () => {
    const t = fresh('gf');
    const a = await upload(unique('gf'), { tags: [t, 'Keep'] });
    const b = await upload(unique('gf'), { tags: [t, 'Drop'] });
    const page = async (f: Json) => {
      const r = await gql(suite.svc, ASSETS, { f });
      expect(r.errors).toBeUndefined();
      return (r.data.assets.items as Json[]).map((x) => x.id).sort();
    };
    expect(await page({ includeTags: [], tagsAll: [t], excludeTags: [' '], tagsNone: ['Drop'] })).toEqual([a.id]);
    expect(await page({ includeTags: [t, 'Keep'], excludeTags: ['Keep'] })).toEqual([]);
    expect(await page({ tagsAll: [t], tagsNone: ['keep'] })).toEqual([a.id, b.id].sort());
    expect(await page({ tagsAll: [t], tagsAny: ['Keep', 'Drop'], tagsNone: ['Drop'] })).toEqual([a.id]);
  });
});

/** A WAV header, an MP4 `ftyp` box: enough for the service's sniffing. */
const wav = () =>
  Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVEfmt '), crypto.randomBytes(32)]);
const mp4 = () => Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), crypto.randomBytes(32)]);
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

describe('previews (contract 3.7)', () => {
  const own = (a: Json) => granted(suite.svc, `${suite.svc.url}/api/assets/${a.id}/content`);

  test('image, video, audio and plain text (JSON, Markdown, a mime_type with parameters) are their own preview; weights are not', async () => {
    const t = fresh('pv');
    const made: Record<string, Json> = {
      text: await upload(unique('text'), { tags: t }, 'notes.txt'),
      json: await upload(Buffer.from(`{"k":"${crypto.randomUUID()}"}`), { tags: t }, 'workflow.json'),
      markdown: await upload(unique('# title'), { tags: t }, 'README.md'),
      params: await upload(unique('plain'), { tags: t, mime_type: 'text/plain; charset=utf-8' }, 'x.bin'),
      audio: await upload(wav(), { tags: t }, 'a.wav'),
      video: await upload(mp4(), { tags: t }, 'v.mp4'),
      image: await upload(Buffer.concat([PNG, crypto.randomBytes(16)]), { tags: t }, 'i.png'),
      weights: await upload(unique('weights'), { tags: t }, 'model.safetensors'),
      other: await upload(unique('other'), { tags: t, mime_type: 'application/octet-stream; x=1' }, 'blob.bin'),
    };
    expect(made.params.mime_type).toBe('text/plain; charset=utf-8');
    const expected = Object.fromEntries(
      Object.entries(made).map(([k, a]) => [k, ['weights', 'other'].includes(k) ? undefined : own(a)]),
    );
    const byKind = (urlOf: (id: string) => string | null | undefined) =>
      Object.fromEntries(Object.entries(made).map(([k, a]) => [k, urlOf(a.id) ?? undefined]));
    expect(byKind((id) => Object.values(made).find((a) => a.id === id).preview_url)).toEqual(expected);
    const got = new Map<string, Json>();
    for (const a of Object.values(made)) got.set(a.id, (await get(`/api/assets/${a.id}`)).body);
    expect(byKind((id) => got.get(id).preview_url)).toEqual(expected);
    const listed = new Map(
      ((await get(`/api/assets?tags_all=${t}&limit=50`)).body.assets as Json[]).map((a) => [a.id, a]),
    );
    expect(byKind((id) => listed.get(id).preview_url)).toEqual(expected);
    const g = await gql(
      suite.svc,
      'query($t: [String!]) { assets(filter: { tagsAll: $t }, limit: 50) { items { id previewUrl preview { id } } } }',
      { t: [t] },
    );
    const gItems = new Map((g.data.assets.items as Json[]).map((a) => [a.id, a]));
    expect(byKind((id) => gItems.get(id).previewUrl)).toEqual(expected);
    expect(gItems.get(made.audio.id).preview).toEqual({ id: made.audio.id });
    expect(gItems.get(made.weights.id).preview).toBeNull();
    // The own content loads at that URL, with its type.
    const res = await suite.svc.fetch(new URL(made.params.preview_url).pathname);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
  });

  test('a nominated preview wins; when it is deleted preview_url is left out, not substituted, until one is set again', async () => {
    const t = fresh('np');
    const image = await upload(Buffer.concat([PNG, crypto.randomBytes(16)]), {}, 'cover.png');
    const text = await upload(unique('nominated'), { tags: t, preview_id: image.id }, 'n.txt');
    const weights = await upload(unique('w'), { tags: t, preview_id: image.id }, 'w.safetensors');
    expect(text.preview_url).toBe(own(image));
    expect(weights.preview_url).toBe(own(image));
    expect((await send('DELETE', `/api/assets/${image.id}`, undefined)).status).toBe(204);
    for (const a of [text, weights]) {
      const now = (await get(`/api/assets/${a.id}`)).body;
      expect(now.preview_id).toBeNull();
      expect('preview_url' in now).toBe(false);
    }
    const listed = (await get(`/api/assets?tags_all=${t}`)).body.assets as Json[];
    expect(listed.map((a) => 'preview_url' in a)).toEqual([false, false]);
    const g = await gql(suite.svc, `query { asset(id: "${text.id}") { previewId previewUrl preview { id } } }`);
    expect(g.data.asset).toEqual({ previewId: null, previewUrl: null, preview: null });
    // Clearing the nomination explicitly: the asset's own rule applies again (text is its own preview).
    expect((await send('PUT', `/api/assets/${text.id}`, { preview_id: null })).body.preview_url).toBe(own(text));
    const other = await upload(unique('cover2'), {}, 'c2.txt');
    expect((await send('PUT', `/api/assets/${weights.id}`, { preview_id: other.id })).body.preview_url).toBe(
      own(other),
    );
  });
});

describe('GET /api/jobs/{job_id}/assets and GraphQL jobAssets (contract 3.7)', () => {
  test("a job's outputs, paged, with node_id/output_key/output_index from user_metadata or null", async () => {
    const job = crypto.randomUUID();
    const first = await upload(
      unique('out'),
      { prompt_id: job, user_metadata: JSON.stringify({ node_id: '9', output_key: 'images', output_index: 0 }) },
      'o0.txt',
    );
    const second = await upload(
      unique('out'),
      { prompt_id: job, user_metadata: JSON.stringify({ node_id: 12, output_index: 1, output_key: 3 }) },
      'o1.safetensors',
    );
    const third = await upload(unique('out'), { prompt_id: job }, 'o2.txt');
    await upload(unique('out'), { prompt_id: job }, 'bob.txt', KEYS.bob);
    const p1 = await get(`/api/jobs/${job}/assets?limit=2`);
    expect(p1).toEqual({
      status: 200,
      body: {
        assets: [
          {
            id: first.id,
            name: 'o0.txt',
            hash: first.hash,
            mime_type: 'text/plain',
            size: first.size,
            created_at: first.created_at,
            preview_url: granted(suite.svc, `${suite.svc.url}/api/assets/${first.id}/content`),
            node_id: '9',
            output_key: 'images',
            output_index: 0,
          },
          {
            id: second.id,
            name: 'o1.safetensors',
            hash: second.hash,
            mime_type: second.mime_type,
            size: second.size,
            created_at: second.created_at,
            node_id: '12',
            output_key: null,
            output_index: 1,
          },
        ],
        total: 3,
        has_more: true,
      },
    });
    const p2 = await get(`/api/jobs/${job}/assets?limit=2&offset=2`);
    expect(p2.body).toMatchObject({
      total: 3,
      has_more: false,
      assets: [{ id: third.id, node_id: null, output_key: null, output_index: null }],
    });
    expect((await get(`/api/jobs/${job}/assets?offset=5`)).body).toEqual({ assets: [], total: 3, has_more: false });
    expect((await get(`/api/jobs/${job}/assets`, KEYS.bob)).body.total).toBe(1);
    expect((await get(`/api/jobs/${crypto.randomUUID()}/assets`)).body).toEqual({
      assets: [],
      total: 0,
      has_more: false,
    });
    for (const qs of ['limit=0', 'limit=501', 'offset=-1', 'limit=x']) {
      const r = await get(`/api/jobs/${job}/assets?${qs}`);
      expect([qs, r.status, r.body.code]).toEqual([qs, 400, 'INVALID_QUERY']);
    }
    expect((await get('/api/jobs/not-a-job/assets')).body.code).toBe('INVALID_ID');

    const q =
      'query($j: ID!, $l: Int, $o: Int) { jobAssets(jobId: $j, limit: $l, offset: $o) { total hasMore items { id hash previewUrl nodeId outputKey outputIndex } } }';
    const g = await gql(suite.svc, q, { j: job, l: 2, o: 1 });
    expect(g.data.jobAssets).toEqual({
      total: 3,
      hasMore: false,
      items: [
        { id: second.id, hash: second.hash, previewUrl: null, nodeId: '12', outputKey: null, outputIndex: 1 },
        {
          id: third.id,
          hash: third.hash,
          previewUrl: granted(suite.svc, `${suite.svc.url}/api/assets/${third.id}/content`),
          nodeId: null,
          outputKey: null,
          outputIndex: null,
        },
      ],
    });
    expect((await gql(suite.svc, q, { j: crypto.randomUUID() })).data.jobAssets).toEqual({
      total: 0,
      hasMore: false,
      items: [],
    });
    expect((await gql(suite.svc, q, { j: 'nope' })).code).toBe('INVALID_ID');
    expect((await gql(suite.svc, q, { j: job, l: 0 })).code).toBe('INVALID_BODY');
  });
});
