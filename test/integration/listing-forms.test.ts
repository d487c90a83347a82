/**
 * A tag-filtered page is read by one of two statements (AssetRepository's PageForm): the planned one (unnamed, the
 * GIN-capable tag condition, planned per request) for a filter's first page and for rare tags, and, once a page
 * said the include tags are common, a named one whose plan is the sort index's scan with the tags as a Filter. Both
 * must give the same pages: here every page of a cursor walk is read by a repository that has seen the filter (so
 * it sends the named statement when the tags are common) and by a fresh one (which sends the planned statement), and
 * the two are compared, for common and rare tags, every cursor sort and both orders, with ties, untagged and
 * NULL-tagged rows; and when the tags stop being common between two pages, the named statement's guard makes the
 * page read by the planned one, not answered empty.
 */
import { Client } from 'pg';
import { AssetRepository } from '../../src/domain/assets/asset.repository';
import { COMMON_SHARE } from '../../src/domain/assets/listing-sql';
import type { AssetListQuery } from '../../src/domain/assets/asset.types';
import { decodeCursor, type CursorPosition } from '../../src/domain/assets/cursor';
import { createDatabase, type Database } from '../../src/infra/prisma';
import { createTestDatabase } from '../helpers/harness';
import { listQuery as defaultQuery } from '../helpers/list-query';
import { recordQueries } from '../helpers/record-queries';

const OWNER = 'forms';
const ROWS = 400;

let url: string;
let db: Database;
let sql: Client;
let sent: { name?: string; text: string }[] = [];

beforeAll(async () => {
  url = await createTestDatabase();
  sql = new Client({ connectionString: url });
  await sql.connect();
  // Every asset but the NULL- and empty-tagged ones carries `common`; a third `third`; one in 40 `rare`. Timestamps,
  // sizes and names repeat (ties broken by id). Another owner holds the same tags.
  await sql.query(`
    INSERT INTO content (blake3, sha256, size, mime_type, first_name)
    SELECT encode(sha256(('b' || i)::bytea), 'hex'), encode(sha256(('s' || i)::bytea), 'hex'), i, 'application/octet-stream', 'f' || i
    FROM generate_series(1, ${ROWS}) AS i;
    INSERT INTO asset (id, owner_id, name, content_hash, size, mime_type, tags, created_at, updated_at)
    SELECT gen_random_uuid(), CASE WHEN i % 10 = 0 THEN 'other' ELSE '${OWNER}' END, 'asset-' || (i % 37),
      encode(sha256(('b' || i)::bytea), 'hex'), i % 53, 'application/octet-stream',
      CASE WHEN i % 97 = 1 THEN NULL WHEN i % 89 = 2 THEN '{}'::text[]
           ELSE ARRAY['common'] || CASE WHEN i % 3 = 0 THEN ARRAY['third'] ELSE '{}' END || CASE WHEN i % 40 = 7 THEN ARRAY['rare'] ELSE '{}' END END,
      timestamptz '2026-11-01' + (i % 61) * interval '1 second', timestamptz '2026-11-01' + (i % 29) * interval '1 minute'
    FROM generate_series(1, ${ROWS}) AS i;
    ANALYZE asset;`);
  db = createDatabase(url, 2);
  recordQueries(db, (q) => {
    if (/LEFT JOIN LATERAL/.test(q.text)) sent.push({ name: q.name, text: q.text });
  });
});

afterAll(async () => {
  await sql?.end();
  await db?.close();
});

const listQuery = (q: Partial<AssetListQuery>): AssetListQuery => defaultQuery({ limit: 7, ...q });

type Walked = { pages: unknown[]; named: number; unnamed: number };

/** Every page of `q` by cursor, each read by `seen` (which keeps what it learnt) and by a fresh repository. */
async function walk(
  seen: AssetRepository,
  q: AssetListQuery,
  read: 'text' | 'objects',
): Promise<{ seen: Walked; fresh: Walked }> {
  const out = {
    seen: { pages: [] as unknown[], named: 0, unnamed: 0 },
    fresh: { pages: [] as unknown[], named: 0, unnamed: 0 },
  };
  let after: CursorPosition | undefined;
  for (let i = 0; i < 200; i++) {
    const pages = [];
    for (const [repo, into] of [
      [seen, out.seen],
      [new AssetRepository(db.prisma, db.pool), out.fresh],
    ] as const) {
      sent = [];
      const page =
        read === 'text' ? await repo.pageIfChanged(OWNER, q, after, undefined) : await repo.list(OWNER, q, after);
      for (const s of sent) s.name ? into.named++ : into.unnamed++;
      into.pages.push(page);
      pages.push(page);
    }
    const next = pages[0]!.nextCursor;
    if (!next) return out;
    after = decodeCursor(next, q.sort, q.order);
  }
  throw new Error('the walk did not end');
}

