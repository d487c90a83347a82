import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config';
import { commandDatabase } from './database';
import { ApiKeyRepository } from '../domain/auth/api-key.repository';
import { ApiKeyService, OPERATOR } from '../domain/auth/api-key.service';
import { AuditRepository } from '../domain/audit/audit.repository';
import { AuditService } from '../domain/audit/audit.service';
import { createLogger } from '../infra/logger';
import { migrate } from '../infra/migrate';
import { createDatabase } from '../infra/prisma';

const USAGE = `usage: npm run keys -- <command>
  create --owner NAME [--scopes read,write,admin] [--admin] [--label TEXT] [--expires-at ISO]
                                 make a key (printed once; only its SHA-256 is stored). Default scopes: read,write;
                                 --admin adds admin
  list                           list keys (never their values)
  revoke ID|KEY                  revoke a key by id or by its value`;

/**
 * Operator command for stored API keys. Uses DATABASE_URL, or the embedded PostgreSQL under DATA_DIR (which must not
 * be running in another process at the same time, as with any embedded database).
 */
async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      owner: { type: 'string' },
      admin: { type: 'boolean', default: false },
      label: { type: 'string' },
      scopes: { type: 'string' },
      'expires-at': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  const [command, arg] = positionals;
  if (values.help || !command || !['create', 'list', 'revoke'].includes(command)) {
    process.stderr.write(USAGE + '\n');
    return command ? 2 : values.help ? 0 : 2;
  }
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
  const { url, embedded } = await commandDatabase(config, logger);
  const db = createDatabase(url, 2);
  try {
    await migrate(url, logger);
    const keys = new ApiKeyService(
      new ApiKeyRepository(db.prisma),
      [],
      new AuditService(new AuditRepository(db.prisma)),
    );
    if (command === 'create') {
      if (!values.owner) {
        process.stderr.write('create needs --owner NAME\n');
        return 2;
      }
      const scopes = (values.scopes ?? 'read,write').split(',').map((s) => s.trim());
      if (values.admin) scopes.push('admin');
      const expiresAt = values['expires-at'] === undefined ? undefined : new Date(values['expires-at']);
      if (expiresAt && Number.isNaN(expiresAt.getTime())) {
        process.stderr.write('--expires-at needs an ISO 8601 time\n');
        return 2;
      }
      const { key, info } = await keys.create(OPERATOR, {
        owner: values.owner,
        label: values.label,
        scopes,
        expiresAt,
      });
      process.stdout.write(`${key}\n`);
      process.stderr.write(
        `created key ${info.id} for owner ${info.ownerId} (${info.scopes.join(',')}); it is shown only once\n`,
      );
    } else if (command === 'list') {
      for (const k of await keys.list(OPERATOR, { allOwners: true })) {
        process.stdout.write(
          `${k.id}\t${k.ownerId}\t${k.scopes.join(',')}\t${k.createdAt.toISOString()}\t${k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : 'active'}\t${k.label}\n`,
        );
      }
    } else {
      if (!arg) {
        process.stderr.write('revoke needs an id or a key\n');
        return 2;
      }
      if (!(await keys.revokeAny(OPERATOR, arg))) {
        process.stderr.write('no active key matches\n');
        return 1;
      }
      process.stderr.write('revoked\n');
    }
    return 0;
  } finally {
    await db.close();
    await embedded?.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(err instanceof ConfigError ? err.message + '\n' : `keys: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
