/**
 * The listing's page statements (GET /api/assets, GraphQL `assets`), checked in as text beside the repository (as immich's
 * src/queries/*.sql): a change of the SQL the code sends shows in review as a change of the snapshot. This test fails
 * when the two differ; `npm run sql:snapshots` writes the snapshot again from the code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pageSql, type PageForm } from '../../src/domain/assets/listing-sql';
import type { AssetListQuery } from '../../src/domain/assets/asset.types';
import type { CursorPosition } from '../../src/domain/assets/cursor';
import { PAGE_COLUMNS } from '../../src/domain/assets/asset.repository';
import { listQuery as query } from '../helpers/list-query';

const SNAPSHOT = path.join(__dirname, '../../src/domain/assets/queries/asset-page.sql');

const after: CursorPosition = { value: '2026-11-27T00:00:00.000Z', id: '00000000-0000-4000-8000-000000000001' };

/** One statement of each form the page is read in (AssetRepository's PageForm), first and later pages. */
const CASES: { name: string; q: AssetListQuery; after?: CursorPosition; form: PageForm; withCommon: boolean }[] = [
  { name: 'first page, no filter', q: query({}), form: 'owner', withCommon: false },
  { name: 'page after a cursor, no filter', q: query({}), after, form: 'owner', withCommon: false },
  {
    name: 'include tags, planned per request',
    q: query({ includeTags: ['models', 'loras'] }),
    form: 'planned',
    withCommon: true,
  },
  {
    name: 'include tags that were common, after a cursor',
    q: query({ includeTags: ['models', 'loras'] }),
    after,
    form: 'commonTags',
    withCommon: true,
  },
  {
    name: 'other filters, by name ascending',
    q: query({
      sort: 'name',
      order: 'asc',
      excludeTags: ['output'],
      anyTags: ['a', 'b'],
      nameContains: 'sd',
      metadataFilter: { k: 1 },
    }),
    form: 'planned',
    withCommon: false,
  },
];

function snapshotText(): string {
  const parts = CASES.map((c) => {
    const sql = pageSql('owner', c.q, c.after, PAGE_COLUMNS, c.form, c.withCommon);
    const values = sql.values.map((v, i) => `--   $${i + 1} = ${JSON.stringify(v)}`).join('\n');
    return `-- ${c.name} (${c.form})\n${values}\n${sql.text.trim()};\n`;
  });
  return `-- The listing's page statements (src/domain/assets/asset.repository.ts): written by npm run sql:snapshots\n\n${parts.join('\n')}`;
}

test("the listing's SQL equals its checked-in snapshot", () => {
  const text = snapshotText();
  if (process.env.UPDATE_SQL_SNAPSHOTS === '1') {
    fs.mkdirSync(path.dirname(SNAPSHOT), { recursive: true });
    fs.writeFileSync(SNAPSHOT, text);
  }
  expect(fs.existsSync(SNAPSHOT) ? fs.readFileSync(SNAPSHOT, 'utf8') : '(no snapshot)').toBe(text);
});
