/**
 * ComfyUI after August 2026 (contract 6.4): `missing` is a system tag no client may add, remove or send; `POST
 * /api/assets/prune`; DELETE tags answers carry `protected`; `GET /api/features` without a key; every `text/*` asset
 * is its own preview while active types stay forced downloads. Every JSON answer is validated against openapi.yaml.
 */
import { gql, type Json } from '../helpers/graphql';
import { KEYS } from '../helpers/harness';
import { TUS } from '../helpers/tus';
import { comfySuite } from '../helpers/comfy-suite';

const suite = comfySuite();
const { upload, get, send, unique } = suite;

const forbidden = { code: 'SYSTEM_TAG_FORBIDDEN', details: { tag: 'missing' } };

describe('missing is a system tag', () => {
  test('adding it, removing it, PUT naming it, an upload, a from-hash, a tus upload or GraphQL sending it: 400 SYSTEM_TAG_FORBIDDEN', async () => {
    const a = await upload(unique('sys'), { tags: 'keep' });
    const refused = async (r: { status: number; body: Json }) =>
      expect([r.status, r.body]).toEqual([400, expect.objectContaining(forbidden)]);

    await refused(await send('POST', `/api/assets/${a.id}/tags`, { tags: ['x', 'missing'] }));
    await refused(await send('DELETE', `/api/assets/${a.id}/tags`, { tags: ['missing'] }));
    await refused(await send('PUT', `/api/assets/${a.id}`, { tags: ['keep', ' missing '] }));
    const up = await suite.svc.fetch('/api/assets', {
      method: 'POST',
      body: (() => {
        const f = new FormData();
        f.append('file', new Blob([unique('sys-up')]), 'f.bin');
        f.append('tags', 'a,missing');
        return f;
      })(),
    });
    await refused({ status: up.status, body: await up.json() });
    await refused(await send('POST', '/api/assets/from-hash', { hash: a.asset_hash, tags: ['missing'] }));
    const b64 = (v: string) => Buffer.from(v).toString('base64');
    const tus = await suite.svc.fetch('/api/uploads', {
      method: 'POST',
      headers: {
        ...TUS,
        'Upload-Length': '4',
        'Upload-Metadata': `filename ${b64('x.bin')},tags ${b64(JSON.stringify(['missing']))}`,
      },
    });
    await refused({ status: tus.status, body: await tus.json() });

    const g = await gql(suite.svc, 'mutation($id: ID!) { addAssetTags(id: $id, tags: ["missing"]) { added } }', {
      id: a.id,
    });
    expect([g.code, g.errors?.[0]?.extensions?.details]).toEqual(['SYSTEM_TAG_FORBIDDEN', { tag: 'missing' }]);
    const gr = await gql(suite.svc, 'mutation($id: ID!) { removeAssetTags(id: $id, tags: ["missing"]) { removed } }', {
      id: a.id,
    });
    expect(gr.code).toBe('SYSTEM_TAG_FORBIDDEN');
    // Nothing changed; `preview` stays an ordinary tag (the frontend sends it).
    expect((await get(`/api/assets/${a.id}`)).body.tags).toEqual(['keep']);
    expect((await send('POST', `/api/assets/${a.id}/tags`, { tags: ['preview'] })).status).toBe(200);
  });

  test('a PUT keeps the system tag the service set; DELETE tags answers carry protected: []', async () => {
    const a = await upload(unique('sys-put'), { tags: 'one' });
    // As the import sets it when an in-place file is gone (the service's own write).
    await suite.db.query(`UPDATE asset SET tags = array_append(tags, 'missing') WHERE id = $1`, [a.id]);
    const put = await send('PUT', `/api/assets/${a.id}`, { tags: ['two'] });
    expect([put.status, put.body.tags]).toEqual([200, ['two', 'missing']]);
    const rm = await send('DELETE', `/api/assets/${a.id}/tags`, { tags: ['two', 'absent'] });
    expect(rm).toEqual({
      status: 200,
      body: { removed: ['two'], not_present: ['absent'], total_tags: ['missing'], protected: [] },
    });
    // Filtering by it is allowed.
    const listed = await get(`/api/assets?tags_all=missing&limit=500`);
    expect((listed.body.assets as Json[]).map((x) => x.id)).toContain(a.id);
  });
});

describe('ComfyUI routes after August', () => {
  test('POST /api/assets/prune answers completed with the count (nothing in place here: 0); GET on it is 405', async () => {
    const a = await upload(unique('prune'), { tags: 'p' });
    await suite.db.query(`UPDATE asset SET tags = array_append(tags, 'missing') WHERE id = $1`, [a.id]);
    const r = await send('POST', '/api/assets/prune', {});
    expect(r).toEqual({ status: 200, body: { status: 'completed', marked: 0 } });
    // Only assets whose content lives in an in-place root are pruned: this stored one stays.
    expect((await get(`/api/assets/${a.id}`)).status).toBe(200);
    const wrong = await suite.svc.fetch('/api/assets/prune');
    expect([wrong.status, wrong.headers.get('allow')]).toEqual([405, 'POST']);
    const noBody = await suite.svc.fetch('/api/assets/prune', { method: 'POST' });
    expect(noBody.status).toBe(200);
    expect((await suite.svc.fetch('/api/assets/prune', { method: 'POST', key: null })).status).toBe(401);
  });

  test('GET /api/features answers without a key', async () => {
    for (const key of [null, KEYS.alice]) {
      const res = await suite.svc.fetch('/api/features', { key });
      expect([res.status, await res.json()]).toEqual([200, { supports_model_type_tags: true }]);
    }
  });

  test('every text/* asset is its own preview; HTML is still served as a forced download', async () => {
    const html = await upload(unique('<html><body>hi</body></html>'), { tags: 'pv' }, 'page.html');
    const py = await upload(unique('print(1)'), { tags: 'pv', mime_type: 'text/x-python' }, 'x.py');
    for (const a of [html, py]) expect(new URL(a.preview_url).pathname).toBe(`/api/assets/${a.id}/content`);
    const res = await suite.svc.fetch(`/api/assets/${html.id}/content?disposition=inline`);
    expect([
      res.status,
      res.headers.get('content-type'),
      res.headers.get('content-disposition')?.startsWith('attachment'),
      res.headers.get('x-content-type-options'),
    ]).toEqual([200, 'application/octet-stream', true, 'nosniff']);
    const g = await gql(suite.svc, 'query($id: ID!) { asset(id: $id) { previewUrl } }', { id: py.id });
    expect(g.data.asset.previewUrl).toBe(py.preview_url);
  });
});
