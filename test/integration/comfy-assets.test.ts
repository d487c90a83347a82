/**
 * What the ComfyUI frontend and Comfy Cloud clients need of assets: no null for an
 * optional field, the fields they read (hash, job_id, display_name, loader_path, metadata, absolute preview_url),
 * cursor paging, ComfyUI's metadata_filter, tag edits and facets, bounded counts. Every JSON answer of this suite is
 * validated against openapi.yaml (test/helpers/openapi-validator.ts).
 */
import crypto from 'node:crypto';
import { gql } from '../helpers/graphql';
import {
  blake3Of,
  json,
  KEYS,
  sha256Of,
  startTestService,
  waitFor,
  type TestService,
  granted,
} from '../helpers/harness';
import { validateSchema } from '../helpers/openapi-validator';
import { comfySuite } from '../helpers/comfy-suite';

const CAROL = 'carol-key-0001';
const DAVE = 'dave-key-00001';
const GINA = 'gina-key-00001';
const HANK = 'hank-key-00001';

const suite = comfySuite({
  API_KEYS: `alice:${KEYS.alice},bob:${KEYS.bob},carol:${CAROL},dave:${DAVE},gina:${GINA},hank:${HANK}`,
});
const { upload, get, unique } = suite;
const sendJson = suite.send;

type Json = any;

/** A PNG whose IHDR says width × height (the rest is noise: only the header is read). */
function png(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(25);
  ihdr.writeUInt32BE(13, 0);
  ihdr.write('IHDR', 4, 'latin1');
  ihdr.writeUInt32BE(width, 8);
  ihdr.writeUInt32BE(height, 12);
  ihdr.set([8, 6, 0, 0, 0], 16);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ihdr, crypto.randomBytes(32)]);
}

/** A safetensors file: 8-byte header length, the JSON header with `__metadata__` first, then the tensor bytes. */
function safetensors(metadata: Record<string, unknown>, tensorBytes = 64): Buffer {
  const header = Buffer.from(
    JSON.stringify({
      __metadata__: metadata,
      w: { dtype: 'F16', shape: [tensorBytes / 2], data_offsets: [0, tensorBytes] },
    }),
  );
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(header.length));
  return Buffer.concat([len, header, crypto.randomBytes(tensorBytes)]);
}

/** Every null anywhere in `v`, as paths, except the keys the contract lets be null. */
function nulls(v: unknown, where = ''): string[] {
  if (v === null) return /\.(preview_id|prompt_id|job_id)$/.test(where) ? [] : [where];
  if (Array.isArray(v)) return v.flatMap((x, i) => nulls(x, `${where}[${i}]`));
  if (v && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => nulls(x, `${where}.${k}`));
  return [];
}

