/**
 * GET /api/assets makes its assets' JSON from text columns (http/rest/read-model/asset-page.ts). Its answers must be
 * the bytes the object path gives for the same rows (`JSON.stringify(assetPageJson(AssetService.list(...)))`, what
 * GraphQL's and every other caller's repository methods still return): a mixed page of previews, thumbnails, derived
 * metadata, tags, unicode and escapes, names safe and unsafe as loader paths, missing optional fields, timestamps with
 * microseconds, numbers jsonb prints otherwise than JavaScript; over every sort and order, by cursor and by offset,
 * filtered; and again from the page cache after a change.
 */
import crypto from 'node:crypto';
import { Client } from 'pg';
import type { AssetListQuery, Principal } from '../../src/domain/assets/asset.types';
import { ASSET_SORTS } from '../../src/domain/assets/asset.types';
import { assetPageJson } from '../../src/http/rest/asset.presenter';
import { startTestService, type TestService } from '../helpers/harness';
import { listQuery as defaultQuery } from '../helpers/list-query';

let svc: TestService;
let db: Client;
const alice: Principal = { ownerId: 'alice', scopes: ['read', 'write'], keyId: 'env:alice' };

/** Names: unicode, escapes, control characters, and paths a loader may or may not take. */
const NAMES = [
  'SDXL/base.safetensors',
  'plain.ckpt',
  'ünïcödé 模型 😀.safetensors',
  'quote " and \\ backslash',
  'tab\there\nnewline\u0001\u001f\u007f',
  '/abs/path.pt',
  'a/../b.pt',
  'a//b.pt',
  './x.pt',
  'dir/',
  '...',
  'x/.../y',
  'back\\slash.pt',
  '\u2028line\u2029sep',
  'spaces , : inside',
];

/** user_metadata values: nesting, escapes, blanks after , and : inside strings, and numbers of every print form. */
const METADATA: unknown[] = [
  {},
  { k: 1, s: 'a, b: c', nested: { arr: [1, 2.5, -3, true, false, null, 'x'], o: {} }, '': '' },
  { 'key with "quotes"': 'value\nwith\tescapes\u0001', é: 'ü', emoji: '😀', bs: '\\', slash: '/' },
  { n: 0.1, m: 123456.789, big: 9007199254740992, neg: -0.000001, e: 1.5e20, long: 0.30000000000000004 },
  { arr: [[[]]], deep: { a: { b: { c: [{ d: null }] } } } },
];
/** Numbers jsonb prints in full where JavaScript prints an exponent. */
const EXPONENTS: Record<number, unknown> = { 11: { big: 1e21 }, 40: { small: 1.5e-7, n: -2.5e-9 } };

async function insertAssets(): Promise<void> {
  // Rows made in SQL, so every combination of fields exists (an upload sets some of them together).
  const rows = 60;
  const ids = Array.from({ length: rows }, () => crypto.randomUUID());
  for (let i = 0; i < rows; i++) {
    const hex = crypto.createHash('sha256').update(`c${i}`).digest('hex');
    await db.query(
      `INSERT INTO content (blake3, sha256, size, mime_type, first_name) VALUES ($1, $2, $3, 'application/octet-stream', 'f')`,
      [hex, crypto.createHash('sha256').update(`s${i}`).digest('hex'), i],
    );
    const tags =
      i % 9 === 8 ? null : i % 3 === 0 ? ['models', 'loras', 'tag ü'] : i % 3 === 1 ? ['models'] : ['output', 'q"t'];
    const metadata =
      i % 5 === 0
        ? null
        : i % 5 === 1
          ? { filename: NAMES[i % NAMES.length], content_length: i, format: 'safetensors' }
          : i % 5 === 2
            ? { width: 512, height: 512, safetensors: { ss_base: 'sd, xl: 1' } }
            : {};
    await db.query(
      `INSERT INTO asset (id, owner_id, name, content_hash, size, mime_type, tags, user_metadata, preview_id, prompt_id, is_immutable,
         created_at, updated_at, last_access_time, metadata, has_thumbnail)
       VALUES ($1, 'alice', $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10,
         '2026-01-01T00:00:00Z'::timestamptz + $11::int * interval '1 second' + $12::int * interval '1 microsecond',
         '2026-02-01T00:00:00Z'::timestamptz + ($11::int % 4) * interval '1 minute' + 999999 * interval '1 microsecond',
         '2026-03-01T00:00:00Z'::timestamptz + $11::int * interval '1 millisecond' + 500 * interval '1 microsecond', $13::jsonb, $14)`,
      [
        ids[i],
        NAMES[i % NAMES.length] + (i >= NAMES.length ? ` ${i}` : ''),
        hex,
        // Ties in size and updated_at (the id breaks them); sizes of 1 to 4 digits, not ordered as text.
        (i % 7) ** 3 * 10,
        i % 4 === 0 ? 'image/png' : 'application/octet-stream; charset="x"',
        tags,
        JSON.stringify(EXPONENTS[i] ?? METADATA[i % METADATA.length]),
        null,
        i % 6 === 0 ? crypto.randomUUID() : null,
        i % 10 === 0,
        i % 20,
        (i * 137) % 1_000_000,
        metadata === null ? null : JSON.stringify(metadata),
        i % 2 === 0,
      ],
    );
  }
  // Previews (another asset of the owner), once every row exists.
  for (let i = 0; i < rows; i += 4)
    await db.query(`UPDATE asset SET preview_id = $2 WHERE id = $1`, [ids[i], ids[(i + 1) % rows]]);
  // A jsonb null where the object path prints `{}` (user_metadata) or leaves the field out (metadata).
  await db.query(`UPDATE asset SET user_metadata = 'null'::jsonb, metadata = 'null'::jsonb WHERE id = $1`, [ids[5]]);
}

