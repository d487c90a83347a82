/**
 * The lookups and list filters must use an index. The repositories run against a few thousand rows; every SQL
 * statement they send is captured at the pg driver (so this explains the exact text and parameters Prisma and the
 * raw queries produce, not copies) and EXPLAINed. No plan may Seq Scan asset or content; sorted lists must come
 * in index order (no Sort node). Set SHOW_PLANS=1 to print the plans.
 */
import { Client } from 'pg';
import { AssetRepository } from '../../src/domain/assets/asset.repository';
import { ASSET_SORTS } from '../../src/domain/assets/asset.types';
import { ContentRepository } from '../../src/domain/content/content.repository';
import { createDatabase, type Database } from '../../src/infra/prisma';
import { createTestDatabase } from '../helpers/harness';
import { listQuery } from '../helpers/list-query';
import { recordQueries } from '../helpers/record-queries';

const ROWS = 5000;
const OWNERS = 50;
const OWNER = 'owner7';

interface Captured {
  text: string;
  values: unknown[];
}

let url: string;
let db: Database;
let explainer: Client;
let captured: Captured[] = [];

beforeAll(async () => {
  url = await createTestDatabase();
  const seed = new Client({ connectionString: url });
  await seed.connect();
  // Content i is referred to by asset i; owners, tags and metadata are spread so one owner holds 2% of the rows.
  await seed.query(`
    INSERT INTO content (blake3, sha256, size, mime_type, first_name)
    SELECT encode(sha256(('b' || i)::bytea), 'hex'), encode(sha256(('s' || i)::bytea), 'hex'), i, 'application/octet-stream', 'f' || i
    FROM generate_series(1, ${ROWS}) AS i;
    INSERT INTO asset (id, owner_id, name, content_hash, size, mime_type, tags, user_metadata, created_at, updated_at, last_access_time)
    SELECT gen_random_uuid(), 'owner' || (i % ${OWNERS}), 'asset-' || md5(i::text), encode(sha256(('b' || i)::bytea), 'hex'), i,
      'application/octet-stream', ARRAY['models', 'tag' || (i % 97)], jsonb_build_object('k', i % 211, 'kind', 'lora'),
      now() - i * interval '1 minute', now() - (i % 313) * interval '1 minute', now() - (i % 701) * interval '1 second'
    FROM generate_series(1, ${ROWS}) AS i;
    ANALYZE content;
    ANALYZE asset;`);
  await seed.end();
  db = createDatabase(url, 2);
  capture(db);
  explainer = new Client({ connectionString: url });
  await explainer.connect();
});

/** Record what the repositories send. */
const capture = (db: Database): void => recordQueries(db, (q) => captured.push({ text: q.text, values: q.values }));

