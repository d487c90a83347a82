import type { RequestHandler } from 'express';
import type { Container } from '../container';
import { newestAppliedMigration } from '../infra/migrate';

/** How long /version waits for the database: it answers without `schema_migration` rather than hang. */
const MIGRATION_LOOKUP_MS = 1_500;

/**
 * `GET /version` (no key, as /healthz): the build and the database's schema. `schema_migration` is read from the
 * database each time, so during a rolling upgrade an old instance reports the schema a new one migrated to; a field
 * not known (no commit, a database that does not answer) is left out, never `null`.
 */
export function versionHandler(c: Pick<Container, 'build' | 'database'>): RequestHandler {
  const { build } = c;
  const schemaMigration = () => newestAppliedMigration(c.database.pool);
  return (_req, res) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>(
      (resolve) => (timer = setTimeout(() => resolve(undefined), MIGRATION_LOOKUP_MS)),
    );
    void Promise.race([schemaMigration().catch(() => undefined), timeout]).then((migration) => {
      clearTimeout(timer);
      res.set('Cache-Control', 'no-store');
      res.json({
        version: build.version,
        ...(build.commit === undefined ? {} : { commit: build.commit }),
        ...(migration === undefined ? {} : { schema_migration: migration }),
      });
    });
  };
}
