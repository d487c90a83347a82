/**
 * Media that loads anywhere (contract 3.7): `preview_url` and `thumbnail_url` carry a read grant (`?access=`) that
 * reads that owner's content and thumbnails without the key, and nothing else; `short_url` (`/api/s/{id}`) answers
 * 302 to a freshly signed content URL; cached list pages never serve an expired grant; MEDIA_URL_GRANTS=false leaves
 * the grants out. Active content (HTML, XML, JavaScript, SVG) is an octet-stream attachment, except SVG for an image.
 */
import sharp from 'sharp';
import { gql } from '../helpers/graphql';
import { json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { OPERATOR } from '../../src/domain/auth/api-key.service';

let svc: TestService;
let image: { id: string; bytes: Buffer };

async function upload(
  s: TestService,
  data: Buffer,
  name: string,
  key: string = KEYS.alice,
  fields: Record<string, string> = {},
): Promise<any> {
  const res = await s.fetch('/api/assets', { method: 'POST', key, body: uploadForm(data, fields, name) });
  expect(res.status).toBe(201);
  return json(res);
}

const grantOf = (url: string): string => new URL(url).searchParams.get('access')!;
/** A path of the service with a grant and no key. */
const open = (path: string, init: RequestInit = {}) => svc.fetch(path, { ...init, key: null, redirect: 'manual' });

beforeAll(async () => {
  svc = await startTestService({}, { validateResponses: true });
  const bytes = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3a7' } })
    .png()
    .toBuffer();
  image = { id: (await upload(svc, bytes, 'pic.png')).id, bytes };
  await waitFor(
    async () => ((await json(await svc.fetch(`/api/assets/${image.id}`))).thumbnail_url ? true : undefined),
    { what: 'the thumbnail' },
  );
});
afterAll(async () => {
  jest.restoreAllMocks();
  await svc?.stop();
});

test('preview_url and thumbnail_url carry one grant that reads the content and thumbnail without the key (GET, HEAD)', async () => {
  const a = await json(await svc.fetch(`/api/assets/${image.id}`));
  expect(a.preview_url).toMatch(new RegExp(`^${svc.url}/api/assets/${image.id}/content\\?access=[\\w.-]+$`));
  expect(a.thumbnail_url).toMatch(new RegExp(`^${svc.url}/api/assets/${image.id}/thumbnail\\?access=[\\w.-]+$`));
  expect(grantOf(a.preview_url)).toBe(grantOf(a.thumbnail_url));
  expect(a.preview_url).not.toContain(KEYS.alice);
  // Valid for at least an hour after the answer.
  expect(Number(grantOf(a.preview_url).split('.')[0]) * 1000 - Date.now()).toBeGreaterThanOrEqual(3600_000 - 5_000);

  const content = await fetch(a.preview_url);
  expect([content.status, content.headers.get('content-type')]).toEqual([200, 'image/png']);
  expect(Buffer.from(await content.arrayBuffer()).equals(image.bytes)).toBe(true);
  expect((await fetch(a.preview_url, { method: 'HEAD' })).status).toBe(200);
  expect((await fetch(a.preview_url, { headers: { range: 'bytes=0-3' } })).status).toBe(206);
  const thumb = await fetch(a.thumbnail_url);
  expect([thumb.status, thumb.headers.get('content-type')]).toEqual([200, 'image/webp']);

  // The listing and GraphQL give the same grant.
  const page = await json(await svc.fetch('/api/assets?limit=5'));
  expect(page.assets.find((x: any) => x.id === image.id).preview_url).toBe(a.preview_url);
  const g = await gql(svc, 'query($id: ID!) { asset(id: $id) { previewUrl thumbnailUrl shortUrl } }', { id: image.id });
  expect(g.data.asset).toEqual({
    previewUrl: a.preview_url,
    thumbnailUrl: a.thumbnail_url,
    shortUrl: `${svc.url}/api/s/${image.id}`,
  });
  expect(a.short_url).toBe(`${svc.url}/api/s/${image.id}`);
});

test("a grant never authorises a write, a listing, metadata or another owner's asset; bad grants are refused", async () => {
  const access = grantOf((await json(await svc.fetch(`/api/assets/${image.id}`))).preview_url);
  const q = `?access=${access}`;
  const json_ = { 'content-type': 'application/json' };
  const refused: Array<[string, RequestInit]> = [
    [`/api/assets${q}`, {}],
    [`/api/assets/${image.id}${q}`, {}],
    [`/api/assets/${image.id}${q}`, { method: 'PUT', headers: json_, body: '{"name":"x"}' }],
    [`/api/assets/${image.id}${q}`, { method: 'DELETE' }],
    [`/api/assets/${image.id}/tags${q}`, { method: 'POST', headers: json_, body: '{"tags":["x"]}' }],
    [`/api/assets${q}`, { method: 'POST', body: uploadForm(Buffer.from('new'), {}, 'n.txt') }],
    [`/api/tags${q}`, {}],
    [`/api/assets/tags/refine${q}`, {}],
    [`/api/tasks${q}`, {}],
    [`/api/uploads${q}`, { method: 'POST', headers: { 'tus-resumable': '1.0.0', 'upload-length': '3' } }],
  ];
  for (const [path, init] of refused) {
    const r = await open(path, init);
    expect([`${init.method ?? 'GET'} ${path}`, r.status]).toEqual([`${init.method ?? 'GET'} ${path}`, 401]);
  }
  const g = await fetch(`${svc.url}/graphql${q}`, {
    method: 'POST',
    headers: json_,
    body: '{"query":"{ assets { total } }"}',
  });
  expect(g.status).toBe(401);
  expect((await json(await svc.fetch(`/api/assets/${image.id}`))).name).toBe('pic.png');

  // Bob's grant does not find alice's asset; bob's own asset is not readable with alice's grant.
  const bobs = await upload(svc, Buffer.from('bob only'), 'b.txt', KEYS.bob);
  const bobGrant = (await json(await svc.fetch('/api/thumbnail-access', { key: KEYS.bob }))).access;
  expect((await open(`/api/assets/${image.id}/content?access=${bobGrant}`)).status).toBe(404);
  expect((await open(`/api/assets/${bobs.id}/content${q}`)).status).toBe(404);
  expect((await open(`/api/s/${bobs.id}${q}`)).status).toBe(404);

  // Expired, tampered (another owner under alice's signature, or another expiry), malformed: a bad credential, 401.
  const [exp, , sig] = access.split('.');
  const expired = svc.container.grants.sign('alice', Math.floor(Date.now() / 1000) - 1).token;
  const later = `${Number(exp) + 3600}.${access.split('.')[1]}.${sig}`;
  for (const bad of [expired, `${exp}.${Buffer.from('bob').toString('base64url')}.${sig}`, later, 'x', `${access}A`]) {
    for (const path of [`/api/assets/${image.id}/content`, `/api/assets/${image.id}/thumbnail`, `/api/s/${image.id}`]) {
      const r = await open(`${path}?access=${encodeURIComponent(bad)}`);
      expect([path, r.status, (await json(r)).code]).toEqual([path, 401, 'UNAUTHORIZED']);
      const head = await open(`${path}?access=${encodeURIComponent(bad)}`, { method: 'HEAD' });
      expect([path, head.status]).toEqual([path, 401]);
    }
  }
});

test('a grant keeps working after the key that got it is revoked, until it expires', async () => {
  const { key } = await svc.container.apiKeys.create(OPERATOR, { owner: 'carol' });
  const mine = await upload(svc, Buffer.from('carol text'), 'c.txt', key);
  const asset = await json(await svc.fetch(`/api/assets/${mine.id}`, { key }));
  // A text file has no preview here; a grant of the same owner reads its content through short_url's redirect.
  const redirect = await svc.fetch(`/api/s/${mine.id}`, { key, redirect: 'manual' });
  expect(redirect.status).toBe(302);
  const signed = redirect.headers.get('location')!;
  expect(signed).toMatch(new RegExp(`^${svc.url}/api/assets/${mine.id}/content\\?access=[\\w.-]+$`));
  expect(asset.short_url).toBe(`${svc.url}/api/s/${mine.id}`);

  expect(await svc.container.apiKeys.revokeAny(OPERATOR, key)).toBe(true);
  expect((await svc.fetch(`/api/assets/${mine.id}`, { key })).status).toBe(401);
  const still = await fetch(signed);
  expect([still.status, await still.text()]).toEqual([200, 'carol text']);

  // Two hours on, it is refused (the signature is remembered per instance, the expiry is checked every time).
  const now = Date.now();
  const clock = jest.spyOn(Date, 'now').mockReturnValue(now + 2 * 3600_000 + 1_000);
  try {
    const r = await fetch(signed);
    expect([r.status, (await json(r)).code]).toEqual([401, 'UNAUTHORIZED']);
  } finally {
    clock.mockRestore();
  }
});

test("short_url: with the key or the browser session's grant 302 to a signed URL; without either 401; another owner's 404", async () => {
  const r = await svc.fetch(`/api/s/${image.id}`, { redirect: 'manual' });
  expect([r.status, r.headers.get('cache-control')]).toEqual([302, 'no-store']);
  const loaded = await fetch(r.headers.get('location')!);
  expect(Buffer.from(await loaded.arrayBuffer()).equals(image.bytes)).toBe(true);
  expect((await svc.fetch(`/api/s/${image.id}`, { method: 'HEAD', redirect: 'manual' })).status).toBe(302);
  const inline = await svc.fetch(`/api/s/${image.id}?disposition=inline`, { redirect: 'manual' });
  expect(new URL(inline.headers.get('location')!).searchParams.get('disposition')).toBe('inline');

  const session = (await json(await svc.fetch('/api/thumbnail-access'))).access;
  const viaGrant = await open(`/api/s/${image.id}?access=${session}`);
  expect(viaGrant.status).toBe(302);

  const none = await open(`/api/s/${image.id}`);
  expect([none.status, (await json(none)).code]).toEqual([401, 'UNAUTHORIZED']);
  const other = await svc.fetch(`/api/s/${image.id}`, { key: KEYS.bob, redirect: 'manual' });
  expect([other.status, (await json(other)).code]).toEqual([404, 'ASSET_NOT_FOUND']);
  expect((await svc.fetch('/api/s/not-a-uuid', { redirect: 'manual' })).status).toBe(400);
});

test('cached list pages (REST and GraphQL) carry the grant of the current window, never an expired one', async () => {
  const list = async () => (await json(await svc.fetch('/api/assets?limit=3&tags_all=output'))).assets;
  const gqlList = async () => (await gql(svc, '{ assets(limit: 50) { items { id thumbnailUrl } } }')).data.assets.items;
  await upload(
    svc,
    await sharp({ create: { width: 8, height: 8, channels: 3, background: '#a00' } })
      .png()
      .toBuffer(),
    'o.png',
    KEYS.alice,
    { tags: 'output' },
  );
  // Asked twice, so the page is kept (page-cache.ts keeps a key asked for before).
  const first = await list();
  expect(await list()).toEqual(first);
  await gqlList();
  const firstGql = await gqlList();
  const before = grantOf(first[0].preview_url);

  const now = Date.now();
  const clock = jest.spyOn(Date, 'now').mockReturnValue(now + 3600_000);
  try {
    const next = await list();
    const after = grantOf(next[0].preview_url);
    expect(after).not.toBe(before);
    expect(Number(after.split('.')[0]) * 1000 - (now + 3600_000)).toBeGreaterThanOrEqual(3600_000 - 5_000);
    const g = (await gqlList()).find((x: any) => x.id === image.id);
    expect(grantOf(g.thumbnailUrl)).toBe(after);
    expect(firstGql.find((x: any) => x.id === image.id).thumbnailUrl).not.toBe(g.thumbnailUrl);
  } finally {
    clock.mockRestore();
  }
});

test('active content: an octet-stream attachment whatever disposition asks; SVG for an <img> as image/svg+xml', async () => {
  const svg = Buffer.from(
    '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><script>alert(1)</script></svg>',
  );
  const kinds: Array<[string, Buffer]> = [
    ['page.html', Buffer.from('<!doctype html><script>alert(1)</script>')],
    ['feed.xml', Buffer.from('<?xml version="1.0"?><a/>')],
    ['code.js', Buffer.from('alert(1)')],
    ['pic.svg', svg],
  ];
  for (const [name, data] of kinds) {
    const { id } = await upload(svc, data, name);
    for (const dest of [undefined, 'document', 'iframe', 'script']) {
      const r = await svc.fetch(`/api/assets/${id}/content?disposition=inline`, {
        headers: dest ? { 'sec-fetch-dest': dest } : {},
      });
      expect([name, dest, r.status, r.headers.get('content-type'), r.headers.get('x-content-type-options')]).toEqual([
        name,
        dest,
        200,
        'application/octet-stream',
        'nosniff',
      ]);
      expect(r.headers.get('content-disposition')).toMatch(/^attachment;/);
      expect(r.headers.get('content-security-policy')).toContain('sandbox');
      if (name.endsWith('.svg')) expect(r.headers.get('vary')).toContain('Sec-Fetch-Dest');
    }
  }
  const { id } = await upload(svc, Buffer.concat([svg, Buffer.from(' ')]), 'img.svg');
  const asImage = await svc.fetch(`/api/assets/${id}/content`, { headers: { 'sec-fetch-dest': 'image' } });
  expect([asImage.status, asImage.headers.get('content-type'), asImage.headers.get('x-content-type-options')]).toEqual([
    200,
    'image/svg+xml',
    'nosniff',
  ]);
  expect(asImage.headers.get('content-security-policy')).toContain('sandbox');
  expect(asImage.headers.get('vary')).toContain('Sec-Fetch-Dest');
});

describe('MEDIA_URL_GRANTS=false', () => {
  let plain: TestService;
  beforeAll(async () => {
    plain = await startTestService({ MEDIA_URL_GRANTS: 'false' }, { validateResponses: true });
  });
  afterAll(async () => {
    await plain?.stop();
  });

  test('media URLs carry no grant (they need the key); short_url still redirects to a signed URL', async () => {
    const a = await upload(
      plain,
      await sharp({ create: { width: 4, height: 4, channels: 3, background: '#00f' } })
        .png()
        .toBuffer(),
      'p.png',
    );
    expect(a.preview_url).toBe(`${plain.url}/api/assets/${a.id}/content`);
    const page = await json(await plain.fetch('/api/assets'));
    expect(page.assets[0].preview_url).toBe(`${plain.url}/api/assets/${a.id}/content`);
    expect((await fetch(a.preview_url)).status).toBe(401);
    const r = await plain.fetch(`/api/s/${a.id}`, { redirect: 'manual' });
    expect(r.status).toBe(302);
    expect((await fetch(r.headers.get('location')!)).status).toBe(200);
  });
});