describe('the null rule and the fields Comfy clients read', () => {
  test('a list page mixing an image with a preview and a model without one: no null but preview_id/prompt_id/job_id', async () => {
    const image = await upload(png(640, 480), { tags: 'output' }, 'ComfyUI_0001.png', CAROL);
    const model = await upload(
      safetensors({
        ss_base_model_version: 'sdxl_base_v1-0',
        ss_tag_frequency: JSON.stringify({ '10_x': { mychar: 9, smile: 3 } }),
        n: '1',
      }),
      { tags: 'models,loras', name: 'SDXL/my-lora.safetensors' },
      'my-lora.safetensors',
      CAROL,
    );
    const { status, body } = await get('/api/assets?sort=name&order=asc', CAROL);
    expect(status).toBe(200);
    validateSchema('AssetList', body);
    expect(nulls(body)).toEqual([]);
    expect(body.assets.map((a: Json) => a.id)).toEqual([image.id, model.id]);
    const [img, mdl] = body.assets;

    expect(img).toMatchObject({
      preview_id: image.id,
      preview_url: granted(suite.svc, `${suite.svc.url}/api/assets/${image.id}/content`, 'carol'),
      hash: img.asset_hash,
      display_name: 'ComfyUI_0001.png',
      job_id: null,
      metadata: { filename: 'ComfyUI_0001.png', format: 'png', width: 640, height: 480, content_length: image.size },
    });
    expect('loader_path' in img).toBe(false);

    expect('preview_url' in mdl).toBe(false);
    expect(mdl.preview_id).toBeNull();
    expect(mdl).toMatchObject({
      loader_path: 'SDXL/my-lora.safetensors',
      display_name: 'SDXL/my-lora.safetensors',
      metadata: {
        filename: 'my-lora.safetensors',
        format: 'safetensors',
        base_model: 'sdxl_base_v1-0',
        trained_words: ['mychar', 'smile'],
        safetensors: { ss_base_model_version: 'sdxl_base_v1-0', n: '1' },
      },
    });

    // The single-asset route, PUT and from-hash present the same JSON.
    const single = (await get(`/api/assets/${model.id}`, CAROL)).body;
    expect({ ...single, last_access_time: 0 }).toEqual({ ...mdl, last_access_time: 0 });
    const put = await sendJson('PUT', `/api/assets/${model.id}`, { user_metadata: { v: 1 } }, CAROL);
    expect(put.status).toBe(200);
    expect(nulls(put.body)).toEqual([]);
    expect(put.body).toMatchObject({
      ...mdl,
      user_metadata: { v: 1 },
      updated_at: put.body.updated_at,
      last_access_time: put.body.last_access_time,
    });
    const fromHash = await sendJson(
      'POST',
      '/api/assets/from-hash',
      { hash: image.asset_hash, tags: ['copy'] },
      KEYS.bob,
    );
    expect(fromHash.status).toBe(201);
    expect(nulls(fromHash.body)).toEqual([]);
    expect(fromHash.body.metadata).toMatchObject({ format: 'png', width: 640, height: 480 });
  });

  test('loader_path only for models-tagged assets with a safe relative name', async () => {
    const cases: [string, string, string | undefined][] = [
      ['models,checkpoints', 'SDXL/base.safetensors', 'SDXL/base.safetensors'],
      ['models', 'plain.gguf', 'plain.gguf'],
      ['models', '../escape.safetensors', undefined],
      ['models', '/abs/path.safetensors', undefined],
      ['models', 'dir\\win.safetensors', undefined],
      ['models', 'a//b.safetensors', undefined],
      ['checkpoints', 'SDXL/base.safetensors', undefined],
    ];
    for (const [tags, name, expected] of cases) {
      const a = await upload(unique(name), { tags, name }, 'f.safetensors');
      expect([name, a.loader_path]).toEqual([name, expected]);
    }
  });

  test('preview_url is built from the request Host; X-Forwarded-* are ignored without TRUST_PROXY', async () => {
    const image = await upload(png(2, 2), {}, 'p.png');
    const res = await suite.svc.fetch(`/api/assets?limit=1`, {
      headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
    });
    const page = await json(res);
    expect(page.assets[0]).toMatchObject({
      id: image.id,
      preview_url: granted(suite.svc, `${suite.svc.url}/api/assets/${image.id}/content`),
    });
  });

  test('existing assets get metadata from the backfill job, once, from the first bytes of their blob', async () => {
    const image = await upload(png(33, 44), {}, 'old.png');
    const hex = image.asset_hash.slice('blake3:'.length);
    await suite.db.query('UPDATE content SET metadata = NULL WHERE blake3 = $1', [hex]);
    await suite.db.query('UPDATE asset SET metadata = NULL WHERE content_hash = $1', [hex]);
    const before = (await get(`/api/assets/${image.id}`)).body;
    expect('metadata' in before).toBe(false);
    expect(await suite.svc.container.assets.backfillMetadata()).toBeGreaterThanOrEqual(2);
    expect(await suite.svc.container.assets.backfillMetadata()).toBe(0);
    const after = (await get(`/api/assets/${image.id}`)).body;
    expect(after.metadata).toEqual({
      filename: 'old.png',
      content_length: image.size,
      format: 'png',
      width: 33,
      height: 44,
    });
  });
});

