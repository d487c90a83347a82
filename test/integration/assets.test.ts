import crypto from 'node:crypto';
import {
  blake3Of,
  json,
  KEYS,
  sha256Of,
  startTestService,
  uploadForm,
  type TestService,
  granted,
} from '../helpers/harness';

let svc: TestService;
beforeAll(async () => {
  // Every JSON answer of this suite is checked against openapi.yaml.
  svc = await startTestService({}, { validateResponses: true });
});
afterAll(async () => {
  await svc?.stop();
});

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), crypto.randomBytes(64)]);
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function upload(
  body: Buffer | string,
  fields: Record<string, string | string[]> = {},
  name = 'file.bin',
  key: string = KEYS.alice,
) {
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(body, fields, name), key });
  return { status: res.status, body: await json(res) };
}

const unique = (label = 'x') => `${label}-${crypto.randomUUID()}`;

describe('POST /api/assets (multipart)', () => {
  test('201 with the full asset shape, then 200 for the same content', async () => {
    const content = unique('first');
    const first = await upload(
      content,
      { tags: 'Models, loras,models, ', user_metadata: '{"k":"v"}', name: 'my model' },
      'm.safetensors',
    );
    expect(first.status).toBe(201);
    const a = first.body;
    expect(Object.keys(a).sort()).toEqual(
      [
        'id',
        'name',
        'size',
        'asset_hash',
        'mime_type',
        'tags',
        'user_metadata',
        'preview_id',
        'prompt_id',
        'created_at',
        'updated_at',
        'last_access_time',
        'is_immutable',
        'created_new',
        'hash',
        'display_name',
        'job_id',
        'metadata',
        'loader_path',
        'short_url',
      ].sort(),
    );
    expect(a).toMatchObject({
      name: 'my model',
      size: Buffer.byteLength(content),
      asset_hash: blake3Of(Buffer.from(content)),
      // Case kept (contract 2): `Models` and `models` are two tags.
      tags: ['Models', 'loras', 'models'],
      user_metadata: { k: 'v' },
      preview_id: null,
      prompt_id: null,
      job_id: null,
      hash: blake3Of(Buffer.from(content)),
      display_name: 'my model',
      metadata: { filename: 'm.safetensors', content_length: Buffer.byteLength(content), format: 'safetensors' },
      is_immutable: false,
      created_new: true,
    });
    // No preview: the key is left out, never null. Tagged models with a safe relative name: loader_path.
    expect('preview_url' in a).toBe(false);
    expect(a.loader_path).toBe('my model');
    expect(a.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.created_at).toMatch(ISO);
    expect(a.updated_at).toMatch(ISO);

    const again = await upload(content, { tags: 'other', name: 'ignored' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      id: a.id,
      created_new: false,
      name: 'my model',
      tags: ['Models', 'loras', 'models'],
    });
  });

  test('name defaults to the file name; MIME from magic bytes, else extension, else octet-stream', async () => {
    const png = await upload(PNG, {}, 'picture.dat');
    expect(png.status).toBe(201);
    expect(png.body.name).toBe('picture.dat');
    expect(png.body.mime_type).toBe('image/png');
    // An image is its own preview.
    expect(png.body.preview_id).toBe(png.body.id);
    expect(png.body.preview_url).toBe(granted(svc, `${svc.url}/api/assets/${png.body.id}/content`));

    const txt = await upload(unique('text'), {}, 'notes.json');
    expect(txt.body.mime_type).toBe('application/json');
    const bin = await upload(crypto.randomBytes(100), {}, 'blob');
    expect(bin.body.mime_type).toBe('application/octet-stream');
    const explicit = await upload(unique('explicit'), { mime_type: 'video/mp4' }, 'x.bin');
    expect(explicit.body.mime_type).toBe('video/mp4');
  });

  test('tags as JSON array text, comma text, or repeated fields', async () => {
    expect((await upload(unique(), { tags: '["A","b"," a ","b"]' })).body.tags).toEqual(['A', 'b', 'a']);
    expect((await upload(unique(), { tags: ['input', 'Output', 'input'] })).body.tags).toEqual(['input', 'Output']);
    expect((await upload(unique(), {})).body.tags).toEqual([]);
  });

  test('zero-byte file is content too', async () => {
    const empty = await upload(Buffer.alloc(0), {}, 'empty.txt');
    expect([200, 201]).toContain(empty.status);
    expect(empty.body.size).toBe(0);
    const res = await svc.fetch(`/api/assets/${empty.body.id}/content`);
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });

  test('idempotent id: same owner gets the existing asset; another owner gets 409', async () => {
    const id = crypto.randomUUID();
    const first = await upload(unique('idem'), { id });
    expect(first.status).toBe(201);
    expect(first.body.id).toBe(id);
    const second = await upload(unique('idem-other-bytes'), { id });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ id, created_new: false, asset_hash: first.body.asset_hash });
    const bob = await upload(unique('bob'), { id }, 'f', KEYS.bob);
    expect(bob.status).toBe(409);
    expect(bob.body.code).toBe('ID_CONFLICT');
  });

  test('preview_id must name one of my assets', async () => {
    const bad = await upload(unique(), { preview_id: crypto.randomUUID() });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('INVALID_PREVIEW_ID');
    const bobs = await upload(unique('bobs'), {}, 'f', KEYS.bob);
    const cross = await upload(unique(), { preview_id: bobs.body.id });
    expect(cross.body.code).toBe('INVALID_PREVIEW_ID');
    const mine = await upload(PNG.subarray(0, 40), {}, 'p.png');
    const ok = await upload(unique(), { preview_id: mine.body.id });
    expect(ok.status).toBe(201);
    expect(ok.body.preview_url).toBe(granted(svc, `${svc.url}/api/assets/${mine.body.id}/content`));
  });

  test('hash fast path: stored content with no file part, or a file that is only checked', async () => {
    const bytes = Buffer.from(unique('fast'));
    const stored = await upload(bytes, {}, 'orig.bin', KEYS.bob);
    expect(stored.status).toBe(201);
    // Alice names the content by hash only.
    const byHash = await svc.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(undefined, { hash: blake3Of(bytes), tags: 'x' }),
    });
    expect(byHash.status).toBe(201);
    expect((await json(byHash)).asset_hash).toBe(blake3Of(bytes));
    // Carol-like second owner via admin key: hash (sha256) before the file, matching file.
    const withFile = await svc.fetch('/api/assets', {
      method: 'POST',
      key: KEYS.admin,
      body: uploadForm(bytes, { hash: sha256Of(bytes) }, 'again.bin'),
    });
    expect(withFile.status).toBe(201);
    // A file that does not match the declared hash: 400 and nothing kept.
    const other = Buffer.from(unique('mismatch'));
    const mismatch = await svc.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(other, { hash: blake3Of(bytes) }),
    });
    expect(mismatch.status).toBe(400);
    expect((await json(mismatch)).code).toBe('HASH_MISMATCH');
    const mismatchNew = await svc.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(other, { hash: blake3Of(Buffer.from('nope')) }),
    });
    expect((await json(mismatchNew)).code).toBe('HASH_MISMATCH');
    expect((await svc.fetch(`/api/assets/hash/${blake3Of(other)}`, { method: 'HEAD' })).status).toBe(404);
    // Unknown hash and no file.
    const missing = await svc.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(undefined, { hash: blake3Of(Buffer.from(unique())) }),
    });
    expect(missing.status).toBe(400);
    expect((await json(missing)).code).toBe('MISSING_FILE');
  });
});

