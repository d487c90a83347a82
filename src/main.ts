import { requireSupportedNode } from './node-version';
requireSupportedNode('asset-service');
// Before every other import (CommonJS keeps their order): the modules below need that Node.
import 'reflect-metadata';
import { ConfigError, loadConfig } from './config';
import { createLogger } from './infra/logger';
import { startService } from './server';

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
  const logger = createLogger(config.logLevel, { service: 'asset-service' });
  const service = await startService(config, logger);
  let signals = 0;
  const shutdown = (signal: string) => {
    if (++signals > 1) {
      logger.warn('second signal: exiting at once', { signal });
      process.exit(130);
    }
    logger.info('shutting down', { signal });
    // HTTP, jobs and the database are drained first, then the log lines still held: the last thing before exit.
    service.stop().then(
      () => logger.flush().then(() => process.exit(0)),
      (err) => {
        logger.error('shutdown failed', { err });
        return logger.flush().then(() => process.exit(1));
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