describe('cursor paging', () => {
  const SORTS = ['name', 'created_at', 'updated_at', 'size'] as const;
  let ids: string[];

  beforeAll(async () => {
    ids = [];
    for (let i = 0; i < 14; i++) ids.push((await upload(unique(`c${i}`), {}, `c${i}.bin`, DAVE)).id);
    // Ties on every sort key: names, sizes and times repeat across rows, so only the id orders them.
    await suite.db.query(
      `UPDATE asset SET name = 'n' || (x.rn % 4), size = (x.rn % 3) * 10,
         created_at = '2026-01-01T00:00:00Z'::timestamptz + make_interval(secs => x.rn % 5),
         updated_at = '2026-02-01T00:00:00Z'::timestamptz + make_interval(secs => x.rn % 2)
       FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM asset WHERE owner_id = 'dave') x WHERE asset.id = x.id`,
    );
  });

  async function walk(query: string, limit: number, between?: (page: Json[]) => Promise<void>): Promise<string[]> {
    const out: string[] = [];
    let after: string | undefined;
    for (let n = 0; n < 100; n++) {
      const { status, body } = await get(`/api/assets?${query}&limit=${limit}${after ? `&after=${after}` : ''}`, DAVE);
      expect(status).toBe(200);
      out.push(...body.assets.map((a: Json) => a.id));
      expect(body.has_more).toBe(body.next_cursor !== undefined);
      if (!body.has_more) return out;
      after = body.next_cursor;
      await between?.(body.assets);
    }
    throw new Error('no last page');
  }

  test.each(SORTS.flatMap((s) => (['asc', 'desc'] as const).map((o) => [s, o] as const)))(
    'sort=%s order=%s: pages joined are the whole list',
    async (sort, order) => {
      const all = (await get(`/api/assets?sort=${sort}&order=${order}&limit=500`, DAVE)).body.assets as Json[];
      expect(all).toHaveLength(ids.length);
      // Ties broken by id in the same direction.
      const key = (a: Json) => (sort === 'size' ? String(a.size).padStart(6, '0') : sort === 'name' ? a.name : a[sort]);
      const expected = [...all].sort((a, b) => {
        const c = key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
        return order === 'asc' ? c : -c;
      });
      expect(all.map((a) => a.id)).toEqual(expected.map((a) => a.id));
      for (const limit of [1, 3, 5])
        expect(await walk(`sort=${sort}&order=${order}`, limit)).toEqual(all.map((a) => a.id));
    },
  );

  test('rows deleted between pages (the boundary row included) are neither repeated nor skipped', async () => {
    const extra: string[] = [];
    for (let i = 0; i < 6; i++) extra.push((await upload(unique(`d${i}`), {}, `d${i}.bin`, DAVE)).id);
    const all = ((await get('/api/assets?sort=created_at&order=desc&limit=500', DAVE)).body.assets as Json[]).map(
      (a) => a.id,
    );
    const deleted = new Set<string>();
    const seen = await walk('sort=created_at&order=desc', 4, async (page) => {
      for (const victim of [page[page.length - 1].id, all[all.indexOf(page[page.length - 1].id) + 2]]) {
        if (!victim || deleted.has(victim) || !extra.includes(victim)) continue;
        expect((await suite.svc.fetch(`/api/assets/${victim}`, { method: 'DELETE', key: DAVE })).status).toBe(204);
        deleted.add(victim);
      }
    });
    expect(new Set(seen).size).toBe(seen.length);
    const afterDeletes = all.filter((id) => !deleted.has(id) || seen.includes(id));
    expect(seen).toEqual(afterDeletes);
  });

  test('a cursor replayed with another sort or order, or malformed, is 400 INVALID_CURSOR', async () => {
    const first = (await get('/api/assets?sort=name&order=asc&limit=2', DAVE)).body;
    expect(first.next_cursor).toEqual(expect.any(String));
    for (const qs of ['sort=name&order=desc', 'sort=size&order=asc', 'order=asc', 'sort=last_access_time&order=asc']) {
      const r = await get(`/api/assets?${qs}&after=${first.next_cursor}`, DAVE);
      expect([qs, r.status, r.body.code]).toEqual([qs, 400, 'INVALID_CURSOR']);
    }
    const forged = Buffer.from(JSON.stringify({ s: 'name', o: 'asc', v: 5, id: 'x' })).toString('base64url');
    for (const bad of ['not!a!cursor', 'eyJ4IjoxfQ', forged, 'A'.repeat(3000)]) {
      const r = await get(`/api/assets?sort=name&order=asc&after=${bad}`, DAVE);
      expect([bad.slice(0, 20), r.status, r.body.code]).toEqual([
        bad.slice(0, 20),
        400,
        bad.length > 2048 ? expect.any(String) : 'INVALID_CURSOR',
      ]);
    }
  });

  test('next_cursor also in offset mode; none for last_access_time sorts (has_more stays exact)', async () => {
    const all = ((await get('/api/assets?sort=size&order=asc&limit=500', DAVE)).body.assets as Json[]).map((a) => a.id);
    const page = (await get('/api/assets?sort=size&order=asc&limit=3&offset=3', DAVE)).body;
    expect(page.assets.map((a: Json) => a.id)).toEqual(all.slice(3, 6));
    const next = (await get(`/api/assets?sort=size&order=asc&limit=3&offset=999&after=${page.next_cursor}`, DAVE)).body;
    expect(next.assets.map((a: Json) => a.id)).toEqual(all.slice(6, 9));
    const lat = (await get('/api/assets?sort=last_access_time&limit=2', DAVE)).body;
    expect(lat.has_more).toBe(true);
    expect('next_cursor' in lat).toBe(false);
    const last = (await get(`/api/assets?sort=size&order=asc&limit=3&offset=${all.length - 3}`, DAVE)).body;
    expect(last.has_more).toBe(false);
    expect('next_cursor' in last).toBe(false);
  });
});