beforeAll(async () => {
  svc = await startTestService();
  db = new Client({ connectionString: svc.databaseUrl });
  await db.connect();
  await insertAssets();
});
afterAll(async () => {
  await db?.end();
  await svc?.stop();
});

const query = (q: Partial<AssetListQuery>): AssetListQuery => defaultQuery({ limit: 7, ...q });

/** What the object path answers for this query (the bytes GET /api/assets sent before the JSON path). */
async function objectPath(q: AssetListQuery): Promise<string> {
  // The route's links: its base and alice's read grant of this window (media URLs carry it).
  return JSON.stringify(
    assetPageJson(await svc.container.assets.list(alice, q), {
      base: svc.url,
      access: svc.container.grants.mint('alice').token,
    }),
  );
}

function urlOf(q: AssetListQuery): string {
  const p = new URLSearchParams({ limit: String(q.limit), sort: q.sort, order: q.order });
  if (q.offset) p.set('offset', String(q.offset));
  if (q.after) p.set('after', q.after);
  if (q.includeTags.length) p.set('include_tags', q.includeTags.join(','));
  if (q.excludeTags.length) p.set('exclude_tags', q.excludeTags.join(','));
  if (q.nameContains) p.set('name_contains', q.nameContains);
  return `/api/assets?${p}`;
}

async function served(q: AssetListQuery): Promise<{ text: string; type: string | null; length: string | null }> {
  const res = await svc.fetch(urlOf(q));
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, type: res.headers.get('content-type'), length: res.headers.get('content-length') };
}

/** Every page of a query, by cursor where the sort mints cursors, else by offset; each compared byte for byte. */
async function walk(base: AssetListQuery): Promise<number> {
  let q = base;
  let seen = 0;
  for (let pages = 0; pages < 50; pages++) {
    const got = await served(q);
    expect(got.text).toBe(await objectPath(q));
    expect(got.type).toBe('application/json; charset=utf-8');
    expect(Number(got.length)).toBe(Buffer.byteLength(got.text));
    const page = JSON.parse(got.text) as { assets: unknown[]; has_more: boolean; next_cursor?: string };
    seen += page.assets.length;
    if (!page.has_more) return seen;
    q = page.next_cursor ? { ...q, after: page.next_cursor } : { ...q, offset: q.offset + q.limit };
  }
  throw new Error('more than 50 pages');
}

test.each(ASSET_SORTS.flatMap((sort) => (['asc', 'desc'] as const).map((order) => [sort, order] as const)))(
  'every page sorted by %s %s is byte-identical to the object path',
  async (sort, order) => {
    expect(await walk(query({ sort, order }))).toBe(60);
  },
);

test('filtered pages, an offset page, a page past the end and an empty page are byte-identical too', async () => {
  expect(await walk(query({ includeTags: ['models'] }))).toBeGreaterThan(0);
  expect(await walk(query({ excludeTags: ['models'], sort: 'name', order: 'asc' }))).toBeGreaterThan(0);
  expect(await walk(query({ nameContains: 'ü', sort: 'size', limit: 3 }))).toBeGreaterThan(0);
  for (const q of [
    query({ offset: 5 }),
    query({ offset: 1000 }),
    query({ includeTags: ['nothing-has-this'] }),
    query({ limit: 500 }),
  ]) {
    expect((await served(q)).text).toBe(await objectPath(q));
  }
});

test('a page served again from the cache, then after a change of a field it shows, stays byte-identical', async () => {
  const q = query({ includeTags: ['output'], limit: 5 });
  const first = await served(q);
  expect((await served(q)).text).toBe(first.text);
  expect((await served(q)).text).toBe(first.text);
  await db.query(`UPDATE asset SET has_thumbnail = NOT has_thumbnail, user_metadata = '{"changed": "a, b: c"}'
    WHERE id = (SELECT id FROM asset WHERE owner_id = 'alice' AND tags @> '{output}' ORDER BY created_at DESC, id DESC LIMIT 1)`);
  const after = await served(q);
  expect(after.text).not.toBe(first.text);
  expect(after.text).toBe(await objectPath(q));
});