const sorts = (['created_at', 'updated_at', 'name', 'size'] as const).flatMap((sort) =>
  (['asc', 'desc'] as const).map((order) => [sort, order] as const),
);

test('the counts say which tags are common', async () => {
  const { rows } = await sql.query(
    `SELECT tag, count, (SELECT asset_count FROM asset_owner_stats WHERE owner_id = $1) AS total
    FROM asset_tag_count WHERE owner_id = $1 ORDER BY tag`,
    [OWNER],
  );
  const share = Object.fromEntries(rows.map((r) => [r.tag, r.count / Number(r.total)]));
  expect(share.common).toBeGreaterThan(0.9);
  expect(share.common * share.third).toBeGreaterThan(COMMON_SHARE);
  expect(share.rare).toBeLessThan(COMMON_SHARE);
});

test.each(sorts)(
  "common include tags: the named statement gives the planned one's pages (sort=%s %s)",
  async (sort, order) => {
    for (const tags of [['common'], ['third', 'common']]) {
      for (const read of ['text', 'objects'] as const) {
        const seen = new AssetRepository(db.prisma, db.pool);
        const { seen: a, fresh: b } = await walk(seen, listQuery({ includeTags: tags, sort, order }), read);
        expect(a.pages.length).toBeGreaterThan(5);
        expect(a.pages).toEqual(b.pages);
        // The first page planned, every later one named; the fresh repository planned every page.
        expect({ named: a.named, unnamed: a.unnamed }).toEqual({ named: a.pages.length - 1, unnamed: 1 });
        expect({ named: b.named, unnamed: b.unnamed }).toEqual({ named: 0, unnamed: b.pages.length });
      }
    }
  },
);

test.each(sorts)('rare include tags stay with the planned statement (sort=%s %s)', async (sort, order) => {
  for (const tags of [['rare'], ['third', 'rare'], ['absent']]) {
    const seen = new AssetRepository(db.prisma, db.pool);
    const { seen: a, fresh: b } = await walk(seen, listQuery({ includeTags: tags, sort, order }), 'text');
    expect(a.pages).toEqual(b.pages);
    expect(a.named).toBe(0);
  }
});

test('offset pages (no cursor) of common tags are the same by either statement', async () => {
  const seen = new AssetRepository(db.prisma, db.pool);
  const q = (offset: number) => listQuery({ includeTags: ['common'], offset, limit: 11, sort: 'size', order: 'asc' });
  await seen.list(OWNER, q(0));
  for (const offset of [0, 11, 200, 355, 1000]) {
    sent = [];
    const a = await seen.pageIfChanged(OWNER, q(offset), undefined, undefined);
    expect(sent.map((s) => Boolean(s.name))).toEqual([true]);
    expect(a).toEqual(
      await new AssetRepository(db.prisma, db.pool).pageIfChanged(OWNER, q(offset), undefined, undefined),
    );
  }
});

test('tags that stop being common between two pages: the named statement reads no page and the planned one reads it', async () => {
  const seen = new AssetRepository(db.prisma, db.pool);
  const q = listQuery({ includeTags: ['third'] });
  const first = await seen.pageIfChanged(OWNER, q, undefined, undefined);
  const second = await seen.pageIfChanged(OWNER, q, decodeCursor(first!.nextCursor!, 'created_at', 'desc'), undefined);
  // Most `third` tags removed (the last test of this file): the rest is under COMMON_SHARE of the owner's assets.
  await sql.query(
    `UPDATE asset SET tags = array_remove(tags, 'third') WHERE owner_id = $1 AND 'third' = ANY(tags) AND size % 5 <> 0`,
    [OWNER],
  );
  const after = decodeCursor(second!.nextCursor!, 'created_at', 'desc');
  sent = [];
  const third = await seen.pageIfChanged(OWNER, q, after, undefined);
  expect(sent.map((s) => Boolean(s.name))).toEqual([true, false]);
  expect(third!.items.length).toBeGreaterThan(0);
  expect(third).toEqual(await new AssetRepository(db.prisma, db.pool).pageIfChanged(OWNER, q, after, undefined));
  // And from then on, the planned statement only.
  sent = [];
  await seen.pageIfChanged(OWNER, q, after, undefined);
  expect(sent.map((s) => Boolean(s.name))).toEqual([false]);
});