describe('filters', () => {
  test('metadata_filter follows ComfyUI: scalar or array element (strict types), any-of lists, null, objects, keys ANDed', async () => {
    const values: Record<string, unknown> = {
      A: { k: 1 },
      B: { k: '1' },
      C: { k: [1, 2] },
      D: { k: null },
      E: {},
      F: { k: { a: 1 } },
      G: { k: [{ a: 1 }, { b: 2 }] },
      H: { k: true },
      I: { k: 'true' },
      J: { k: { a: 1, b: 2 } },
      K: { k: 1, other: 'x' },
      L: { k: [[1]] },
    };
    const idOf: Record<string, string> = {};
    for (const [label, um] of Object.entries(values)) {
      idOf[(await upload(unique(label), { user_metadata: JSON.stringify(um), name: label }, 'f.bin', HANK)).id] = label;
    }
    const match = async (filter: unknown) => {
      const r = await get(
        `/api/assets?limit=500&sort=name&order=asc&metadata_filter=${encodeURIComponent(JSON.stringify(filter))}`,
        HANK,
      );
      expect(r.status).toBe(200);
      return r.body.assets.map((a: Json) => idOf[a.id]);
    };
    expect(await match({ k: 1 })).toEqual(['A', 'C', 'K']);
    expect(await match({ k: '1' })).toEqual(['B']);
    expect(await match({ k: true })).toEqual(['H']);
    expect(await match({ k: 'true' })).toEqual(['I']);
    expect(await match({ k: [2, 'true'] })).toEqual(['C', 'I']);
    expect(await match({ k: [] })).toEqual(Object.keys(values));
    expect(await match({ k: null })).toEqual(['D', 'E']);
    expect(await match({ k: [null, '1'] })).toEqual(['B', 'D', 'E']);
    expect(await match({ k: { a: 1 } })).toEqual(['F', 'G']);
    expect(await match({ k: 1, other: 'x' })).toEqual(['K']);
    expect(await match({ missing: null, k: 'true' })).toEqual(['I']);
    expect(await match({})).toEqual(Object.keys(values));
    for (const bad of ['[1]', '"x"', 'null', '{bad']) {
      const r = await get(`/api/assets?metadata_filter=${encodeURIComponent(bad)}`, HANK);
      expect([bad, r.status, r.body.code]).toEqual([bad, 400, 'INVALID_QUERY']);
    }
  });

  test('tags_all, tags_any, tags_none, hash (blake3 and sha256), include_public', async () => {
    const body = unique('hashed');
    const a = await upload(body, { tags: 'x,y' }, 'a.bin', GINA);
    const b = await upload(unique(), { tags: 'y,z' }, 'b.bin', GINA);
    const c = await upload(unique(), { tags: 'z' }, 'c.bin', GINA);
    const ids = async (qs: string) =>
      ((await get(`/api/assets?sort=name&order=asc&${qs}`, GINA)).body.assets as Json[]).map((x) => x.id).sort();
    expect(await ids('tags_all=y,x')).toEqual([a.id]);
    expect(await ids('tags_any=x&tags_any=z')).toEqual([a.id, b.id, c.id].sort());
    expect(await ids('tags_none=x')).toEqual([b.id, c.id].sort());
    expect(await ids('tags_any=y&exclude_tags=z')).toEqual([a.id]);
    expect(await ids(`hash=${blake3Of(body)}`)).toEqual([a.id]);
    expect(await ids(`hash=${sha256Of(body)}`)).toEqual([a.id]);
    expect(await ids('include_public=true&tags_all=z')).toEqual([b.id, c.id].sort());
    expect((await get('/api/assets?hash=md5:00', GINA)).body.code).toBe('INVALID_QUERY');
  });

  test("parameters ComfyUI's newest list ignores are ignored here too: job_ids (added there, then dropped), asset_hash (there: hash)", async () => {
    const job = crypto.randomUUID();
    const a = await upload(unique('ignored'), { tags: 'ign-a', prompt_id: job }, 'a.bin', GINA);
    const b = await upload(unique('ignored'), { tags: 'ign-a' }, 'b.bin', GINA);
    const ids = async (qs: string) => {
      const r = await get(`/api/assets?tags_all=ign-a&${qs}`, GINA);
      expect(r.status).toBe(200);
      return (r.body.assets as Json[]).map((x) => x.id).sort();
    };
    const all = [a.id, b.id].sort();
    expect(await ids(`job_ids=${job}`)).toEqual(all);
    expect(await ids(`job_ids=not-a-uuid`)).toEqual(all);
    expect(await ids(`asset_hash=${a.hash}`)).toEqual(all);
    expect(await ids(`hash=${a.hash}`)).toEqual([a.id]);
  });

  test("a tag filter holds up to 100 tags (ComfyUI's cap, counted once normalised); 101 is 400 INVALID_TAG_FILTER", async () => {
    const tags = (n: number) => Array.from({ length: n }, (_, i) => `cap-${i}`).join(',');
    for (const route of ['/api/assets', '/api/assets/tags/refine']) {
      for (const name of ['include_tags', 'tags_all', 'tags_any', 'tags_none', 'exclude_tags']) {
        expect([route, name, (await get(`${route}?${name}=${tags(100)}`, GINA)).status]).toEqual([route, name, 200]);
        // Duplicates and blank variants count once, as the filter is normalised first; another case is another tag.
        expect([route, name, (await get(`${route}?${name}=${tags(100)},%20cap-0,cap-1`, GINA)).status]).toEqual([
          route,
          name,
          200,
        ]);
        const cased = await get(`${route}?${name}=${tags(100)},CAP-0`, GINA);
        expect([route, name, cased.status, cased.body.details]).toEqual([
          route,
          name,
          400,
          { parameter: name, count: 101, max: 100 },
        ]);
        const r = await get(`${route}?${name}=${tags(101)}`, GINA);
        expect([route, name, r.status, r.body.code, r.body.details]).toEqual([
          route,
          name,
          400,
          'INVALID_TAG_FILTER',
          { parameter: name, count: 101, max: 100 },
        ]);
      }
    }
  });

  test("contradicting tag filters are 400 INVALID_TAG_FILTER with ComfyUI's details; legacy include/exclude overlap is an empty page", async () => {
    const a = await upload(unique('tf'), { tags: 'tf-a,tf-x' }, 'a.bin', GINA);
    const b = await upload(unique('tf'), { tags: 'tf-a,tf-y' }, 'b.bin', GINA);
    for (const [qs, details] of [
      ['include_tags=tf-a&tags_all=tf-x', { parameters: ['include_tags', 'tags_all'] }],
      ['exclude_tags=tf-x&tags_none=tf-y', { parameters: ['exclude_tags', 'tags_none'] }],
      ['tags_all=tf-x&tags_none=tf-x', { parameters: ['tags_all', 'tags_none'], conflicting_tags: ['tf-x'] }],
      ['include_tags=tf-x&tags_none=tf-x', { parameters: ['include_tags', 'tags_none'], conflicting_tags: ['tf-x'] }],
      [
        'tags_all=tf-a,tf-x,tf-y&tags_none=tf-y,TF-X,tf-x',
        { parameters: ['tags_all', 'tags_none'], conflicting_tags: ['tf-x', 'tf-y'] },
      ],
      // Old names only, but tags_any is a new name: the rule applies.
      [
        'include_tags=tf-x&exclude_tags=tf-x&tags_any=tf-a',
        { parameters: ['include_tags', 'exclude_tags'], conflicting_tags: ['tf-x'] },
      ],
    ] as const) {
      for (const route of ['/api/assets', '/api/assets/tags/refine']) {
        const r = await get(`${route}?${qs}`, GINA);
        expect([route, qs, r.status, r.body.code, r.body.details]).toEqual([
          route,
          qs,
          400,
          'INVALID_TAG_FILTER',
          details,
        ]);
        expect(r.body.message).toEqual(expect.any(String));
      }
    }
    // Exact spelling: TF-X is not tf-x, so no conflict.
    expect(
      await ((qs: string) => get(`/api/assets?${qs}`, GINA).then((r) => (r.body.assets as Json[]).map((x) => x.id)))(
        'tags_all=tf-x&tags_none=TF-X',
      ),
    ).toEqual([a.id]);
    const ids = async (qs: string) =>
      ((await get(`/api/assets?${qs}`, GINA)).body.assets as Json[]).map((x) => x.id).sort();
    expect(await ids('include_tags=tf-x&exclude_tags=tf-x')).toEqual([]);
    expect(await ids('tags_any=tf-x,tf-y&tags_none=tf-x')).toEqual([b.id]);
    expect(await ids('tags_all=tf-a&tags_none=tf-y')).toEqual([a.id]);
    expect(await ids('include_tags=tf-a&include_tags=&tags_all=')).toEqual([a.id, b.id].sort());
    // Empty lists count as absent: no "both names" error, no conflict.
    expect(await ids('tags_all=&include_tags=tf-a&tags_none=&exclude_tags=tf-y')).toEqual([a.id]);
    expect(await ids('tags_all=%20,&tags_any=tf-a&tags_none=tf-x')).toEqual([b.id]);
    // Repeated keys are joined.
    expect(await ids('tags_all=tf-a&tags_all=tf-x')).toEqual([a.id]);
    expect(await ids('tags_none=tf-x&tags_none=tf-y&tags_any=tf-a')).toEqual([]);
    const refine = await get('/api/assets/tags/refine?tags_all=tf-a&tags_all=tf-y', GINA);
    expect(refine.body.tag_counts).toEqual({ 'tf-a': 1, 'tf-y': 1 });
  });

  test('total is exact up to 10,000 matches, then a lower bound with total_is_lower_bound; has_more stays exact', async () => {
    // 10,050 assets of one owner, straight into the tables (content rows are needed for the foreign key).
    await suite.db.query(`INSERT INTO content (blake3, sha256, size, mime_type, first_name)
      SELECT md5('bulk' || i) || md5('b' || i), md5('sha' || i) || md5('s' || i), 1, 'application/octet-stream', 'f'
      FROM generate_series(1, 10050) AS i`);
    await suite.db.query(`INSERT INTO asset (id, owner_id, name, content_hash, size, mime_type, tags, metadata)
      SELECT gen_random_uuid(), 'bulk', 'bulk-' || i, md5('bulk' || i) || md5('b' || i), 1, 'application/octet-stream',
             CASE WHEN i <= 3 THEN ARRAY['rare'] ELSE ARRAY['common'] END, '{}'::jsonb
      FROM generate_series(1, 10050) AS i`);
    const key = 'bulk-key-0001';
    // An owner is a key's owner: a stored key for 'bulk' (keys are kept as SHA-256 hashes).
    await suite.db.query(`INSERT INTO api_key (id, owner_id, key_hash) VALUES (gen_random_uuid(), 'bulk', $1)`, [
      crypto.createHash('sha256').update(key).digest('hex'),
    ]);
    const page = (await get('/api/assets?limit=5', key)).body;
    expect(page).toMatchObject({ total: 10_000, total_is_lower_bound: true, has_more: true });
    expect(page.next_cursor).toEqual(expect.any(String));
    const rare = (await get('/api/assets?limit=5&include_tags=rare', key)).body;
    expect(rare).toMatchObject({ total: 3, has_more: false });
    expect('total_is_lower_bound' in rare).toBe(false);
    const tags = (await get('/api/tags', key)).body;
    expect(tags.tags).toEqual([
      { name: 'common', count: 10_047 },
      { name: 'rare', count: 3 },
    ]);
    // Filtered facets read at most 10,000 matches too: over that, counts of the newest 10,000, flagged as lower bounds.
    const facets = (await get('/api/assets/tags/refine?include_tags=common', key)).body;
    expect(facets).toEqual({ tag_counts: { common: 10_000 }, counts_are_lower_bounds: true });
    const exact = (await get('/api/assets/tags/refine?tags_any=rare', key)).body;
    expect(exact).toEqual({ tag_counts: { rare: 3 } });
  });
});

