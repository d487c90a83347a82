/**
 * prisma/schema.prisma and the SQL migrations must describe the same database. `prisma migrate diff` needs a
 * schema engine binary, so this test does its job by hand: the DDL Prisma would generate from schema.prisma
 * (test/helpers/prisma-schema.ts) is applied to an empty database, and both that database and one built by the
 * migrations are introspected from the catalog (tables, columns with type/nullability/default, indexes with columns,
 * order, method, opclass and uniqueness, constraints with their actions, enums) and compared.
 *
 * It also checks src/infra/migrate.ts keeps `_prisma_migrations` the way `prisma migrate deploy` does.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { createLogger } from '../../src/infra/logger';
import { migrate } from '../../src/infra/migrate';
import { createTestDatabase } from '../helpers/harness';
import { parsePrismaSchema, prismaDdl } from '../helpers/prisma-schema';

const ROOT = path.join(__dirname, '..', '..');
const MIGRATIONS_DIR = path.join(ROOT, 'prisma', 'migrations');
const logger = createLogger('silent');

/** An empty database (no migrations, no pg-boss) in the test cluster. */
async function createEmptyDatabase(): Promise<string> {
  const template = process.env.TEST_PG_TEMPLATE_URL;
  if (!template) throw new Error('TEST_PG_TEMPLATE_URL is unset: run through jest (global-setup)');
  const name = `e_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: template.replace(/\/template_assets$/, '/postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`);
  } finally {
    await admin.end();
  }
  return template.replace(/\/template_assets$/, `/${name}`);
}

async function withClient<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * The public schema as facts, `object → description`, both sides read the same way so PostgreSQL's own rendering
 * of types, defaults and constraint definitions is compared. `_prisma_migrations` (and the pgboss schema) are not
 * part of the model.
 */
