import { requireSupportedNode } from '../node-version';
requireSupportedNode('asset-service migrate');
import { ConfigError, loadConfig } from '../config';
import { createLogger } from '../infra/logger';
import { migrate } from '../infra/migrate';

/**
 * `node dist/src/cli/migrate.js`: applies pending migrations to DATABASE_URL and exits, for a deployment that
 * migrates in a step of its own (a Kubernetes init container or Job) before new instances start. Instances still
 * migrate at start as well, under the same advisory lock, so running this is never required and never harmful.
 */
async function main(): Promise<number> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(err.message + '\n');
      return 1;
    }
    throw err;
  }
  if (!config.databaseUrl) {
    process.stderr.write('DATABASE_URL (or DATABASE_URL_FILE) is required: the embedded database migrates at start\n');
    return 1;
  }
  const logger = createLogger(config.logLevel, { service: 'asset-service', command: 'migrate' });
  const applied = await migrate(config.databaseUrl, logger);
  logger.info('migrations applied', { applied });
  await logger.flush();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`migrate failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