describe('tags', () => {
  const tagsOf = async (id: string) => (await get(`/api/assets/${id}`)).body.tags;

  test('POST/DELETE /api/assets/{id}/tags: normalised, the three arrays, 400/404/409', async () => {
    const a = await upload(unique('tags'), { tags: 'b,a' });
    const add = await sendJson('POST', `/api/assets/${a.id}/tags`, { tags: [' C ', 'a', 'c', 'D'] });
    // Case kept (contract 2): C and c are two tags.
    expect(add).toEqual({
      status: 200,
      body: { added: ['C', 'D', 'c'], already_present: ['a'], total_tags: ['b', 'a', 'C', 'c', 'D'] },
    });
    const rm = await sendJson('DELETE', `/api/assets/${a.id}/tags`, { tags: ['A', 'zz', 'D', 'c'] });
    expect(rm).toEqual({
      status: 200,
      body: { removed: ['D', 'c'], not_present: ['A', 'zz'], total_tags: ['b', 'a', 'C'], protected: [] },
    });
    expect(await tagsOf(a.id)).toEqual(['b', 'a', 'C']);
    for (const body of [{}, { tags: [] }, { tags: [' '] }, { tags: 'a' }, { tags: [1] }]) {
      for (const method of ['POST', 'DELETE']) {
        const r = await sendJson(method, `/api/assets/${a.id}/tags`, body);
        expect([method, JSON.stringify(body), r.status, r.body.code]).toEqual([
          method,
          JSON.stringify(body),
          400,
          'INVALID_BODY',
        ]);
      }
    }
    expect((await sendJson('POST', `/api/assets/${crypto.randomUUID()}/tags`, { tags: ['x'] })).status).toBe(404);
    expect((await sendJson('POST', `/api/assets/${a.id}/tags`, { tags: ['x'] }, KEYS.bob)).status).toBe(404);
    const set = await gql(
      suite.svc,
      'mutation($id: ID!) { setAssetImmutable(id: $id, immutable: true) { id } }',
      { id: a.id },
      { key: KEYS.admin },
    );
    expect(set.errors).toBeUndefined();
    expect((await sendJson('POST', `/api/assets/${a.id}/tags`, { tags: ['x'] })).body.code).toBe('ASSET_IMMUTABLE');
    expect((await sendJson('DELETE', `/api/assets/${a.id}/tags`, { tags: ['b'] })).status).toBe(409);
  });

  test('20 concurrent adds and then 20 concurrent mixed edits on one asset lose nothing; GET /api/tags stays exact', async () => {
    const a = await upload(unique('race'), { tags: 'base' });
    const adds = await Promise.all(
      Array.from({ length: 20 }, (_, i) => sendJson('POST', `/api/assets/${a.id}/tags`, { tags: [`t${i}`] })),
    );
    expect(adds.every((r) => r.status === 200)).toBe(true);
    expect([...(await tagsOf(a.id))].sort()).toEqual(['base', ...Array.from({ length: 20 }, (_, i) => `t${i}`)].sort());
    const mixed = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0
          ? sendJson('DELETE', `/api/assets/${a.id}/tags`, { tags: [`t${i}`] })
          : sendJson('POST', `/api/assets/${a.id}/tags`, { tags: [`u${i}`] }),
      ),
    );
    expect(mixed.every((r) => r.status === 200)).toBe(true);
    const expected = [
      'base',
      ...Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? [] : [`t${i}`, `u${i}`])).flat(),
    ].sort();
    expect([...(await tagsOf(a.id))].sort()).toEqual(expected);

    // The maintained counts equal a recount of every asset of this owner.
    const all = (await get('/api/assets?limit=500')).body.assets as Json[];
    const recount = new Map<string, number>();
    for (const x of all) for (const t of x.tags) recount.set(t, (recount.get(t) ?? 0) + 1);
    const listed = (await get('/api/tags?limit=1000&include_zero=true&include_public=false')).body;
    expect(new Map(listed.tags.map((t: Json) => [t.name, t.count]))).toEqual(recount);
    // ... also after a delete.
    expect((await suite.svc.fetch(`/api/assets/${a.id}`, { method: 'DELETE' })).status).toBe(204);
    const afterDelete = (await get('/api/tags?limit=1000')).body.tags as Json[];
    expect(afterDelete.find((t) => t.name === 'u1')).toBeUndefined();
    expect(afterDelete.find((t) => t.name === 'base')?.count).toBe((recount.get('base') ?? 0) - 1 || undefined);
  });

  test('GET /api/assets/tags/refine: tag counts over the matching assets, most used first', async () => {
    await upload(unique(), { tags: 'facet,f-one,shared' }, 'a.bin', CAROL);
    await upload(unique(), { tags: 'facet,f-two,shared' }, 'b.bin', CAROL);
    await upload(unique(), { tags: 'other,shared' }, 'c.bin', CAROL);
    const r = await get('/api/assets/tags/refine?include_tags=facet', CAROL);
    expect(r.status).toBe(200);
    expect(Object.entries(r.body.tag_counts)).toEqual([
      ['facet', 2],
      ['shared', 2],
      ['f-one', 1],
      ['f-two', 1],
    ]);
    expect((await get('/api/assets/tags/refine?tags_any=other&limit=1', CAROL)).body).toEqual({
      tag_counts: { other: 1 },
    });
    expect((await get('/api/assets/tags/refine?limit=0', CAROL)).status).toBe(400);
    // No filter: every asset of the owner, the same counts as GET /api/tags (read from the maintained table).
    const all = (await get('/api/assets/tags/refine?limit=1000', CAROL)).body.tag_counts;
    const tags = (await get('/api/tags?limit=1000', CAROL)).body.tags as Json[];
    expect(all).toEqual(Object.fromEntries(tags.map((t) => [t.name, t.count])));
  });
});

