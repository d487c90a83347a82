import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client, type Pool } from 'pg';
import type { Logger } from './logger';

/** Prisma's own advisory lock key for migrations, so `prisma migrate deploy` and this runner exclude each other. */
const MIGRATION_LOCK_KEY = 72707369;

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export function readMigrations(dir = findMigrationsDir()): Migration[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(dir, d.name, 'migration.sql')))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = fs.readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: crypto.createHash('sha256').update(sql).digest('hex') };
    });
}

/** The prisma/ folder sits at the package root, whether we run from src/ (tests) or dist/src/ (built). */
function findMigrationsDir(): string {
  let dir = __dirname;
  for (let i = 0; i < 5; i++) {
    const candidate = path.join(dir, 'prisma', 'migrations');
    if (fs.existsSync(candidate)) return candidate;
    dir = path.dirname(dir);
  }
  throw new Error(`prisma/migrations not found above ${__dirname}`);
}

/**
 * Applies pending migrations in order, each in its own transaction, recording them in `_prisma_migrations` exactly
 * as `prisma migrate deploy` does (so either tool can take over). Runs under Prisma's advisory lock: many instances
 * starting at once apply each migration once.
 */
export async function migrate(databaseUrl: string, logger: Logger): Promise<string[]> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
    const done = await client.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      'SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL',
    );
    const byName = new Map(done.rows.map((r) => [r.migration_name, r]));
    for (const m of readMigrations()) {
      const row = byName.get(m.name);
      if (row?.finished_at) {
        if (row.checksum !== m.checksum) {
          logger.warn('an applied migration was edited after it was applied', { migration: m.name });
        }
        continue;
      }
      if (row && !row.finished_at) {
        throw new Error(`migration ${m.name} failed earlier and needs manual attention (see _prisma_migrations.logs)`);
      }
      const id = crypto.randomUUID();
      await client.query('BEGIN');
      try {
        await client.query(
          'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())',
          [id, m.checksum, m.name],
        );
        await client.query(m.sql);
        await client.query(
          'UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1',
          [id],
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${m.name} failed: ${(err as Error).message}`);
      }
      applied.push(m.name);
      logger.info('applied migration', { migration: m.name });
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
  return applied;
}

/** The newest migration applied (and not rolled back), as `_prisma_migrations` records it; undefined before any. */
export async function newestAppliedMigration(pool: Pool): Promise<string | undefined> {
  const { rows } = await pool.query<{ migration_name: string }>({
    name: 'newest-applied-migration',
    text: `SELECT migration_name FROM "_prisma_migrations"
           WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY migration_name DESC LIMIT 1`,
  });
  return rows[0]?.migration_name;
}