describe('GET/PUT/DELETE /api/assets/{id}', () => {
  test('GET returns the asset without created_new and records access', async () => {
    const { body: a } = await upload(unique('get'));
    const res = await svc.fetch(`/api/assets/${a.id}`);
    expect(res.status).toBe(200);
    const got = await json(res);
    expect(got).not.toHaveProperty('created_new');
    expect(got).toMatchObject({ id: a.id, asset_hash: a.asset_hash, size: a.size });
    expect(got.last_access_time).toMatch(ISO);
  });

  test('PUT applies all five fields and answers the whole updated asset', async () => {
    const { body: a } = await upload(unique('put'), { tags: 'a' });
    const { body: p } = await upload(PNG.subarray(0, 30), {}, 'prev.png');
    const res = await svc.fetch(`/api/assets/${a.id}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'renamed',
        tags: [' X ', 'y', 'x'],
        mime_type: 'Text/Plain',
        preview_id: p.id,
        user_metadata: { n: 1 },
      }),
    });
    expect(res.status).toBe(200);
    const r = await json(res);
    // The whole asset, as GET answers it.
    expect(r).toMatchObject({
      id: a.id,
      name: 'renamed',
      tags: ['X', 'y', 'x'],
      mime_type: 'text/plain',
      user_metadata: { n: 1 },
      asset_hash: a.asset_hash,
    });
    expect(r).toMatchObject({
      size: a.size,
      created_at: a.created_at,
      preview_id: p.id,
      preview_url: granted(svc, `${svc.url}/api/assets/${p.id}/content`),
    });
    expect('created_new' in r).toBe(false);
    expect(new Date(r.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(a.updated_at).getTime());
    const got = await json(await svc.fetch(`/api/assets/${a.id}`));
    expect(got.preview_id).toBe(p.id);
    // preview_id null clears it.
    await svc.fetch(`/api/assets/${a.id}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"preview_id":null}',
    });
    expect((await json(await svc.fetch(`/api/assets/${a.id}`))).preview_id).toBeNull();
  });

  test('PUT rejects an empty body, bad types and unknown previews', async () => {
    const { body: a } = await upload(unique('putbad'));
    const put = (body: string, ct = 'application/json') =>
      svc.fetch(`/api/assets/${a.id}`, { method: 'PUT', headers: { 'content-type': ct }, body });
    const cases: [string, number, string][] = [
      ['{}', 400, 'INVALID_BODY'],
      ['{"tags":"a"}', 400, 'INVALID_BODY'],
      ['{"tags":[1]}', 400, 'INVALID_BODY'],
      ['{"user_metadata":[1]}', 400, 'INVALID_BODY'],
      ['{"user_metadata":"x"}', 400, 'INVALID_BODY'],
      ['{"name":""}', 400, 'INVALID_BODY'],
      ['{"name":5}', 400, 'INVALID_BODY'],
      [`{"name":"${'n'.repeat(513)}"}`, 400, 'INVALID_BODY'],
      [JSON.stringify({ tags: Array.from({ length: 65 }, (_, i) => `t${i}`) }), 400, 'INVALID_BODY'],
      [JSON.stringify({ tags: ['t'.repeat(129)] }), 400, 'INVALID_BODY'],
      [JSON.stringify({ user_metadata: { big: 'x'.repeat(300 * 1024) } }), 413, 'PAYLOAD_TOO_LARGE'],
      ['{"preview_id":"nope"}', 400, 'INVALID_BODY'],
      [`{"preview_id":"${crypto.randomUUID()}"}`, 400, 'INVALID_PREVIEW_ID'],
      ['{"name": "x",', 400, 'INVALID_JSON'],
      ['[1,2]', 400, 'INVALID_BODY'],
      ['"text"', 400, 'INVALID_BODY'],
      ['null', 400, 'INVALID_BODY'],
    ];
    for (const [body, status, code] of cases) {
      const res = await put(body);
      const b = await json(res);
      expect({ body: body.slice(0, 40), status: res.status, code: b.code }).toEqual({
        body: body.slice(0, 40),
        status,
        code,
      });
      expect(typeof b.message).toBe('string');
    }
    const wrongType = await put('name=x', 'application/x-www-form-urlencoded');
    expect(wrongType.status).toBe(415);
    expect((await json(wrongType)).code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  test('DELETE answers 204, then 404; immutable assets answer 409 until cleared by an admin', async () => {
    const { body: a } = await upload(unique('del'));
    await svc.container.assets.setImmutable(
      { ownerId: 'admin', scopes: ['read', 'write', 'admin'], keyId: 't' },
      a.id,
      true,
    );
    const blocked = await svc.fetch(`/api/assets/${a.id}`, { method: 'DELETE' });
    expect(blocked.status).toBe(409);
    expect((await json(blocked)).code).toBe('ASSET_IMMUTABLE');
    const put = await svc.fetch(`/api/assets/${a.id}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"name":"n"}',
    });
    expect(put.status).toBe(409);
    expect((await json(await svc.fetch(`/api/assets/${a.id}`))).is_immutable).toBe(true);
    await expect(
      svc.container.assets.setImmutable({ ownerId: 'alice', scopes: ['read', 'write'], keyId: 't' }, a.id, false),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await svc.container.assets.setImmutable(
      { ownerId: 'admin', scopes: ['read', 'write', 'admin'], keyId: 't' },
      a.id,
      false,
    );
    expect((await svc.fetch(`/api/assets/${a.id}`, { method: 'DELETE' })).status).toBe(204);
    const gone = await svc.fetch(`/api/assets/${a.id}`);
    expect(gone.status).toBe(404);
    expect((await json(gone)).code).toBe('ASSET_NOT_FOUND');
    expect((await svc.fetch(`/api/assets/${a.id}`, { method: 'DELETE' })).status).toBe(404);
  });

  test('non-UUID ids answer 400 INVALID_ID on every id route', async () => {
    for (const [method, path] of [
      ['GET', '/api/assets/not-a-uuid'],
      ['PUT', '/api/assets/123'],
      ['DELETE', '/api/assets/xyz'],
      ['GET', '/api/assets/zzz/content'],
    ] as const) {
      const res = await svc.fetch(path, {
        method,
        headers: { 'content-type': 'application/json' },
        body: method === 'PUT' ? '{"name":"a"}' : undefined,
      });
      expect([path, res.status, (await json(res)).code]).toEqual([path, 400, 'INVALID_ID']);
    }
  });
});

describe('owner isolation', () => {
  test("another owner's asset is indistinguishable from a missing one", async () => {
    const { body: a } = await upload(unique('iso'));
    for (const [method, path] of [
      ['GET', `/api/assets/${a.id}`],
      ['GET', `/api/assets/${a.id}/content`],
      ['DELETE', `/api/assets/${a.id}`],
    ] as const) {
      const res = await svc.fetch(path, { method, key: KEYS.bob });
      expect([path, res.status, (await json(res)).code]).toEqual([path, 404, 'ASSET_NOT_FOUND']);
    }
    const put = await svc.fetch(`/api/assets/${a.id}`, {
      method: 'PUT',
      key: KEYS.bob,
      headers: { 'content-type': 'application/json' },
      body: '{"name":"x"}',
    });
    expect(put.status).toBe(404);
    const list = await json(await svc.fetch('/api/assets?limit=500', { key: KEYS.bob }));
    expect(list.assets.map((x: { id: string }) => x.id)).not.toContain(a.id);
    // Content itself is shared: bob may reference it by hash, getting his own asset.
    const fromHash = await svc.fetch('/api/assets/from-hash', {
      method: 'POST',
      key: KEYS.bob,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ hash: a.asset_hash, tags: ['shared'] }),
    });
    expect(fromHash.status).toBe(201);
    const b = await json(fromHash);
    expect(b.id).not.toBe(a.id);
    expect(b.asset_hash).toBe(a.asset_hash);
  });
});

describe('authentication', () => {
  test('missing or unknown keys answer 401 on every /api route; Bearer works', async () => {
    for (const key of [null, 'wrong-key-123']) {
      for (const [method, path] of [
        ['GET', '/api/assets'],
        ['POST', '/api/assets'],
        ['GET', `/api/assets/${crypto.randomUUID()}`],
        ['GET', '/api/tags'],
        ['POST', '/api/assets/from-hash'],
        ['GET', '/api/nothing-here'],
      ] as const) {
        const res = await svc.fetch(path, { method, key });
        expect([path, res.status]).toEqual([path, 401]);
        expect(await json(res)).toMatchObject({ code: 'UNAUTHORIZED' });
      }
    }
    expect(
      (await svc.fetch(`/api/assets/hash/${blake3Of(Buffer.from('x'))}`, { method: 'HEAD', key: null })).status,
    ).toBe(401);
    const bearer = await svc.fetch('/api/tags', { key: null, headers: { authorization: `Bearer ${KEYS.alice}` } });
    expect(bearer.status).toBe(200);
    for (const open of ['/healthz', '/readyz', '/openapi.yaml'])
      expect((await svc.fetch(open, { key: null })).status).toBe(200);
  });
});

describe('from-hash and hash checks', () => {
  test('201 new, 200 existing, 404 unknown, 400 malformed', async () => {
    const bytes = Buffer.from(unique('fh'));
    await upload(bytes, {}, 'original-name.txt', KEYS.bob);
    const post = (body: unknown, key: string = KEYS.alice) =>
      svc.fetch('/api/assets/from-hash', {
        method: 'POST',
        key,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const created = await post({ hash: sha256Of(bytes), tags: ['Models'], user_metadata: { a: 1 } });
    expect(created.status).toBe(201);
    const c = await json(created);
    // Never bob's upload file name: the first 16 hex of the BLAKE3.
    expect(c).toMatchObject({
      created_new: true,
      name: blake3Of(bytes).slice(7, 23),
      mime_type: 'text/plain',
      tags: ['Models'],
      user_metadata: { a: 1 },
    });
    const again = await post({ hash: blake3Of(bytes), tags: ['other'], name: 'x' });
    expect(again.status).toBe(200);
    expect(await json(again)).toMatchObject({ id: c.id, created_new: false });
    const unknown = await post({ hash: blake3Of(Buffer.from(unique())), tags: ['a'] });
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).code).toBe('CONTENT_NOT_FOUND');
    for (const body of [
      { hash: 'md5:abc', tags: ['a'] },
      { hash: blake3Of(bytes).toUpperCase(), tags: ['a'] },
      { hash: blake3Of(bytes), tags: [] },
      { hash: blake3Of(bytes), tags: ['  ', ''] },
      { hash: blake3Of(bytes) },
      { hash: blake3Of(bytes), tags: 'a' },
      { tags: ['a'] },
      { hash: blake3Of(bytes), tags: ['a'], user_metadata: [] },
    ]) {
      const res = await post(body);
      expect([JSON.stringify(body).slice(0, 30), res.status, (await json(res)).code]).toEqual([
        JSON.stringify(body).slice(0, 30),
        400,
        'INVALID_BODY',
      ]);
    }
  });

  test('HEAD /api/assets/hash/{hash}: 200, 404, 400', async () => {
    const bytes = Buffer.from(unique('head'));
    await upload(bytes);
    const head = (h: string) => svc.fetch(`/api/assets/hash/${h}`, { method: 'HEAD' });
    expect((await head(blake3Of(bytes))).status).toBe(200);
    expect((await head(sha256Of(bytes))).status).toBe(200);
    expect((await head(blake3Of(Buffer.from(unique())))).status).toBe(404);
    for (const bad of ['blake3:xyz', 'md5:' + 'a'.repeat(64), 'blake3:' + 'A'.repeat(64), 'nothing']) {
      const res = await head(bad);
      expect([bad, res.status]).toEqual([bad, 400]);
    }
    const get = await svc.fetch(`/api/assets/hash/blake3:bad`);
    expect((await json(get)).code).toBe('INVALID_HASH');
  });
});

describe('content', () => {
  test('bytes with ETag, conditional GET, ranges, HEAD and safe disposition', async () => {
    const bytes = crypto.randomBytes(10_000);
    const { body: a } = await upload(bytes, { name: 'weird "name"\r\n€.bin' });
    const url = `/api/assets/${a.id}/content`;
    const full = await svc.fetch(url);
    expect(full.status).toBe(200);
    expect(Buffer.from(await full.arrayBuffer()).equals(bytes)).toBe(true);
    expect(full.headers.get('etag')).toBe(`"${a.asset_hash}"`);
    expect(full.headers.get('content-length')).toBe('10000');
    expect(full.headers.get('accept-ranges')).toBe('bytes');
    const cd = full.headers.get('content-disposition')!;
    // attachment by default; inline on request.
    expect(cd).toMatch(
      /^attachment; filename="weird _name____.bin"; filename\*=UTF-8''weird%20%22name%22%0D%0A%E2%82%AC.bin$/,
    );
    expect((await svc.fetch(url + '?disposition=inline')).headers.get('content-disposition')).toMatch(/^inline; /);
    expect((await svc.fetch(url + '?disposition=bogus')).headers.get('content-disposition')).toMatch(/^attachment; /);
    expect((await svc.fetch(url, { headers: { 'if-none-match': `"${a.asset_hash}"` } })).status).toBe(304);
    const part = await svc.fetch(url, { headers: { range: 'bytes=100-199' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 100-199/10000');
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(100, 200))).toBe(true);
    const suffix = await svc.fetch(url, { headers: { range: 'bytes=-10' } });
    expect(Buffer.from(await suffix.arrayBuffer()).equals(bytes.subarray(9990))).toBe(true);
    const open = await svc.fetch(url, { headers: { range: 'bytes=9995-' } });
    expect((await open.arrayBuffer()).byteLength).toBe(5);
    const bad = await svc.fetch(url, { headers: { range: 'bytes=20000-' } });
    expect(bad.status).toBe(416);
    expect(bad.headers.get('content-range')).toBe('bytes */10000');
    // An error like every other: JSON {code, message}, not the asset's type or an attachment.
    expect(bad.headers.get('content-type')).toMatch(/^application\/json/);
    expect(bad.headers.get('content-disposition')).toBeNull();
    expect((await json(bad)).code).toBe('RANGE_NOT_SATISFIABLE');
    const headBad = await svc.fetch(url, { method: 'HEAD', headers: { range: 'bytes=20000-' } });
    expect([headBad.status, headBad.headers.get('content-range')]).toEqual([416, 'bytes */10000']);
    const staleIfRange = await svc.fetch(url, { headers: { range: 'bytes=0-9', 'if-range': '"other"' } });
    expect(staleIfRange.status).toBe(200);
    const head = await svc.fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('10000');
  });

  test('active content types are attachments with a sandbox policy', async () => {
    const { body: a } = await upload('<!DOCTYPE html><script>alert(1)</script>', {}, 'x.html');
    expect(a.mime_type).toBe('text/html');
    const res = await svc.fetch(`/api/assets/${a.id}/content`);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment;/);
    expect(res.headers.get('content-security-policy')).toContain('sandbox');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    // Sent as bytes (as ComfyUI's asset API does); the asset keeps its real type.
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    const { body: svg } = await upload('<svg xmlns="http://www.w3.org/2000/svg"></svg>', {}, 'a.svg');
    expect(svg.mime_type).toBe('image/svg+xml');
    expect((await svc.fetch(`/api/assets/${svg.id}/content`)).headers.get('content-disposition')).toMatch(
      /^attachment;/,
    );
    // Even when inline is asked for.
    const inline = await svc.fetch(`/api/assets/${svg.id}/content?disposition=inline`);
    expect(inline.headers.get('content-disposition')).toMatch(/^attachment;/);
    expect(inline.headers.get('content-type')).toBe('application/octet-stream');
    expect((await svc.fetch(`/api/assets/${svg.id}/content`, { method: 'HEAD' })).headers.get('content-type')).toBe(
      'application/octet-stream',
    );
  });
});

describe('listing and tags', () => {
  test('filters, sorting, pagination', async () => {
    const tag = `list-${crypto.randomBytes(4).toString('hex')}`;
    const made = [];
    for (let i = 0; i < 5; i++) {
      const { body } = await upload(
        `${tag}-${i}-${'z'.repeat(i)}`,
        {
          tags: [tag, i % 2 ? 'odd' : 'even'],
          user_metadata: JSON.stringify({ i, group: i < 3 ? 'a' : 'b', nested: { v: i } }),
          name: `${tag}-n${i}`,
        },
        'f.txt',
        KEYS.bob,
      );
      made.push(body);
    }
    const list = async (qs: string) => {
      const res = await svc.fetch(`/api/assets?${qs}`, { key: KEYS.bob });
      expect(res.status).toBe(200);
      return json(res);
    };
    const all = await list(`include_tags=${tag}`);
    expect(all.total).toBe(5);
    expect(all.has_more).toBe(false);
    expect(all.assets.map((a: { id: string }) => a.id)).toEqual(made.map((a) => a.id).reverse());
    expect(all.assets[0]).not.toHaveProperty('created_new');
    const odd = await list(`include_tags=${tag},odd`);
    expect(odd.total).toBe(2);
    const repeated = await list(`include_tags=${tag}&include_tags=odd`);
    expect(repeated.total).toBe(2);
    // Tags match exactly (contract 2): `ODD` is another tag.
    expect((await list(`include_tags=${tag}&include_tags=ODD`)).total).toBe(0);
    expect((await list(`include_tags=${tag}&exclude_tags=odd`)).total).toBe(3);
    expect((await list(`include_tags=${tag}&metadata_filter=${encodeURIComponent('{"group":"a"}')}`)).total).toBe(3);
    expect((await list(`include_tags=${tag}&metadata_filter=${encodeURIComponent('{"nested":{"v":4}}')}`)).total).toBe(
      1,
    );
    expect((await list(`include_tags=${tag}&name_contains=${tag.toUpperCase()}-N3`)).total).toBe(1);
    expect((await list(`name_contains=%25`)).total).toBe(0);
    const page = await list(`include_tags=${tag}&limit=2&offset=2&sort=name&order=asc`);
    expect(page.assets.map((a: { name: string }) => a.name)).toEqual([`${tag}-n2`, `${tag}-n3`]);
    expect(page).toMatchObject({ total: 5, has_more: true });
    const bySize = await list(`include_tags=${tag}&sort=size&order=desc&limit=1`);
    expect(bySize.assets[0].id).toBe(made[4].id);
    for (const qs of [
      'limit=0',
      'limit=501',
      'limit=x',
      'offset=-1',
      'sort=bogus',
      'order=up',
      'metadata_filter=nope',
      'metadata_filter=[1]',
      'limit=1&limit=2',
    ]) {
      const res = await svc.fetch(`/api/assets?${qs}`);
      expect([qs, res.status, (await json(res)).code]).toEqual([qs, 400, 'INVALID_QUERY']);
    }
  });

  test('GET /api/tags counts my tags', async () => {
    const key = KEYS.admin;
    const p = `tg${crypto.randomBytes(3).toString('hex')}`;
    await upload(unique(), { tags: [`${p}-a`, `${p}-b`] }, 'f', key);
    await upload(unique(), { tags: [`${p}-a`] }, 'f', key);
    const res = await svc.fetch(`/api/tags?prefix=${p}`, { key });
    expect(await json(res)).toEqual({
      tags: [
        { name: `${p}-a`, count: 2 },
        { name: `${p}-b`, count: 1 },
      ],
      total: 2,
      has_more: false,
    });
    // Read as tags are stored: leading blanks dropped, case kept (another case is another prefix).
    expect(await json(await svc.fetch(`/api/tags?prefix=${encodeURIComponent(`  ${p}-b`)}`, { key }))).toEqual({
      tags: [{ name: `${p}-b`, count: 1 }],
      total: 1,
      has_more: false,
    });
    expect((await json(await svc.fetch(`/api/tags?prefix=${p.toUpperCase()}`, { key }))).total).toBe(0);
    const byName = await json(await svc.fetch(`/api/tags?prefix=${p}&order=name_asc&limit=1`, { key }));
    expect(byName).toEqual({ tags: [{ name: `${p}-a`, count: 2 }], total: 2, has_more: true });
    const none = await json(await svc.fetch(`/api/tags?prefix=${p}`, { key: KEYS.bob }));
    expect(none.total).toBe(0);
    expect((await svc.fetch('/api/tags?limit=1001')).status).toBe(400);
    expect((await svc.fetch('/api/tags?order=weird')).status).toBe(400);
  });
});

test('unknown routes answer a JSON 404', async () => {
  const res = await svc.fetch('/api/nowhere');
  expect(res.status).toBe(404);
  expect(await json(res)).toMatchObject({ code: 'NOT_FOUND' });
});
