import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import type { PartialBlob } from '../../src/infra/blob-store/blob-store';
import { blake3Of, json, KEYS, startTestService, waitFor, type TestService } from '../helpers/harness';
import { handPatch, startCuttingProxy, TUS, tusMetadata, tusUpload } from '../helpers/tus';
import { StoreUnavailableError } from '../../src/infra/errors';

/** Resumable uploads on the disk store: tus-js-client end to end, and the protocol edges by hand. */
const KiB = 1024;
const MiB = 1024 * KiB;
let svc: TestService;
beforeAll(async () => {
  // Every answer is checked against openapi.yaml (an error without the JSON {code, message} body fails).
  svc = await startTestService({ MAX_UPLOAD_BYTES: String(64 * MiB) }, { validateResponses: true });
});
afterAll(async () => {
  await svc?.stop();
});

const random = (n: number) => crypto.randomBytes(n);
const b64 = (s: string) => Buffer.from(s).toString('base64');
const partFile = (id: string) => path.join(svc.dataDir, 'blobs', '.partial', `upload-${id}`);
const idOf = (url: string) => url.split('/').pop()!;

async function create(
  length: number,
  meta: Record<string, string> = {},
  key: string = KEYS.alice,
  headers: Record<string, string> = {},
  on: TestService = svc,
) {
  return on.fetch('/api/uploads', {
    method: 'POST',
    key,
    headers: {
      ...TUS,
      'Upload-Length': String(length),
      ...(Object.keys(meta).length ? { 'Upload-Metadata': tusMetadata(meta) } : {}),
      ...headers,
    },
  });
}
async function patch(id: string, offset: number, body: Buffer, key: string = KEYS.alice) {
  return svc.fetch(`/api/uploads/${id}`, {
    method: 'PATCH',
    key,
    headers: { ...TUS, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' },
    body,
  });
}
/** creation-with-upload: one POST creates the upload and carries all of `data`. */
const createWithData = (data: Buffer, meta: Record<string, string>) =>
  svc.fetch('/api/uploads', {
    method: 'POST',
    headers: {
      ...TUS,
      'Upload-Length': String(data.length),
      'Content-Type': 'application/offset+octet-stream',
      'Upload-Metadata': tusMetadata(meta),
    },
    body: data,
  });
const head = (id: string, key: string = KEYS.alice) =>
  svc.fetch(`/api/uploads/${id}`, { method: 'HEAD', key, headers: TUS });

/** A service of the enclosing describe block's own, started with `env`: its tests get it by calling the result. */
function serviceOfBlock(env: Record<string, string>): () => TestService {
  let own: TestService | undefined;
  beforeAll(async () => {
    own = await startTestService(env);
  });
  afterAll(async () => {
    await own?.stop();
  });
  return () => own!;
}

/** The next part the store opens has `change` applied (a failing or silent step of it). */
function changeNextPart(change: (partial: PartialBlob) => Partial<PartialBlob>): void {
  const store = svc.container.blobStore;
  const real = store.openPartial.bind(store);
  jest.spyOn(store, 'openPartial').mockImplementationOnce(async (name) => {
    const partial = await real(name);
    return { ...partial, ...change(partial) };
  });
}

async function assetOf(url: string) {
  const res = await svc.fetch(url.replace(svc.url, ''), { method: 'HEAD', headers: TUS });
  expect(res.status).toBe(200);
  const assetId = res.headers.get('asset-id')!;
  const asset = await json(await svc.fetch(`/api/assets/${assetId}`));
  return { asset, created: res.headers.get('asset-created') };
}

test('tus-js-client uploads in chunks; the asset carries the metadata and the hash', async () => {
  const data = random(3 * MiB + 123);
  const { url } = await tusUpload(svc.url, data, {
    chunkSize: MiB,
    metadata: {
      filename: 'model.safetensors',
      tags: '["models","Loras"]',
      user_metadata: '{"a":1}',
      filetype: 'application/octet-stream',
    },
  });
  const { asset, created } = await assetOf(url);
  expect(created).toBe('true');
  expect(asset.asset_hash).toBe(blake3Of(data));
  expect(asset.name).toBe('model.safetensors');
  // Case kept (contract 2).
  expect(asset.tags).toEqual(['models', 'Loras']);
  expect(asset.user_metadata).toEqual({ a: 1 });
  expect(asset.size).toBe(data.length);
  expect(fs.existsSync(partFile(idOf(url)))).toBe(false);
});

test('the final PATCH answers Asset-Id and Asset-Created; the same bytes again dedupe', async () => {
  const data = random(100 * KiB);
  const a = await create(data.length);
  expect(a.status).toBe(201);
  expect(a.headers.get('upload-expires')).toBeTruthy();
  const id = idOf(a.headers.get('location')!);
  const p1 = await patch(id, 0, data.subarray(0, 50 * KiB));
  expect(p1.status).toBe(204);
  expect(p1.headers.get('upload-offset')).toBe(String(50 * KiB));
  expect(p1.headers.get('asset-id')).toBeNull();
  const p2 = await patch(id, 50 * KiB, data.subarray(50 * KiB));
  expect(p2.status).toBe(204);
  expect(p2.headers.get('asset-created')).toBe('true');
  // CORS headers (Asset-Id exposed among them) are the pipeline's, for CORS_ORIGINS only (cors.test.ts), not tus's.
  expect(p2.headers.get('access-control-expose-headers')).toBeNull();
  const assetId = p2.headers.get('asset-id');
  const again = await tusUpload(svc.url, data);
  const second = await assetOf(again.url);
  expect(second.created).toBe('false');
  expect(second.asset.id).toBe(assetId);
});

test("tus-js-client's overridePatchMethod (POST with X-HTTP-Method-Override: PATCH, for proxies that drop PATCH) uploads and resumes", async () => {
  const data = random(2 * MiB + 7);
  const { url } = await tusUpload(svc.url, data, {
    chunkSize: MiB,
    overridePatchMethod: true,
    metadata: { name: 'override.bin' },
  });
  const { asset } = await assetOf(url);
  expect(asset.asset_hash).toBe(blake3Of(data));
  // Termination through the override too; a POST to an upload without (or with another) override is 405.
  const c = await create(10);
  const id = idOf(c.headers.get('location')!);
  expect((await svc.fetch(`/api/uploads/${id}`, { method: 'POST', headers: TUS })).status).toBe(405);
  expect(
    (await svc.fetch(`/api/uploads/${id}`, { method: 'POST', headers: { ...TUS, 'X-HTTP-Method-Override': 'GET' } }))
      .status,
  ).toBe(405);
  expect(
    (await svc.fetch(`/api/uploads/${id}`, { method: 'POST', headers: { ...TUS, 'X-HTTP-Method-Override': 'DELETE' } }))
      .status,
  ).toBe(204);
  expect((await head(id)).status).toBe(404);
});

test('creation-with-upload: one POST carries the whole file', async () => {
  const data = random(10 * KiB);
  const res = await createWithData(data, { name: 'one-shot.bin' });
  expect(res.status).toBe(201);
  expect(res.headers.get('upload-offset')).toBe(String(data.length));
  expect(res.headers.get('asset-created')).toBe('true');
  const asset = await json(await svc.fetch(`/api/assets/${res.headers.get('asset-id')}`));
  expect(asset.name).toBe('one-shot.bin');
  expect(asset.asset_hash).toBe(blake3Of(data));
});

test('a zero-byte upload makes an asset at creation', async () => {
  const res = await create(0, { filename: 'empty.txt' });
  expect(res.status).toBe(201);
  const asset = await json(await svc.fetch(`/api/assets/${res.headers.get('asset-id')}`));
  expect(asset.size).toBe(0);
});

test('a connection cut mid-PATCH: tus-js-client resumes from the offset HEAD reports', async () => {
  const data = random(4 * MiB);
  const proxy = await startCuttingProxy(svc.url, { afterBytes: 1.5 * MiB });
  try {
    const { url } = await tusUpload(proxy.url, data, { retryDelays: [0, 100, 200] });
    expect(proxy.cutsDone()).toBe(1);
    const { asset } = await assetOf(url.replace(proxy.url, svc.url));
    expect(asset.asset_hash).toBe(blake3Of(data));
  } finally {
    await proxy.stop();
  }
});

test('aborted, then resumed from the stored URL', async () => {
  const data = random(2 * MiB);
  let url = '';
  const proxy = await startCuttingProxy(svc.url, { afterBytes: 700 * KiB });
  try {
    await expect(tusUpload(proxy.url, data, { retryDelays: [], onUrl: (u) => (url = u) })).rejects.toThrow();
  } finally {
    await proxy.stop();
  }
  const id = idOf(url);
  // The server may still be storing the bytes of the cut PATCH when the client gives up: watch HEAD until it has.
  const offset = await waitFor(async () => {
    const n = Number((await head(id)).headers.get('upload-offset'));
    return n > 0 ? n : undefined;
  });
  expect(offset).toBeLessThan(data.length);
  expect(fs.statSync(partFile(id)).size).toBe(offset);
  await tusUpload(svc.url, data, { uploadUrl: `${svc.url}/api/uploads/${id}` });
  const { asset } = await assetOf(`${svc.url}/api/uploads/${id}`);
  expect(asset.asset_hash).toBe(blake3Of(data));
});

test('bytes past the acknowledged offset (a crash before the offset update) are cut back', async () => {
  const data = random(64 * KiB);
  const id = idOf((await create(data.length)).headers.get('location')!);
  expect((await patch(id, 0, data.subarray(0, 16 * KiB))).status).toBe(204);
  fs.appendFileSync(partFile(id), random(5000));
  expect((await head(id)).headers.get('upload-offset')).toBe(String(16 * KiB));
  const done = await patch(id, 16 * KiB, data.subarray(16 * KiB));
  expect(done.status).toBe(204);
  const asset = await json(await svc.fetch(`/api/assets/${done.headers.get('asset-id')}`));
  expect(asset.asset_hash).toBe(blake3Of(data));
});

test('the hash state is rebuilt from the stored part when this process has none', async () => {
  const data = random(256 * KiB);
  const id = idOf((await create(data.length)).headers.get('location')!);
  expect((await patch(id, 0, data.subarray(0, 100 * KiB))).status).toBe(204);
  // As after a restart: the in-memory states are gone.
  (svc.container.uploads as unknown as { states: Map<string, unknown> }).states.clear();
  const done = await patch(id, 100 * KiB, data.subarray(100 * KiB));
  const asset = await json(await svc.fetch(`/api/assets/${done.headers.get('asset-id')}`));
  expect(asset.asset_hash).toBe(blake3Of(data));
});

describe('refused at creation, before any byte', () => {
  test.each([
    ['tags not a list', { tags: '{"a":1}' }],
    ['a tag too long', { tags: JSON.stringify(['x'.repeat(200)]) }],
    ['user_metadata not an object', { user_metadata: '[1]' }],
    ['id not a UUID', { id: 'nope' }],
    ['a bad hash', { hash: 'md5:abc' }],
    ['a bad mime_type', { mime_type: 'not a type' }],
    // Stored with the upload as given: the text rule holds for every key's value, not only the fields we read.
    ['NUL in the file name', { filename: 'a\u0000b.bin' }],
    ['NUL in a key we do not read', { filetype: 'text/plain\u0000' }],
  ])('%s: 400 INVALID_BODY', async (_label, meta) => {
    const res = await create(10, meta);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect((await json(res)).code).toBe('INVALID_BODY');
  });

  test.each([
    ['a value that is not base64', 'filename ab$c'],
    ['base64 without its padding', 'filename eA'],
    ['an empty key', `name ${b64('a')}, ${b64('b')}`],
    ['a key twice', `name ${b64('a')},name ${b64('b')}`],
    ['a key that is not ASCII', `nämé ${b64('a')}`],
    ['two spaces between key and value', `name  ${b64('a')}`],
    ['a trailing comma', `name ${b64('a')},`],
  ])('Upload-Metadata with %s: 400 INVALID_BODY', async (_label, header) => {
    const res = await svc.fetch('/api/uploads', {
      method: 'POST',
      headers: { ...TUS, 'Upload-Length': '10', 'Upload-Metadata': header },
    });
    expect([res.status, (await json(res)).code, res.headers.get('location')]).toEqual([400, 'INVALID_BODY', null]);
  });

  test('Upload-Metadata keys without a value are taken (and echoed by HEAD)', async () => {
    const res = await svc.fetch('/api/uploads', {
      method: 'POST',
      headers: { ...TUS, 'Upload-Length': '10', 'Upload-Metadata': `flag,name ${b64('a.bin')}` },
    });
    expect(res.status).toBe(201);
    const h = await head(idOf(res.headers.get('location')!));
    expect(h.headers.get('upload-metadata')!.split(',').sort()).toEqual(['flag', `name ${b64('a.bin')}`]);
  });

  test('Upload-Length or Upload-Offset that is not a plain non-negative integer below 2^53: 400, never an upload', async () => {
    for (const v of [
      '-1',
      '+5',
      '1e3',
      '0x10',
      '5.0',
      '05',
      '9007199254740993',
      '99999999999999999999',
      'abc',
      '10, 10',
    ]) {
      const res = await svc.fetch('/api/uploads', { method: 'POST', headers: { ...TUS, 'Upload-Length': v } });
      expect({ v, status: res.status, code: (await json(res)).code }).toEqual({
        v,
        status: 400,
        code: 'INVALID_REQUEST',
      });
    }
    const id = idOf((await create(10)).headers.get('location')!);
    for (const v of ['-1', '+0', '1e0', '00', '9007199254740993', 'x']) {
      const res = await svc.fetch(`/api/uploads/${id}`, {
        method: 'PATCH',
        headers: { ...TUS, 'Upload-Offset': v, 'Content-Type': 'application/offset+octet-stream' },
        body: random(2),
      });
      expect({ v, status: res.status, code: (await json(res)).code }).toEqual({
        v,
        status: 400,
        code: 'INVALID_REQUEST',
      });
    }
    expect((await head(id)).headers.get('upload-offset')).toBe('0');
  });

  test('Upload-Length over MAX_UPLOAD_BYTES: 413', async () => {
    const res = await create(64 * MiB + 1);
    expect(res.status).toBe(413);
    expect((await json(res)).code).toBe('PAYLOAD_TOO_LARGE');
  });

  test('Upload-Defer-Length: 501 (the extension is not offered, as tusd answers it); malformed, or beside Upload-Length: 400', async () => {
    const res = await svc.fetch('/api/uploads', { method: 'POST', headers: { ...TUS, 'Upload-Defer-Length': '1' } });
    expect([res.status, (await json(res)).code]).toEqual([501, 'NOT_IMPLEMENTED']);
    for (const headers of [{ 'Upload-Defer-Length': '2' }, { 'Upload-Defer-Length': '1', 'Upload-Length': '10' }]) {
      const bad = await svc.fetch('/api/uploads', { method: 'POST', headers: { ...TUS, ...headers } });
      expect([bad.status, (await json(bad)).code]).toEqual([400, 'INVALID_REQUEST']);
    }
    // Upload-Concat (parallel uploads) is not offered either.
    const concat = await svc.fetch('/api/uploads', {
      method: 'POST',
      headers: { ...TUS, 'Upload-Length': '10', 'Upload-Concat': 'partial' },
    });
    expect([concat.status, (await json(concat)).code]).toEqual([501, 'NOT_IMPLEMENTED']);
  });

  test('no key: 401, with Tus-Resumable as every tus answer', async () => {
    const res = await create(10, {}, null as unknown as string);
    expect([res.status, res.headers.get('tus-resumable')]).toEqual([401, '1.0.0']);
    const patched = await svc.fetch(`/api/uploads/${crypto.randomUUID()}`, {
      method: 'PATCH',
      key: null,
      headers: TUS,
    });
    expect([patched.status, patched.headers.get('tus-resumable')]).toEqual([401, '1.0.0']);
  });
});

test('a hash field that the bytes do not match: HASH_MISMATCH on the last PATCH, nothing kept', async () => {
  const data = random(20 * KiB);
  const id = idOf((await create(data.length, { hash: blake3Of(random(10)) })).headers.get('location')!);
  const res = await patch(id, 0, data);
  expect(res.status).toBe(400);
  expect((await json(res)).code).toBe('HASH_MISMATCH');
  expect((await head(id)).status).toBe(404);
  expect(fs.existsSync(partFile(id))).toBe(false);
});

test('a matching hash and an id: idempotent by id', async () => {
  const data = random(20 * KiB);
  const assetId = crypto.randomUUID();
  const first = await create(data.length, { hash: blake3Of(data), id: assetId }, KEYS.alice, {
    'Content-Type': 'application/offset+octet-stream',
  });
  expect(first.status).toBe(201);
  const res = await createWithData(data, { hash: blake3Of(data), id: assetId });
  expect(res.headers.get('asset-id')).toBe(assetId);
  const again = await createWithData(data, { id: assetId });
  expect(again.headers.get('asset-id')).toBe(assetId);
  expect(again.headers.get('asset-created')).toBe('false');
});

test('DELETE terminates: the part goes, HEAD is 404', async () => {
  const id = idOf((await create(1000)).headers.get('location')!);
  await patch(id, 0, random(300));
  expect(fs.existsSync(partFile(id))).toBe(true);
  const res = await svc.fetch(`/api/uploads/${id}`, { method: 'DELETE', headers: TUS });
  expect(res.status).toBe(204);
  expect((await head(id)).status).toBe(404);
  expect(fs.existsSync(partFile(id))).toBe(false);
});

test("another owner's upload is 404 for HEAD, PATCH and DELETE", async () => {
  const id = idOf((await create(1000)).headers.get('location')!);
  expect((await head(id, KEYS.bob)).status).toBe(404);
  const p = await patch(id, 0, random(10), KEYS.bob);
  expect(p.status).toBe(404);
  expect((await json(p)).code).toBe('NOT_FOUND');
  expect((await svc.fetch(`/api/uploads/${id}`, { method: 'DELETE', key: KEYS.bob, headers: TUS })).status).toBe(404);
  expect((await head(id)).status).toBe(200);
  expect((await head(crypto.randomUUID())).status).toBe(404);
});

test('an unexpected failure is 500 INTERNAL with the request id, as on every route', async () => {
  const id = idOf((await create(1000)).headers.get('location')!);
  jest.spyOn(svc.container.uploads, 'append').mockRejectedValueOnce(new Error('something nobody expected'));
  const res = await patch(id, 0, random(100));
  expect(res.status).toBe(500);
  const body = await json(res);
  expect([body.code, body.message.includes('nobody')]).toEqual(['INTERNAL', false]);
  expect(body.details.request_id).toBe(res.headers.get('x-request-id'));
});

test('an upload whose stored bytes were lost: its PATCH is 404 and it goes (HEAD 404), so the client starts again', async () => {
  const id = idOf((await create(1000)).headers.get('location')!);
  expect((await patch(id, 0, random(100))).status).toBe(204);
  fs.rmSync(partFile(id));
  const res = await patch(id, 100, random(100));
  expect([res.status, (await json(res)).code]).toEqual([404, 'NOT_FOUND']);
  expect((await head(id)).status).toBe(404);
  expect(fs.existsSync(partFile(id))).toBe(false);
});

describe('removal: the record goes before the part', () => {
  const repoOf = () => (svc.container.uploads as unknown as { repo: { delete(id: string): Promise<void> } }).repo;

  test('a DELETE cut before the record goes (the database away) keeps the whole upload, which resumes', async () => {
    const data = random(1000);
    const id = idOf((await create(data.length)).headers.get('location')!);
    expect((await patch(id, 0, data.subarray(0, 300))).status).toBe(204);
    jest.spyOn(repoOf(), 'delete').mockRejectedValueOnce(new StoreUnavailableError('database'));
    const del = await svc.fetch(`/api/uploads/${id}`, { method: 'DELETE', headers: TUS });
    expect(del.status).toBe(503);
    // Before: the part was removed first, leaving a record whose offset named bytes that were gone (HEAD said 300,
    // and every PATCH failed).
    const h = await head(id);
    expect([h.status, h.headers.get('upload-offset')]).toEqual([200, '300']);
    expect(fs.statSync(partFile(id)).size).toBe(300);
    const last = await patch(id, 300, data.subarray(300));
    expect(last.status).toBe(204);
    const asset = await json(await svc.fetch(`/api/assets/${last.headers.get('asset-id')}`));
    expect(asset.asset_hash).toBe(blake3Of(data));
  });

  test('a DELETE whose part cannot be removed after the record went: 204, HEAD 404; the temporary sweeper takes the part', async () => {
    const id = idOf((await create(1000)).headers.get('location')!);
    expect((await patch(id, 0, random(300))).status).toBe(204);
    changeNextPart(() => ({
      discard: async () => {
        throw Object.assign(new Error('EIO: i/o error, unlink'), { code: 'EIO' });
      },
    }));
    expect((await svc.fetch(`/api/uploads/${id}`, { method: 'DELETE', headers: TUS })).status).toBe(204);
    expect((await head(id)).status).toBe(404);
    expect(fs.existsSync(partFile(id))).toBe(true);
    await svc.container.blobStore.sweepTemps(0);
    expect(fs.existsSync(partFile(id))).toBe(false);
  });

  test('a zero-byte upload whose part was never made (a crash after its record): its asset is made all the same', async () => {
    // What a crash right after the creation's row leaves: the row, complete at offset 0, no part and no asset.
    const id = crypto.randomUUID();
    await svc.container.uploads.create({ ownerId: 'alice', scopes: ['read', 'write'], keyId: 'env:alice' }, id, 0, {
      filename: 'empty.txt',
    });
    expect(fs.existsSync(partFile(id))).toBe(false);
    const res = await head(id);
    expect(res.status).toBe(200);
    const asset = await json(await svc.fetch(`/api/assets/${res.headers.get('asset-id')}`));
    expect([asset.size, asset.asset_hash]).toEqual([0, blake3Of(Buffer.alloc(0))]);
  });
});

test('a wrong Upload-Offset is 409 UPLOAD_OFFSET_MISMATCH, with Tus-Resumable', async () => {
  const id = idOf((await create(1000)).headers.get('location')!);
  const res = await patch(id, 5, random(10));
  expect([res.status, res.headers.get('tus-resumable')]).toEqual([409, '1.0.0']);
  expect((await json(res)).code).toBe('UPLOAD_OFFSET_MISMATCH');
});

describe('the protocol edges answer as tus 1.0 says, with the usual {code, message} body', () => {
  test('OPTIONS: 204 with Tus-Version, Tus-Extension and Tus-Max-Size, without a key or Tus-Resumable (tus discovery)', async () => {
    for (const p of ['/api/uploads', `/api/uploads/${crypto.randomUUID()}`]) {
      for (const key of [null, KEYS.alice]) {
        const res = await svc.fetch(p, { method: 'OPTIONS', key });
        expect(res.status).toBe(204);
        expect(res.headers.get('tus-version')).toBe('1.0.0');
        expect(res.headers.get('tus-extension')!.split(',').sort()).toEqual([
          'creation',
          'creation-with-upload',
          'expiration',
          'termination',
        ]);
        expect(res.headers.get('tus-max-size')).toBe(String(64 * MiB));
      }
    }
    // A key that is sent is checked all the same (the CLI learns of a wrong key there); anything else needs the key.
    const wrong = await svc.fetch('/api/uploads', { method: 'OPTIONS', key: 'not-a-key' });
    expect([wrong.status, (await json(wrong)).code]).toEqual([401, 'UNAUTHORIZED']);
    expect(
      (await svc.fetch('/api/uploads', { method: 'POST', key: null, headers: { ...TUS, 'Upload-Length': '1' } }))
        .status,
    ).toBe(401);
  });

  test('no cross-origin: neither a preflight nor an answer carries Access-Control-Allow-Origin', async () => {
    const origin = { Origin: 'https://elsewhere.example' };
    const preflight = await svc.fetch('/api/uploads', {
      method: 'OPTIONS',
      key: null,
      headers: {
        ...origin,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'tus-resumable,upload-length,x-api-key',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const created = await create(10, {}, KEYS.alice, origin);
    expect(created.status).toBe(201);
    expect(created.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('Tus-Resumable missing or not 1.0.0: 412 naming Tus-Version, before anything else', async () => {
    const id = idOf((await create(10)).headers.get('location')!);
    const tries: [string, string, Record<string, string>][] = [
      ['POST', '/api/uploads', { 'Upload-Length': '10' }],
      ['POST', '/api/uploads', { 'Tus-Resumable': '0.2.2', 'Upload-Length': '10' }],
      ['HEAD', `/api/uploads/${id}`, {}],
      ['PATCH', `/api/uploads/${id}`, { 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' }],
      ['DELETE', `/api/uploads/${id}`, { 'Tus-Resumable': '2.0.0' }],
    ];
    for (const [method, p, headers] of tries) {
      const res = await svc.fetch(p, { method, headers, body: method === 'PATCH' ? random(10) : undefined });
      expect({ method, status: res.status, version: res.headers.get('tus-version') }).toEqual({
        method,
        status: 412,
        version: '1.0.0',
      });
      if (method !== 'HEAD') expect((await json(res)).code).toBe('TUS_VERSION_UNSUPPORTED');
    }
    expect((await head(id)).headers.get('upload-offset')).toBe('0');
  });

  test('a PATCH of another Content-Type is 415; without Upload-Offset 400; past Upload-Length 413', async () => {
    const id = idOf((await create(10)).headers.get('location')!);
    const wrongType = await svc.fetch(`/api/uploads/${id}`, {
      method: 'PATCH',
      headers: { ...TUS, 'Upload-Offset': '0', 'Content-Type': 'text/plain' },
      body: random(10),
    });
    expect([wrongType.status, (await json(wrongType)).code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    const noOffset = await svc.fetch(`/api/uploads/${id}`, {
      method: 'PATCH',
      headers: { ...TUS, 'Content-Type': 'application/offset+octet-stream' },
      body: random(10),
    });
    expect([noOffset.status, (await json(noOffset)).code]).toEqual([400, 'INVALID_REQUEST']);
    const tooMuch = await patch(id, 0, random(11));
    expect([tooMuch.status, (await json(tooMuch)).code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const noLength = await svc.fetch('/api/uploads', { method: 'POST', headers: TUS });
    expect([noLength.status, (await json(noLength)).code]).toEqual([400, 'INVALID_REQUEST']);
    expect((await head(id)).headers.get('upload-offset')).toBe('0');
  });
});

describe('expiry', () => {
  const shortService = serviceOfBlock({ UPLOAD_EXPIRY_SECONDS: '1' });

  test('an expired upload answers 410 and the sweep removes it with its part', async () => {
    const short = shortService();
    const res = await create(100, {}, KEYS.alice, {}, short);
    const id = idOf(res.headers.get('location')!);
    expect(new Date(res.headers.get('upload-expires')!).getTime()).toBeGreaterThan(Date.now() - 2000);
    const part = path.join(short.dataDir, 'blobs', '.partial', `upload-${id}`);
    // Creation leaves the store alone (a missing part is an empty one); the first PATCH makes the part.
    expect(fs.existsSync(part)).toBe(false);
    const patched = await short.fetch(`/api/uploads/${id}`, {
      method: 'PATCH',
      headers: { ...TUS, 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
      body: random(10),
    });
    expect(patched.status).toBe(204);
    expect(fs.existsSync(part)).toBe(true);
    await waitFor(async () =>
      (await short.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: TUS })).status === 410 ? true : undefined,
    );
    const late = await short.fetch(`/api/uploads/${id}`, {
      method: 'PATCH',
      headers: { ...TUS, 'Upload-Offset': '10', 'Content-Type': 'application/offset+octet-stream' },
      body: random(10),
    });
    expect([late.status, (await json(late)).code]).toEqual([410, 'UPLOAD_EXPIRED']);
    expect(await short.container.uploads.sweepExpired()).toBeGreaterThanOrEqual(1);
    expect(fs.existsSync(part)).toBe(false);
    expect((await short.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: TUS })).status).toBe(404);
  });

  test('the sweep leaves an expired upload alone while a PATCH begun before the expiry still writes its part, and removes it after', async () => {
    const short = shortService();
    const res = await create(20, {}, KEYS.alice, {}, short);
    const id = idOf(res.headers.get('location')!);
    const part = path.join(short.dataDir, 'blobs', '.partial', `upload-${id}`);
    const data = random(20);
    // A PATCH whose body arrives in two halves, the upload expiring between them.
    const { req, answer } = handPatch(short.url, id, { offset: 0, length: 20 });
    req.write(data.subarray(0, 10));
    await waitFor(async () => (fs.existsSync(part) ? true : undefined));
    await new Promise((r) => setTimeout(r, 1_500)); // past UPLOAD_EXPIRY_SECONDS
    await short.container.uploads.sweepExpired();
    expect(fs.existsSync(part)).toBe(true);
    req.end(data.subarray(10));
    expect((await answer).status).toBe(204);
    expect(await short.container.uploads.sweepExpired()).toBeGreaterThanOrEqual(1);
    expect(fs.existsSync(part)).toBe(false);
    expect((await short.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: TUS })).status).toBe(404);
  });
});

test('the ingest worker dying mid-PATCH: the offset does not move past what was acknowledged, and the upload continues from it', async () => {
  const data = random(8 * MiB);
  const id = idOf((await create(data.length)).headers.get('location')!);
  expect((await patch(id, 0, data.subarray(0, MiB))).status).toBe(204);
  // A PATCH whose body is sent in part: its bytes reach the part file, then the worker that writes them dies, so
  // none of them is known to be durable.
  const { req, answer } = handPatch(svc.url, id, { offset: MiB, length: 7 * MiB });
  req.write(data.subarray(MiB, 4 * MiB));
  await waitFor(async () => (fs.statSync(partFile(id)).size >= 3 * MiB ? true : undefined), { timeoutMs: 20_000 });
  const pool = svc.container.ingestWorkers as unknown as {
    workers: Array<{ worker: { terminate(): Promise<number> } } | undefined>;
  };
  await Promise.all(pool.workers.filter((w) => w !== undefined).map((w) => w.worker.terminate()));
  req.end(data.subarray(4 * MiB));
  expect((await answer).status).toBeGreaterThanOrEqual(500);
  const h = await head(id);
  expect(h.headers.get('upload-offset')).toBe(String(MiB));
  // The next PATCH cuts the part back to the acknowledged offset and continues (new worker, hash state rebuilt).
  expect((await patch(id, MiB, data.subarray(MiB))).status).toBe(204);
  const { asset } = await assetOf(`${svc.url}/api/uploads/${id}`);
  expect(asset.asset_hash).toBe(blake3Of(data));
});

describe('what tus clients, proxies and hostile input send', () => {
  test('the database gone while the last PATCH makes the asset: 503, the upload is kept, and a later HEAD makes the asset', async () => {
    const data = random(40 * KiB);
    const id = idOf((await create(data.length, { name: 'kept.bin' })).headers.get('location')!);
    // As translateDbError raises for a database that cannot be reached, in the transaction that makes the asset.
    const assets = svc.container.assets as unknown as { createWithContent: () => Promise<unknown> };
    jest.spyOn(assets, 'createWithContent').mockRejectedValueOnce(new StoreUnavailableError('database'));
    const last = await patch(id, 0, data);
    expect([last.status, (await json(last)).code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
    const h = await head(id);
    expect([h.status, h.headers.get('upload-offset'), h.headers.get('asset-created')]).toEqual([
      200,
      String(data.length),
      'true',
    ]);
    const asset = await json(await svc.fetch(`/api/assets/${h.headers.get('asset-id')}`));
    expect([asset.asset_hash, asset.name]).toEqual([blake3Of(data), 'kept.bin']);
    // Neither the part nor the second name the asset was made from stays.
    expect(fs.existsSync(partFile(id))).toBe(false);
    expect(fs.readdirSync(path.join(svc.dataDir, 'blobs', '.tmp'))).toEqual([]);
  });

  test('the last PATCH sent again (its answer was lost): 204 with the offset and the asset, nothing stored again', async () => {
    const data = random(30 * KiB);
    const id = idOf((await create(data.length)).headers.get('location')!);
    const first = await patch(id, 0, data);
    expect(first.status).toBe(204);
    const again = await patch(id, data.length, Buffer.alloc(0));
    expect([again.status, again.headers.get('upload-offset')]).toEqual([204, String(data.length)]);
    expect(again.headers.get('asset-id')).toBe(first.headers.get('asset-id'));
    expect(again.headers.get('asset-created')).toBe('true');
    // A byte past the end is refused; the upload and its asset stay as they were.
    const more = await patch(id, data.length, random(1));
    expect([more.status, (await json(more)).code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const h = await head(id);
    expect([h.status, h.headers.get('upload-offset'), h.headers.get('asset-id')]).toEqual([
      200,
      String(data.length),
      first.headers.get('asset-id'),
    ]);
  });

  test('a body without Content-Length that goes past Upload-Length: what fits is kept, then 413 (as tusd); the upload is complete', async () => {
    const data = random(10 * KiB);
    const id = idOf((await create(data.length)).headers.get('location')!);
    // Two chunks of a chunked body: the second crosses the end.
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(data.subarray(0, 6 * KiB));
        c.enqueue(Buffer.concat([data.subarray(6 * KiB), random(2 * KiB)]));
        c.close();
      },
    });
    const res = await svc.fetch(`/api/uploads/${id}`, {
      method: 'PATCH',
      headers: { ...TUS, 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect([res.status, (await json(res)).code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const h = await head(id);
    expect(h.headers.get('upload-offset')).toBe(String(data.length));
    const asset = await json(await svc.fetch(`/api/assets/${h.headers.get('asset-id')}`));
    expect(asset.asset_hash).toBe(blake3Of(data));
  });

  test('a creation with data that fails (too long for Upload-Length, the disk full) keeps nothing: the client has no Location to resume', async () => {
    const uploadRows = async () => {
      const client = new Client({ connectionString: svc.databaseUrl });
      await client.connect();
      try {
        return (await client.query('SELECT count(*)::int AS n FROM upload WHERE asset_id IS NULL')).rows[0].n as number;
      } finally {
        await client.end();
      }
    };
    const before = await uploadRows();
    const tooLong = await svc.fetch('/api/uploads', {
      method: 'POST',
      headers: { ...TUS, 'Upload-Length': '5', 'Content-Type': 'application/offset+octet-stream' },
      body: random(9),
    });
    expect([tooLong.status, tooLong.headers.get('location')]).toEqual([413, null]);
    jest
      .spyOn(svc.container.uploads, 'append')
      .mockRejectedValueOnce(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
    const full = await svc.fetch('/api/uploads', {
      method: 'POST',
      headers: { ...TUS, 'Upload-Length': '5', 'Content-Type': 'application/offset+octet-stream' },
      body: random(5),
    });
    expect(full.status).toBeGreaterThanOrEqual(500);
    expect(await uploadRows()).toBe(before);
    // The client gone mid-body: the upload it never learned the address of goes, with its part.
    const parts = () => fs.readdirSync(path.join(svc.dataDir, 'blobs', '.partial')).length;
    const partsBefore = parts();
    const http = await import('node:http');
    const req = http.request(`${svc.url}/api/uploads`, {
      method: 'POST',
      headers: {
        ...TUS,
        'x-api-key': KEYS.alice,
        'Upload-Length': String(MiB),
        'Content-Type': 'application/offset+octet-stream',
        'Content-Length': String(MiB),
      },
    });
    req.on('error', () => undefined);
    req.write(random(256 * KiB));
    await waitFor(async () => ((await uploadRows()) > before ? true : undefined), {
      what: 'the upload to be recorded',
    });
    req.destroy();
    await waitFor(async () => ((await uploadRows()) === before && parts() === partsBefore ? true : undefined), {
      what: 'the cut creation to be removed',
    });
  });

  test('the disk full when a zero-byte upload makes its (empty) part at creation: 507, nothing kept', async () => {
    changeNextPart(() => ({
      append: async () => {
        throw Object.assign(new Error('ENOSPC: no space left on device, open'), { code: 'ENOSPC' });
      },
    }));
    const res = await create(0);
    expect([res.status, (await json(res)).code, res.headers.get('location')]).toEqual([
      507,
      'INSUFFICIENT_STORAGE',
      null,
    ]);
  });

  test('two PATCHes at once on one upload: the first is asked to wrap up and answers what it stored, the second then 409', async () => {
    const data = random(2 * MiB);
    const id = idOf((await create(data.length)).headers.get('location')!);
    const { req, answer } = handPatch(svc.url, id, { offset: 0, length: data.length });
    req.write(data.subarray(0, MiB)); // then it stalls
    await waitFor(async () =>
      fs.existsSync(partFile(id)) && fs.statSync(partFile(id)).size >= MiB ? true : undefined,
    );
    const second = patch(id, 0, data);
    const first = await answer;
    req.destroy();
    expect([first.status, first.headers['upload-offset'], first.headers.connection]).toEqual([
      204,
      String(MiB),
      'close',
    ]);
    const late = await second;
    expect([late.status, (await json(late)).code]).toEqual([409, 'UPLOAD_OFFSET_MISMATCH']);
    expect((await head(id)).headers.get('upload-offset')).toBe(String(MiB));
    expect(fs.statSync(partFile(id)).size).toBe(MiB);
    const done = await patch(id, MiB, data.subarray(MiB));
    expect(done.status).toBe(204);
    expect((await json(await svc.fetch(`/api/assets/${done.headers.get('asset-id')}`))).asset_hash).toBe(
      blake3Of(data),
    );
  });

  test('Content-Type is a media type: parameters and letter case do not make a PATCH (or a creation with data) fail', async () => {
    const id = idOf((await create(20)).headers.get('location')!);
    for (const [i, type] of [
      'application/offset+octet-stream; charset=binary',
      'Application/Offset+Octet-Stream',
    ].entries()) {
      const res = await svc.fetch(`/api/uploads/${id}`, {
        method: 'PATCH',
        headers: { ...TUS, 'Upload-Offset': String(i * 5), 'Content-Type': type },
        body: random(5),
      });
      expect([res.status, res.headers.get('upload-offset')]).toEqual([204, String((i + 1) * 5)]);
    }
    const withData = await create(5, {}, KEYS.alice, { 'Content-Type': 'APPLICATION/offset+octet-stream' });
    expect(withData.status).toBe(201);
  });

  test('behind a chain of proxies (X-Forwarded-Proto: https, http) uploads work, and Location is the base URL the service uses everywhere', async () => {
    const res = await create(10, {}, KEYS.alice, {
      'X-Forwarded-Proto': 'https, http',
      'X-Forwarded-Host': 'elsewhere.example',
      Forwarded: 'host=other.example;proto=https',
    });
    expect(res.status).toBe(201);
    // TRUST_PROXY is off here: forwarded headers are not believed, for tus as for every other URL.
    expect(res.headers.get('location')).toMatch(new RegExp(`^${svc.url}/api/uploads/[0-9a-f-]{36}$`));
  });

  test('HEAD: Upload-Expires while unfinished, and no Upload-Metadata header when there was none (an empty one is not tus metadata)', async () => {
    const c = await create(10);
    const h = await head(idOf(c.headers.get('location')!));
    expect(h.headers.get('cache-control')).toBe('no-store');
    expect(h.headers.get('upload-expires')).toBe(c.headers.get('upload-expires'));
    expect(h.headers.has('upload-metadata')).toBe(false);
    const withMeta = await create(10, { name: 'x.bin' });
    expect((await head(idOf(withMeta.headers.get('location')!))).headers.get('upload-metadata')).toBe(
      tusMetadata({ name: 'x.bin' }),
    );
  });

  test('the disk full during a PATCH (a real ENOSPC): 507 INSUFFICIENT_STORAGE, the offset does not move, and the upload resumes once there is room', async () => {
    const data = random(2 * MiB);
    const id = idOf((await create(data.length)).headers.get('location')!);
    // The part is a device on which every write fails with ENOSPC (Linux's /dev/full).
    fs.mkdirSync(path.dirname(partFile(id)), { recursive: true });
    fs.symlinkSync('/dev/full', partFile(id));
    const full = await patch(id, 0, data);
    expect(full.status).toBe(507);
    expect(await json(full)).toEqual({ code: 'INSUFFICIENT_STORAGE', message: expect.any(String) });
    expect((await head(id)).headers.get('upload-offset')).toBe('0');
    // Room again.
    fs.unlinkSync(partFile(id));
    const done = await patch(id, 0, data);
    expect(done.status).toBe(204);
    const asset = await json(await svc.fetch(`/api/assets/${done.headers.get('asset-id')}`));
    expect(asset.asset_hash).toBe(blake3Of(data));
  });
});

describe('a client that stalls mid-PATCH', () => {
  const slowService = serviceOfBlock({ BODY_IDLE_TIMEOUT_MS: '1000' });

  test('is cut (408) and closed; HEAD reports what arrived, which is on disk, and the upload resumes from there', async () => {
    const slow = slowService();
    const data = random(3 * MiB);
    const c = await create(data.length, {}, KEYS.alice, {}, slow);
    const id = idOf(c.headers.get('location')!);
    const { req, answer } = handPatch(slow.url, id, { offset: 0, length: data.length });
    req.write(data.subarray(0, MiB)); // and then nothing more
    const cut = await answer;
    req.destroy();
    expect([cut.status, cut.headers.connection]).toEqual([408, 'close']);
    const h = await slow.fetch(`/api/uploads/${id}`, { method: 'HEAD', headers: TUS });
    const offset = Number(h.headers.get('upload-offset'));
    expect(offset).toBeGreaterThan(0);
    expect(offset).toBeLessThanOrEqual(MiB);
    expect(fs.statSync(path.join(slow.dataDir, 'blobs', '.partial', `upload-${id}`)).size).toBe(offset);
    const done = await slow.fetch(`/api/uploads/${id}`, {
      method: 'PATCH',
      headers: { ...TUS, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' },
      body: data.subarray(offset),
    });
    expect(done.status).toBe(204);
    const asset = await json(await slow.fetch(`/api/assets/${done.headers.get('asset-id')}`));
    expect(asset.asset_hash).toBe(blake3Of(data));
  });
});
