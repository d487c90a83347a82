import { requireSupportedNode } from './node-version';
requireSupportedNode('asset-service');
// Before every other import (CommonJS keeps their order): the modules below need that Node. Only the config (which
// loads no network or database module) and the tracing starter load here; the service loads in main() once tracing
// has registered its instrumentations, which patch http, express, pg and the AWS SDK as they are first required.
import { ConfigError, loadConfig } from './config';
import { startTracing } from './infra/tracing';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env, roleFromArgs(process.argv.slice(2)));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(err.message + '\n');
      process.exit(1);
    }
    throw err;
  }
  const tracing = await startTracing(config.tracing);
  require('reflect-metadata');
  const { createLogger } = require('./infra/logger') as typeof import('./infra/logger');
  const { startService } = require('./server') as typeof import('./server');
  const logger = createLogger(config.logLevel, { service: 'asset-service' });
  if (config.tracing) logger.info('tracing on', { ...config.tracing });
  const service = await startService(config, logger, tracing);
  let signals = 0;
  const shutdown = (signal: string) => {
    if (++signals > 1) {
      logger.warn('second signal: exiting at once', { signal });
      process.exit(130);
    }
    logger.info('shutting down', { signal });
    // HTTP, jobs and the database are drained first, then the spans they ended and the log lines still held: the
    // last things before exit. A collector that does not answer holds the exit up to its export timeout (10 s).
    const flush = () =>
      (tracing?.shutdown() ?? Promise.resolve())
        .catch((err: unknown) => logger.warn('spans not exported at shutdown', { err: (err as Error).message }))
        .then(() => logger.flush());
    service.stop().then(
      () => flush().then(() => process.exit(0)),
      (err) => {
        logger.error('shutdown failed', { err });
        return flush().then(() => process.exit(1));
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

/** `--role api|worker|all` overrides ROLE. */
function roleFromArgs(args: string[]): { role?: 'all' | 'api' | 'worker' } {
  const i = args.indexOf('--role');
  const v = i >= 0 ? args[i + 1] : args.find((a) => a.startsWith('--role='))?.slice(7);
  if (v === undefined) return {};
  if (v !== 'all' && v !== 'api' && v !== 'worker') throw new ConfigError([`--role ${v}: expected all, api or worker`]);
  return { role: v };
}

main().catch((err) => {
  process.stderr.write(`asset-service failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
