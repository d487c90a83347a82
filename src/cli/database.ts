import path from 'node:path';
import type { Config } from '../config';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../infra/embedded-postgres';
import type { Logger } from '../infra/logger';

/**
 * The database an operator command works on: DATABASE_URL, or the embedded PostgreSQL under DATA_DIR (joined when
 * the service runs it, started otherwise). `embedded` is set when the command must stop it again.
 */
export async function commandDatabase(
  config: Config,
  logger: Logger,
): Promise<{ url: string; embedded?: EmbeddedDatabase }> {
  if (config.databaseUrl) return { url: config.databaseUrl };
  const embedded = await startEmbeddedPostgres({
    dir: path.join(config.dataDir, 'postgres'),
    database: 'assets',
    logger,
    reuseRunning: true,
  });
  return { url: embedded.url, embedded };
}