describe('GraphQL: the same through the same services', () => {
  test('hash, displayName, jobId, loaderPath, metadata; assets(after) → nextCursor; tag mutations; tagCounts', async () => {
    const m = await upload(
      safetensors({ 'modelspec.architecture': 'flux-1-dev', 'modelspec.trigger_phrase': 'a, b' }),
      { tags: 'models,loras', name: 'gq/l.safetensors' },
      'l.safetensors',
      DAVE,
    );
    const q = `query($id: ID!) { asset(id: $id) { hash assetHash displayName jobId loaderPath metadata previewUrl } }`;
    const one = (await gql(suite.svc, q, { id: m.id }, { key: DAVE })).data.asset;
    expect(one).toMatchObject({
      hash: m.asset_hash,
      displayName: 'gq/l.safetensors',
      jobId: null,
      loaderPath: 'gq/l.safetensors',
      previewUrl: null,
    });
    expect(one.metadata).toMatchObject({ format: 'safetensors', base_model: 'flux-1-dev', trained_words: ['a', 'b'] });

    const page = `query($after: String) { assets(limit: 4, sort: name, order: asc, after: $after) { items { id } hasMore nextCursor totalIsLowerBound total } }`;
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const p: Json = (await gql(suite.svc, page, { after }, { key: DAVE })).data.assets;
      expect(p.totalIsLowerBound).toBe(false);
      seen.push(...p.items.map((x: Json) => x.id));
      after = p.nextCursor;
      expect(p.hasMore).toBe(after !== null);
    } while (after);
    const rest = ((await get('/api/assets?sort=name&order=asc&limit=500', DAVE)).body.assets as Json[]).map(
      (a) => a.id,
    );
    expect(seen).toEqual(rest);
    const bad = await gql(
      suite.svc,
      `{ assets(sort: size, after: "${(await get('/api/assets?sort=name&limit=1', DAVE)).body.next_cursor}") { total } }`,
      {},
      { key: DAVE },
    );
    expect(bad.code).toBe('INVALID_CURSOR');

    const add = await gql(
      suite.svc,
      'mutation($id: ID!) { addAssetTags(id: $id, tags: ["New", "loras"]) { added alreadyPresent totalTags } }',
      { id: m.id },
      { key: DAVE },
    );
    expect(add.data.addAssetTags).toEqual({
      added: ['New'],
      alreadyPresent: ['loras'],
      totalTags: ['models', 'loras', 'New'],
    });
    const rm = await gql(
      suite.svc,
      'mutation($id: ID!) { removeAssetTags(id: $id, tags: ["New", "new"]) { removed notPresent totalTags protected } }',
      { id: m.id },
      { key: DAVE },
    );
    expect(rm.data.removeAssetTags).toEqual({
      removed: ['New'],
      notPresent: ['new'],
      totalTags: ['models', 'loras'],
      protected: [],
    });
    const facets = await gql(
      suite.svc,
      '{ tagCounts(filter: { includeTags: ["loras"] }) { name count } }',
      {},
      { key: DAVE },
    );
    expect(facets.data.tagCounts).toEqual([
      { name: 'loras', count: 1 },
      { name: 'models', count: 1 },
    ]);
  });
});