async function introspect(c: Client): Promise<Map<string, string>> {
  const facts = new Map<string, string>();
  const tables = await c.query<{
    t: string;
  }>(`SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname <> '_prisma_migrations'`);
  for (const { t } of tables.rows) facts.set(`table ${t}`, 'exists');

  const columns = await c.query<{
    t: string;
    col: string;
    type: string;
    notnull: boolean;
    dflt: string | null;
    identity: string;
    generated: string;
  }>(
    `SELECT c.relname AS t, a.attname AS col, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS notnull,
       pg_get_expr(d.adbin, d.adrelid) AS dflt, a.attidentity AS identity, a.attgenerated AS generated
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname <> '_prisma_migrations' AND a.attnum > 0 AND NOT a.attisdropped`,
  );
  for (const r of columns.rows) {
    facts.set(
      `column ${r.t}.${r.col}`,
      `${r.type} ${r.notnull ? 'NOT NULL' : 'NULL'}${r.dflt !== null ? ` DEFAULT ${r.dflt}` : ''}${r.identity ? ` IDENTITY ${r.identity}` : ''}${r.generated ? ` GENERATED ${r.generated}` : ''}`,
    );
  }

  const indexes = await c.query<{
    name: string;
    t: string;
    unique: boolean;
    primary: boolean;
    method: string;
    keys: string[];
    pred: string | null;
  }>(
    `SELECT i.relname AS name, t.relname AS t, ix.indisunique AS unique, ix.indisprimary AS primary, am.amname AS method,
       pg_get_expr(ix.indpred, ix.indrelid) AS pred,
       ARRAY(SELECT pg_get_indexdef(ix.indexrelid, k, true)
                    || CASE WHEN (ix.indoption[k - 1] & 1) = 1 THEN ' DESC' ELSE '' END
                    || CASE WHEN (ix.indoption[k - 1] & 2) = 2 THEN ' NULLS FIRST' ELSE '' END
                    || CASE WHEN oc.opcdefault THEN '' ELSE ' ' || oc.opcname END
             FROM generate_series(1, ix.indnkeyatts) AS k JOIN pg_opclass oc ON oc.oid = ix.indclass[k - 1]
             ORDER BY k) AS keys
     FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid
     JOIN pg_namespace n ON n.oid = t.relnamespace JOIN pg_am am ON am.oid = i.relam
     WHERE n.nspname = 'public' AND t.relname <> '_prisma_migrations'`,
  );
  for (const r of indexes.rows) {
    const kind = r.primary ? 'PRIMARY KEY' : r.unique ? 'UNIQUE' : 'INDEX';
    facts.set(
      `index ${r.name}`,
      `${kind} ON ${r.t} USING ${r.method} (${r.keys.join(', ')})${r.pred ? ` WHERE ${r.pred}` : ''}`,
    );
  }

  const constraints = await c.query<{ name: string; t: string; def: string }>(
    `SELECT con.conname AS name, t.relname AS t, pg_get_constraintdef(con.oid, true) AS def
     FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = 'public' AND t.relname <> '_prisma_migrations'`,
  );
  // pg_get_constraintdef leaves out the default actions; spell them out so the diff says what is meant.
  for (const r of constraints.rows) {
    let def = r.def;
    if (def.startsWith('FOREIGN KEY')) {
      if (!/ON UPDATE/.test(def)) def += ' ON UPDATE NO ACTION';
      if (!/ON DELETE/.test(def)) def += ' ON DELETE NO ACTION';
    }
    facts.set(`constraint ${r.name}`, `ON ${r.t}: ${def}`);
  }

  const enums = await c.query<{ name: string; labels: string[] }>(
    `SELECT t.typname AS name, ARRAY(SELECT e.enumlabel FROM pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder) AS labels
     FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = 'public' AND t.typtype = 'e'`,
  );
  for (const r of enums.rows) facts.set(`enum ${r.name}`, r.labels.join(', '));

  const sequences = await c.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'S'`,
  );
  for (const r of sequences.rows) facts.set(`sequence ${r.name}`, 'exists');
  return facts;
}

/** A readable diff of two fact maps; '' when they agree. */
function diffFacts(migrations: Map<string, string>, prisma: Map<string, string>): string {
  const lines: string[] = [];
  for (const k of [...new Set([...migrations.keys(), ...prisma.keys()])].sort()) {
    const a = migrations.get(k);
    const b = prisma.get(k);
    if (a === b) continue;
    lines.push(`  ${k}`, `    migrations:    ${a ?? '(missing)'}`, `    schema.prisma: ${b ?? '(missing)'}`);
  }
  return lines.join('\n');
}

describe('the Prisma schema parser', () => {
  test('renders Prisma DDL for the constructs this project uses', () => {
    const ddl = prismaDdl(
      parsePrismaSchema(`
        // comment with "quotes" and { braces }
        enum Status {
          created
          running @map("RUNNING")
          @@map("status")
        }
        model Parent {
          id    String   @id @default(uuid()) @db.Uuid /// doc
          key   String   @unique(map: "parent_key_custom") @db.VarChar(40)
          meta  Json     @default("{\\"a\\": \\"}\\"}")
          kids  Child[]
          @@map("parent")
        }
        model Child {
          n        Int      @default(autoincrement())
          parentId String?  @map("parent_id") @db.Uuid
          status   Status   @default(created)
          at       DateTime @updatedAt
          at2      DateTime @default(now()) @db.Timestamptz(3)
          tags     String[] @default(["a", "b"])
          parent   Parent?  @relation(fields: [parentId], references: [id])
          @@id([n, status])
          @@unique([parentId, status])
          @@index([at(sort: Desc), n], map: "child_at")
          @@index([tags], type: Gin)
        }`),
    );
    expect(ddl).toEqual([
      `CREATE TYPE "status" AS ENUM ('created', 'RUNNING')`,
      `CREATE TABLE "parent" (\n  "id" UUID NOT NULL,\n  "key" VARCHAR(40) NOT NULL,\n  "meta" JSONB NOT NULL DEFAULT '{"a": "}"}',\n  CONSTRAINT "parent_pkey" PRIMARY KEY ("id")\n)`,
      `CREATE TABLE "Child" (\n  "n" SERIAL NOT NULL,\n  "parent_id" UUID,\n  "status" "status" NOT NULL DEFAULT 'created',\n  "at" TIMESTAMP(3) NOT NULL,\n  "at2" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,\n  "tags" TEXT[] DEFAULT ARRAY['a', 'b']::TEXT[],\n  CONSTRAINT "Child_pkey" PRIMARY KEY ("n", "status")\n)`,
      `CREATE UNIQUE INDEX "parent_key_custom" ON "parent"("key")`,
      `CREATE UNIQUE INDEX "Child_parent_id_status_key" ON "Child" ("parent_id", "status")`,
      `CREATE INDEX "child_at" ON "Child" ("at" DESC, "n")`,
      `CREATE INDEX "Child_tags_idx" ON "Child" USING GIN ("tags")`,
      `ALTER TABLE "Child" ADD CONSTRAINT "Child_parent_id_fkey" FOREIGN KEY ("parent_id") REFERENCES "parent"("id") ON DELETE SET NULL ON UPDATE CASCADE`,
    ]);
  });

  test('refuses what it does not understand', () => {
    expect(() => parsePrismaSchema('view V {\n id Int @id\n}')).toThrow(/does not know "view"/);
    expect(() => parsePrismaSchema('model M {\n x Unsupported("tsvector")\n}')).toThrow(/unsupported field type/);
    expect(() =>
      prismaDdl(parsePrismaSchema('model A {\n id Int @id\n bs B[]\n}\nmodel B {\n id Int @id\n as A[]\n}')),
    ).toThrow(/many-to-many/);
  });
});

describe('schema.prisma and prisma/migrations agree', () => {
  test('tables, columns, indexes, constraints and enums are identical', async () => {
    const ddl = prismaDdl(parsePrismaSchema(fs.readFileSync(path.join(ROOT, 'prisma', 'schema.prisma'), 'utf8')));
    const [migratedUrl, expectedUrl] = await Promise.all([createTestDatabase(), createEmptyDatabase()]);
    const fromMigrations = await withClient(migratedUrl, introspect);
    const fromPrisma = await withClient(expectedUrl, async (c) => {
      for (const stmt of ddl) {
        await c.query(stmt).catch((err: Error) => {
          throw new Error(`the DDL generated from schema.prisma failed: ${err.message}\n${stmt}`);
        });
      }
      return introspect(c);
    });
    expect(fromPrisma.size).toBeGreaterThan(20);
    const diff = diffFacts(fromMigrations, fromPrisma);
    if (diff) throw new Error(`schema.prisma and prisma/migrations disagree:\n${diff}`);
  });
});

describe('src/infra/migrate.ts', () => {
  const files = fs
    .readdirSync(MIGRATIONS_DIR)
    .filter((d) => fs.existsSync(path.join(MIGRATIONS_DIR, d, 'migration.sql')))
    .sort();
  const checksum = (name: string) =>
    crypto
      .createHash('sha256')
      .update(fs.readFileSync(path.join(MIGRATIONS_DIR, name, 'migration.sql')))
      .digest('hex');

  test('records _prisma_migrations as prisma migrate deploy does, and is idempotent', async () => {
    const url = await createEmptyDatabase();
    expect(await migrate(url, logger)).toEqual(files);
    expect(await migrate(url, logger)).toEqual([]);
    await withClient(url, async (c) => {
      // The table exactly as Prisma's schema engine creates it.
      const cols = await c.query(
        `SELECT column_name, data_type, character_maximum_length AS len, is_nullable, column_default
         FROM information_schema.columns WHERE table_schema = 'public' AND table_name = '_prisma_migrations' ORDER BY ordinal_position`,
      );
      expect(cols.rows).toEqual([
        { column_name: 'id', data_type: 'character varying', len: 36, is_nullable: 'NO', column_default: null },
        { column_name: 'checksum', data_type: 'character varying', len: 64, is_nullable: 'NO', column_default: null },
        {
          column_name: 'finished_at',
          data_type: 'timestamp with time zone',
          len: null,
          is_nullable: 'YES',
          column_default: null,
        },
        {
          column_name: 'migration_name',
          data_type: 'character varying',
          len: 255,
          is_nullable: 'NO',
          column_default: null,
        },
        { column_name: 'logs', data_type: 'text', len: null, is_nullable: 'YES', column_default: null },
        {
          column_name: 'rolled_back_at',
          data_type: 'timestamp with time zone',
          len: null,
          is_nullable: 'YES',
          column_default: null,
        },
        {
          column_name: 'started_at',
          data_type: 'timestamp with time zone',
          len: null,
          is_nullable: 'NO',
          column_default: 'now()',
        },
        { column_name: 'applied_steps_count', data_type: 'integer', len: null, is_nullable: 'NO', column_default: '0' },
      ]);
      const pk = await c.query(
        `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = '_prisma_migrations'::regclass AND contype = 'p'`,
      );
      expect(pk.rows).toEqual([{ def: 'PRIMARY KEY (id)' }]);
      const rows = await c.query(`SELECT * FROM _prisma_migrations ORDER BY migration_name`);
      expect(rows.rows.map((r) => r.migration_name)).toEqual(files);
      for (const r of rows.rows) {
        expect(r).toMatchObject({
          checksum: checksum(r.migration_name),
          logs: null,
          rolled_back_at: null,
          applied_steps_count: 1,
        });
        expect(r.id).toMatch(/^[0-9a-f-]{36}$/);
        expect(r.finished_at).toBeInstanceOf(Date);
        expect(r.finished_at.getTime()).toBeGreaterThanOrEqual(r.started_at.getTime());
      }
    });
  });

  test('two concurrent migrate() calls on an empty database both succeed and apply each migration once', async () => {
    const url = await createEmptyDatabase();
    const [a, b] = await Promise.all([migrate(url, logger), migrate(url, logger)]);
    expect([...a, ...b].sort()).toEqual(files);
    await withClient(url, async (c) => {
      const rows = await c.query<{ migration_name: string; n: string }>(
        `SELECT migration_name, count(*) AS n FROM _prisma_migrations GROUP BY migration_name ORDER BY migration_name`,
      );
      expect(rows.rows).toEqual(files.map((f) => ({ migration_name: f, n: '1' })));
    });
  });
});