afterAll(async () => {
  await explainer?.end();
  await db?.close();
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

const flatten = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(flatten)];

/** Runs `fn`, then EXPLAINs every statement it sent (its data statements; not BEGIN/COMMIT and the like). */
async function plansOf(fn: () => Promise<unknown>): Promise<{ sql: string; nodes: PlanNode[]; text: string }[]> {
  captured = [];
  await fn();
  const statements = captured.filter((c) => /^\s*(SELECT|UPDATE|DELETE|WITH)\b/i.test(c.text));
  if (statements.length === 0) throw new Error('no statement was captured');
  const out = [];
  for (const s of statements) {
    const json = await explainer.query({ text: `EXPLAIN (FORMAT JSON) ${s.text}`, values: s.values });
    const text = await explainer.query({ text: `EXPLAIN ${s.text}`, values: s.values });
    const plan = (json.rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan;
    out.push({
      sql: s.text.replace(/\s+/g, ' '),
      nodes: flatten(plan),
      text: text.rows.map((r) => r['QUERY PLAN']).join('\n'),
    });
  }
  if (process.env.SHOW_PLANS) for (const p of out) console.log(`${p.sql}\n${p.text}`);
  return out;
}

/** No sequential scan of asset or content, and each of them that is read is read through an index. */
function expectIndexed(plans: { sql: string; nodes: PlanNode[]; text: string }[], opts: { noSort?: boolean } = {}) {
  for (const p of plans) {
    const ctx = `${p.sql}\n${p.text}`;
    const seq = p.nodes.filter(
      (n) => n['Node Type'] === 'Seq Scan' && ['asset', 'content'].includes(n['Relation Name'] ?? ''),
    );
    expect({ seqScans: seq.map((n) => n['Relation Name']), plan: ctx }).toEqual({ seqScans: [], plan: ctx });
    // A statement that reads neither (the owner's one-row version in asset_owner_stats, a table the planner may
    // scan whole while it is a page or two) has nothing to check here.
    if (!p.nodes.some((n) => ['asset', 'content'].includes(n['Relation Name'] ?? ''))) continue;
    const indexed = p.nodes.filter((n) => /Index/.test(n['Node Type']) && n['Index Name']);
    expect({ indexScans: indexed.length > 0, plan: ctx }).toEqual({ indexScans: true, plan: ctx });
    if (opts.noSort && /ORDER BY/i.test(p.sql)) {
      const sorts = p.nodes.filter((n) => /Sort/.test(n['Node Type']));
      expect({ sorts: sorts.map((n) => n['Node Type']), plan: ctx }).toEqual({ sorts: [], plan: ctx });
    }
  }
}

const indexNames = (plans: { nodes: PlanNode[] }[]) =>
  plans.flatMap((p) => p.nodes.map((n) => n['Index Name']).filter(Boolean));

async function anAsset(): Promise<{ id: string; blake3: string; sha256: string }> {
  const r = await explainer.query(
    `SELECT a.id::text AS id, c.blake3, c.sha256 FROM asset a JOIN content c ON c.blake3 = a.content_hash
    WHERE a.owner_id = $1 LIMIT 1`,
    [OWNER],
  );
  return r.rows[0];
}

test('asset by id (and the owner check) uses the primary key', async () => {
  // With the pool, as the container builds it: findById then runs as a prepared pg statement.
  const assets = new AssetRepository(db.prisma, db.pool);
  const { id } = await anAsset();
  const plans = await plansOf(() => assets.findById(OWNER, id));
  expectIndexed(plans);
  expect(indexNames(plans)).toContain('asset_pkey');
});

test('content by blake3 and by sha256 use their unique indexes (find and exists)', async () => {
  const content = new ContentRepository(db.prisma, db.pool, db.transactions);
  const { blake3, sha256 } = await anAsset();
  const byBlake3 = await plansOf(async () => {
    await content.find({ algorithm: 'blake3', hex: blake3 });
    await content.exists({ algorithm: 'blake3', hex: blake3 });
  });
  expectIndexed(byBlake3);
  expect(indexNames(byBlake3)).toEqual(['content_pkey', 'content_pkey']);
  const bySha256 = await plansOf(async () => {
    await content.find({ algorithm: 'sha256', hex: sha256 });
    await content.exists({ algorithm: 'sha256', hex: sha256 });
  });
  expectIndexed(bySha256);
  expect(indexNames(bySha256)).toEqual(['content_sha256_key', 'content_sha256_key']);
});

test("an owner's asset for a content (dedupe) and the content's asset count use indexes", async () => {
  const assets = new AssetRepository(db.prisma, db.pool);
  const { blake3 } = await anAsset();
  expectIndexed(await plansOf(() => assets.findByContent(OWNER, blake3)));
  expectIndexed(await plansOf(() => assets.countByContent(blake3)));
});

test('list with include_tags uses an index (rows and total)', async () => {
  const assets = new AssetRepository(db.prisma, db.pool);
  const plans = await plansOf(() => assets.list(OWNER, listQuery({ includeTags: ['tag5'] })));
  // One statement: the page beside the maintained counts (which give a one-tag total).
  expect(plans).toHaveLength(1);
  expectIndexed(plans);
});

test('list with metadata_filter uses an index (rows, maintained counts, total)', async () => {
  const assets = new AssetRepository(db.prisma, db.pool);
  const plans = await plansOf(() => assets.list(OWNER, listQuery({ metadataFilter: { k: 5 } })));
  // The page with the maintained counts, then the count stopped at 10,001.
  expect(plans).toHaveLength(2);
  expectIndexed(plans);
});

test('an unfiltered list and a one-tag list take their total from the maintained counts: only the page reads asset', async () => {
  // Counting up to 10,001 rows per page was the cost of a heavy user's listing (issue 12, BENCHMARKS.md).
  const assets = new AssetRepository(db.prisma, db.pool);
  for (const q of [listQuery({}), listQuery({ includeTags: ['tag5'] }), listQuery({ excludeTags: ['tag5'] })]) {
    const plans = await plansOf(() => assets.list(OWNER, q));
    const readingAsset = plans.filter((p) => p.nodes.some((n) => n['Relation Name'] === 'asset'));
    expect(readingAsset.map((p) => p.sql)).toEqual([
      expect.stringMatching(/ORDER BY created_at DESC, asset\.id DESC LIMIT/),
    ]);
    expect(plans.some((p) => /FROM asset_owner_stats|JOIN asset_owner_stats/.test(p.sql))).toBe(true);
  }
});

test('include_tags and metadata_filter across a selective value use the GIN indexes', async () => {
  // For an owner with few rows the owner index is as good; when the owner has most rows the GIN index must serve.
  const c = explainer;
  await c.query(`UPDATE asset SET owner_id = $1`, ['everyone']);
  await c.query('ANALYZE asset');
  try {
    const assets = new AssetRepository(db.prisma, db.pool);
    const tags = await plansOf(() => assets.list('everyone', listQuery({ includeTags: ['tag5'] })));
    expectIndexed(tags);
    expect(indexNames(tags)).toContain('asset_tags_idx');
    const meta = await plansOf(() => assets.list('everyone', listQuery({ metadataFilter: { k: 5 } })));
    expectIndexed(meta);
    expect(indexNames(meta)).toContain('asset_user_metadata_idx');
  } finally {
    await c.query(`UPDATE asset SET owner_id = 'owner' || (size % ${OWNERS})`);
    await c.query('ANALYZE asset');
  }
});

test.each(ASSET_SORTS.flatMap((sort) => (['asc', 'desc'] as const).map((order) => [sort, order] as const)))(
  "one owner's list sorted by %s %s is read in index order",
  async (sort, order) => {
    const assets = new AssetRepository(db.prisma, db.pool);
    const plans = await plansOf(() => assets.list(OWNER, listQuery({ sort, order })));
    expectIndexed(plans, { noSort: true });
  },
);

test("an owner's tag counts use an index", async () => {
  const assets = new AssetRepository(db.prisma, db.pool);
  expectIndexed(await plansOf(() => assets.listTags(OWNER, { limit: 100, offset: 0, order: 'count_desc' })));
});

/** The boundary of a cursor page deep in one owner's list (the 60th row of that sort). */
async function boundary(
  sort: 'name' | 'created_at' | 'updated_at' | 'size',
): Promise<{ value: string | number; id: string }> {
  const r = await explainer.query(
    `SELECT ${sort} AS v, id::text AS id FROM asset WHERE owner_id = $1 ORDER BY ${sort}, id OFFSET 60 LIMIT 1`,
    [OWNER],
  );
  const v = r.rows[0].v;
  return { value: v instanceof Date ? v.toISOString() : sort === 'size' ? Number(v) : v, id: r.rows[0].id };
}

test.each(
  (['name', 'created_at', 'updated_at', 'size'] as const).flatMap((sort) =>
    (['asc', 'desc'] as const).map((order) => [sort, order] as const),
  ),
)(
  'a cursor page sorted by %s %s starts inside the (owner, column, id) index: no Sort, no scan of the rows before it',
  async (sort, order) => {
    const assets = new AssetRepository(db.prisma, db.pool);
    const after = await boundary(sort);
    const plans = await plansOf(() => assets.list(OWNER, listQuery({ sort, order }), after));
    expectIndexed(plans, { noSort: true });
    const page = plans.find((p) => /ORDER BY/i.test(p.sql))!;
    // The row comparison is an Index Cond of the sort index, so the scan starts at the cursor.
    expect({ plan: page.text }).toEqual({
      plan: expect.stringMatching(new RegExp(`Index Cond: .*\\(ROW\\(${sort}, id\\) [<>]`)),
    });
    expect(indexNames([page])).toContain(`asset_owner_id_${sort}_id_idx`);
  },
);

test('a count the maintained counts cannot answer stops after 10,001 rows (a Limit under the aggregate)', async () => {
  const assets = new AssetRepository(db.prisma, db.pool);
  const plans = await plansOf(() => assets.list(OWNER, listQuery({ nameContains: 'asset-' })));
  const count = plans.find((p) => /count\(\*\)/i.test(p.sql))!;
  expect(count.nodes.map((n) => n['Node Type'])).toContain('Limit');
  expect(count.sql).toMatch(/LIMIT \$\d+\) AS m/);
});

test('tags_any, tags_none and hash filters use indexes', async () => {
  const assets = new AssetRepository(db.prisma, db.pool);
  const a = await anAsset();
  expectIndexed(
    await plansOf(() => assets.list(OWNER, listQuery({ anyTags: ['tag5', 'tag6'], excludeTags: ['tag7'] }))),
  );
  const byBlake3 = await plansOf(() => assets.list(OWNER, listQuery({ hash: { algorithm: 'blake3', hex: a.blake3 } })));
  expectIndexed(byBlake3);
  expect(indexNames(byBlake3).some((n) => /^asset_(owner_id_)?content_hash_/.test(n!))).toBe(true);
  const bySha = await plansOf(() => assets.list(OWNER, listQuery({ hash: { algorithm: 'sha256', hex: a.sha256 } })));
  expectIndexed(bySha);
  expect(indexNames(bySha)).toContain('content_sha256_key');
});

test('the refine facets and the null/object metadata_filter terms read one owner through an index', async () => {
  const assets = new AssetRepository(db.prisma, db.pool);
  expectIndexed(await plansOf(() => assets.tagFacets(OWNER, { includeTags: ['models'], excludeTags: [] }, 100)));
  expectIndexed(
    await plansOf(() => assets.list(OWNER, listQuery({ metadataFilter: { k: [5, null], kind: { a: 1 } } }))),
  );
});

test('GET /api/tags reads the maintained counts table by owner', async () => {
  const assets = new AssetRepository(db.prisma, db.pool);
  const plans = await plansOf(() => assets.listTags(OWNER, { limit: 100, offset: 0, order: 'count_desc' }));
  expect(plans.every((p) => /FROM asset_tag_count/.test(p.sql))).toBe(true);
  expect(indexNames(plans).some((n) => /^asset_tag_count_/.test(n!))).toBe(true);
});

test("a job's assets (GET /api/jobs/{job_id}/assets) are read through the owner's prompt_id index, page and count", async () => {
  const assets = new AssetRepository(db.prisma, db.pool);
  const job = '00000000-0000-4000-8000-00000000002a';
  const plans = await plansOf(async () => {
    await assets.listByJob(OWNER, job, 20, 0);
  });
  expectIndexed(plans);
  expect(indexNames(plans)).toContain('asset_owner_id_prompt_id_created_at_id_idx');
});

test('the metadata backfill walks the primary key in order: no Sort of the remaining rows per batch', async () => {
  // ORDER BY id named the output column (id::text): each batch sorted every row after it (O(n²) over a big table).
  const assets = new AssetRepository(db.prisma, db.pool);
  const plans = await plansOf(() => assets.fillMissingMetadata('00000000-0000-0000-0000-000000000000', 500));
  const walk = plans.find((p) => /ORDER BY/i.test(p.sql))!;
  expect({
    sorts: walk.nodes.filter((n) => /Sort/.test(n['Node Type'])).map((n) => n['Node Type']),
    plan: walk.text,
  }).toEqual({ sorts: [], plan: walk.text });
  expect(indexNames([walk])).toContain('asset_pkey');
});

test.each(
  (['name', 'created_at', 'updated_at', 'size', 'last_access_time'] as const).flatMap((sort) =>
    (['asc', 'desc'] as const).map((order) => [sort, order] as const),
  ),
)(
  "GET /api/assets' statement (its read model's columns as text) sorted by %s %s is read in index order, from the cursor on",
  async (sort, order) => {
    const assets = new AssetRepository(db.prisma, db.pool);
    expectIndexed(await plansOf(() => assets.pageIfChanged(OWNER, listQuery({ sort, order }), undefined, undefined)), {
      noSort: true,
    });
    if (sort === 'last_access_time') return;
    const after = await boundary(sort);
    const plans = await plansOf(() => assets.pageIfChanged(OWNER, listQuery({ sort, order }), after, undefined));
    expectIndexed(plans, { noSort: true });
    expect({ plan: plans[0]!.text }).toEqual({
      plan: expect.stringMatching(new RegExp(`Index Cond: .*\\(ROW\\(${sort}, id\\) [<>]`)),
    });
  },
);

test("GET /api/assets' named page statement keeps its generic plan: it is not planned again per request", async () => {
  // With LIMIT and OFFSET as plain parameters the generic plan's estimate (a tenth of an owner's rows) was hundreds of
  // times a custom plan's, so PostgreSQL planned the page anew on every execution: ~0.3 ms of its 1.3 ms of CPU per
  // page at 500,000 assets (bench/profiles/listing-pg-cost.cjs). Here one owner holds every row, as in that benchmark.
  await explainer.query(`UPDATE asset SET owner_id = $1`, ['everyone']);
  await explainer.query('ANALYZE asset');
  const one = createDatabase(url, 1);
  try {
    const assets = new AssetRepository(one.prisma, one.pool);
    const first = await assets.pageIfChanged('everyone', listQuery({ limit: 100 }), undefined, undefined);
    let after = { value: first!.items.at(-1)!.createdAt.toISOString(), id: first!.items.at(-1)!.id };
    for (let i = 0; i < 12; i++) {
      const page = await assets.pageIfChanged('everyone', listQuery({ limit: 20 }), after, undefined);
      after = { value: page!.items.at(-1)!.createdAt.toISOString(), id: page!.items.at(-1)!.id };
    }
    const { rows } = await one.pool.query<{ statement: string; generic_plans: string; custom_plans: string }>(
      `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%LEFT JOIN LATERAL%'`,
    );
    // Two statements (first page, cursor page); PostgreSQL tries five custom plans before it compares.
    expect(rows).toHaveLength(2);
    const cursorPage = rows.find((r) => /ROW|\) < \(/.test(r.statement))!;
    expect({ generic: Number(cursorPage.generic_plans), custom: Number(cursorPage.custom_plans) }).toEqual({
      generic: 7,
      custom: 5,
    });
  } finally {
    await one.close();
    await explainer.query(`UPDATE asset SET owner_id = 'owner' || (size % ${OWNERS})`);
    await explainer.query('ANALYZE asset');
  }
});

test("common include tags: the named page statement's generic plan is the sort index's scan from the cursor, tags as a Filter, and is kept", async () => {
  // The tagged page was unnamed (planned per request: a rare tag wants the GIN index, a common one the sort index),
  // ~0.26 ms of PostgreSQL's 1.4 ms per page at 1,000,000 assets. Once a page said the tags are common, the next is
  // sent named, in a form the GIN index cannot serve (AssetRepository's PageForm). `models` is on every row here.
  await explainer.query(`UPDATE asset SET owner_id = $1`, ['everyone']);
  await explainer.query('ANALYZE asset');
  const one = createDatabase(url, 1);
  capture(one);
  try {
    const assets = new AssetRepository(one.prisma, one.pool);
    const q = listQuery({ includeTags: ['models'], limit: 20 });
    const first = await assets.pageIfChanged('everyone', q, undefined, undefined);
    let after = { value: first!.items.at(-1)!.createdAt.toISOString(), id: first!.items.at(-1)!.id };
    captured = [];
    for (let i = 0; i < 12; i++) {
      const page = await assets.pageIfChanged('everyone', q, after, undefined);
      after = { value: page!.items.at(-1)!.createdAt.toISOString(), id: page!.items.at(-1)!.id };
    }
    const page = captured.find((c) => /LEFT JOIN LATERAL/.test(c.text))!;
    const { rows } = await one.pool.query<{ name: string; generic_plans: string; custom_plans: string }>(
      `SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%coalesce(tags%'`,
    );
    expect(rows).toHaveLength(1);
    expect({ generic: Number(rows[0]!.generic_plans), custom: Number(rows[0]!.custom_plans) }).toEqual({
      generic: 7,
      custom: 5,
    });
    // The generic plan itself, on the connection that holds the statement.
    const lit = (v: unknown): string =>
      Array.isArray(v)
        ? `ARRAY[${v.map(lit).join(',')}]::text[]`
        : typeof v === 'number'
          ? String(v)
          : `'${String(v).replace(/'/g, "''")}'`;
    const conn = await one.pool.connect();
    try {
      await conn.query('SET plan_cache_mode = force_generic_plan');
      const plan = await conn.query(`EXPLAIN EXECUTE ${rows[0]!.name}(${page.values.map(lit).join(', ')})`);
      const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      if (process.env.SHOW_PLANS) console.log(text);
      expect({ plan: text }).toEqual({
        plan: expect.stringMatching(
          /Index Scan Backward using asset_owner_id_created_at_id_idx on asset[^\n]*\n\s+Index Cond: \(\(owner_id = \$\d+\) AND \(ROW\(created_at, id\) < ROW\(/,
        ),
      });
      // The tags as an InitPlan: unknown to custom plans too, so their estimate is the generic plan's, which is kept.
      expect({ plan: text }).toEqual({
        plan: expect.stringMatching(/Filter: \(COALESCE\(tags, '\{\}'::text\[\]\) @> \(InitPlan \d+\)\.col1\)/),
      });
      expect({ plan: text }).toEqual({ plan: expect.stringMatching(/One-Time Filter/) });
      expect({ plan: text }).toEqual({ plan: expect.not.stringMatching(/asset_tags_idx|Sort|Seq Scan on asset\b/) });
    } finally {
      await conn.query('RESET plan_cache_mode');
      conn.release();
    }
  } finally {
    await one.close();
    await explainer.query(`UPDATE asset SET owner_id = 'owner' || (size % ${OWNERS})`);
    await explainer.query('ANALYZE asset');
  }
});