describe('exports as Comfy clients start them (POST /api/assets/export)', () => {
  // An HTTP-only instance runs no jobs, so its exports stay queued for as long as the test needs them to.
  let api: TestService;
  beforeAll(async () => {
    api = await startTestService({ ROLE: 'api' }, { validateResponses: true });
  });
  afterAll(async () => {
    await api?.stop();
  });

  const start = async (body: unknown, key: string = KEYS.alice) => {
    const res = await api.fetch('/api/assets/export', {
      method: 'POST',
      key,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: await json(res) };
  };

  test('the same request while its export is queued answers that task; another owner, request or a finished export starts anew', async () => {
    const [a, b, job] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const body = {
      asset_ids: [a, b],
      job_ids: [job],
      job_asset_name_filters: { [job]: ['x.png', 'y.png'] },
      include_previews: true,
      naming_strategy: 'preserve',
    };
    const first = await start(body);
    expect(first.status).toBe(202);
    // Ids and names in another order, a filter of a job not asked for: the same archive.
    const again = await start({
      ...body,
      asset_ids: [b, a],
      job_asset_name_filters: { [job]: ['y.png', 'x.png'], [crypto.randomUUID()]: ['z.png'] },
    });
    expect(again).toEqual(first);
    expect((await start(body, KEYS.bob)).body.task_id).not.toBe(first.body.task_id);
    expect((await start({ ...body, include_previews: false })).body.task_id).not.toBe(first.body.task_id);
    expect((await start({ ...body, naming_strategy: 'asset_id' })).body.task_id).not.toBe(first.body.task_id);

    expect((await api.fetch(`/api/tasks/${first.body.task_id}`, { method: 'DELETE' })).status).toBe(200);
    const afterCancel = await start(body);
    expect(afterCancel.status).toBe(202);
    expect(afterCancel.body.task_id).not.toBe(first.body.task_id);
  });

  test('identical requests arriving together make one task (a double click, two tabs, a retrying client)', async () => {
    const body = { job_ids: [crypto.randomUUID()], asset_ids: [crypto.randomUUID()], naming_strategy: 'preserve' };
    const answers = await Promise.all(Array.from({ length: 12 }, () => start(body)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 202));
    expect(new Set(answers.map((a) => a.body.task_id)).size).toBe(1);
    // The same with a client Idempotency-Key: one task, never a 500 from the losers' insert.
    const key = `export-${crypto.randomUUID()}`;
    const keyed = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const res = await api.fetch('/api/assets/export', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ asset_ids: [crypto.randomUUID()] }),
        });
        return { status: res.status, body: await json(res) };
      }),
    );
    expect(keyed.map((a) => a.status)).toEqual(keyed.map(() => 202));
    expect(new Set(keyed.map((a) => a.body.task_id)).size).toBe(1);
  });

  test('naming_strategy left out is group_by_job_time (as in Comfy Cloud and ComfyUI); an empty name list is 400', async () => {
    const job = crypto.randomUUID();
    const started = await start({ job_ids: [job] });
    expect(started.status).toBe(202);
    const task = await json(await api.fetch(`/api/tasks/${started.body.task_id}`));
    expect(task.payload).toEqual({
      job_ids: [job],
      asset_ids: [],
      naming_strategy: 'group_by_job_time',
      job_asset_name_filters: {},
      include_previews: false,
    });

    const empty = await start({ job_ids: [job], job_asset_name_filters: { [job]: [] } });
    expect(empty.status).toBe(400);
    // The field named is the job's empty list itself.
    expect(empty.body).toMatchObject({ code: 'INVALID_BODY', details: { field: `job_asset_name_filters.${job}` } });
  });

  test('a job name filter entry may be the asset name or its hash (blake3:<hex>), as ComfyUI matches them', async () => {
    // The service with workers runs this one to the end.
    const job = crypto.randomUUID();
    const byName = await upload(unique('by-name'), { prompt_id: job }, 'a.png');
    const byHash = await upload(unique('by-hash'), { prompt_id: job }, 'c.png');
    await upload(unique('left-out'), { prompt_id: job }, 'd.png');
    const started = await sendJson('POST', '/api/assets/export', {
      job_ids: [job],
      job_asset_name_filters: { [job]: [byName.name, byHash.hash] },
      naming_strategy: 'preserve',
    });
    expect(started.status).toBe(202);
    const task = await waitFor(
      async () => {
        const t = (await get(`/api/tasks/${started.body.task_id}`)).body;
        return t.status === 'completed' || t.status === 'failed' ? t : undefined;
      },
      { what: 'the export task' },
    );
    expect(task.status).toBe('completed');
    expect(task.result.assets_total).toBe(2);
  });

  test("an unknown export is 404 EXPORT_NOT_FOUND and a name no export can have 400 INVALID_EXPORT_NAME (ComfyUI's codes)", async () => {
    for (const name of [`${crypto.randomUUID()}.zip`, 'unknown.zip']) {
      const res = await get(`/api/assets/exports/${name}`);
      expect(res).toMatchObject({ status: 404, body: { code: 'EXPORT_NOT_FOUND' } });
    }
    for (const name of ['bad%20name.zip', 'nothing.tar']) {
      const res = await get(`/api/assets/exports/${name}`);
      expect(res).toMatchObject({ status: 400, body: { code: 'INVALID_EXPORT_NAME' } });
    }
  });

  test('a selection of nothing completes as ComfyUI reports it: success false, an error, no archive', async () => {
    const started = await sendJson('POST', '/api/assets/export', {
      asset_ids: [crypto.randomUUID()],
      job_ids: [crypto.randomUUID()],
    });
    expect(started.status).toBe(202);
    const task = await waitFor(
      async () => {
        const t = (await get(`/api/tasks/${started.body.task_id}`)).body;
        return t.status === 'completed' || t.status === 'failed' ? t : undefined;
      },
      { what: 'the export task' },
    );
    expect(task).toMatchObject({
      status: 'completed',
      result: { success: false, error: 'No valid assets to export', assets_total: 0 },
    });
    expect(task.result.export_name).toBeUndefined();
    expect(task.error_message).toBeUndefined();
    const q = 'query($id: ID!) { task(id: $id) { result { success exportName error } } }';
    expect((await gql(suite.svc, q, { id: task.id })).data.task.result).toEqual({
      success: false,
      exportName: null,
      error: 'No valid assets to export',
    });
  });
});
