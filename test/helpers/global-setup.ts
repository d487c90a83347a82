import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../../src/infra/embedded-postgres';
import { createLogger } from '../../src/infra/logger';
import { migrate } from '../../src/infra/migrate';
import { JobQueue } from '../../src/infra/queue';

/**
 * One embedded PostgreSQL for the whole run, with a migrated template database (including pg-boss's schema). Each
 * test file clones the template (CREATE DATABASE ... TEMPLATE), so files run in parallel on their own databases.
 */
export default async function globalSetup(): Promise<void> {
  const logger = createLogger('warn');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-pg-'));
  fs.chmodSync(dir, 0o755);
  const pg = await startEmbeddedPostgres({
    dir: path.join(dir, 'data'),
    database: 'template_assets',
    logger,
    persistent: false,
  });
  await migrate(pg.url, logger);
  const queue = await JobQueue.create(pg.url, logger);
  await queue.start({ workers: false });
  await queue.stop();
  // A template must have no other connections while it is cloned.
  const admin = new Client({ connectionString: pg.url.replace(/\/template_assets$/, '/postgres') });
  await admin.connect();
  await admin.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'template_assets' AND pid <> pg_backend_pid()`,
  );
  await admin.end();
  process.env.TEST_PG_TEMPLATE_URL = pg.url;
  // The run's shared state for the workers: the Ceph RGW the first S3 test starts (helpers/rgw.ts) lives here.
  process.env.TEST_RUN_DIR = path.join(dir, 'run');
  process.env.TEST_RUN_PID = String(process.pid);
  fs.mkdirSync(process.env.TEST_RUN_DIR);
  (globalThis as { __TEST_PG__?: { stop(): Promise<void>; dir: string } }).__TEST_PG__ = { stop: pg.stop, dir };
}
