import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { json, startTestService, type TestService } from '../helpers/harness';
import { parseExposition, samplesOf } from '../helpers/prometheus';

// GET /version (no key) and the assets_build_info metric name what runs: the package's version, the build's commit
// (GIT_COMMIT, else the checkout's .git) and the newest migration the database has.

const root = path.join(__dirname, '..', '..');
const pkgVersion = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string })
  .version;
const newestMigration = fs
  .readdirSync(path.join(root, 'prisma', 'migrations'))
  .filter((d) => fs.existsSync(path.join(root, 'prisma', 'migrations', d, 'migration.sql')))
  .sort()
  .at(-1);
/** This checkout's HEAD, when the tests run in one (a worktree's `.git` is a file naming its folder). */
const head = (() => {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
})();

let svc: TestService;
afterEach(async () => {
  await svc?.stop();
});

test('GET /version without a key: version, the checkout commit, the newest applied migration; build_info agrees', async () => {
  svc = await startTestService({}, { validateResponses: true });
  const res = await svc.fetch('/version', { key: null });
  expect(res.status).toBe(200);
  const body = await json(res);
  expect(body).toEqual({
    version: pkgVersion,
    ...(head ? { commit: head } : {}),
    schema_migration: newestMigration,
  });
  const metrics = parseExposition(await (await fetch(`${svc.url}/metrics`)).text());
  expect(samplesOf(metrics, 'assets_build_info')).toEqual([
    {
      name: 'assets_build_info',
      labels: { version: pkgVersion, commit: head ?? '', node_version: process.versions.node },
      value: 1,
    },
  ]);
});

test('GIT_COMMIT (set at image build) wins over .git; a migration applied by a newer instance shows at once', async () => {
  const commit = 'abcdef0123456789abcdef0123456789abcdef01';
  svc = await startTestService({ GIT_COMMIT: commit.toUpperCase() }, { validateResponses: true });
  expect(await json(await svc.fetch('/version', { key: null }))).toMatchObject({ commit });
  // A newer release's instance migrated the shared database: this (older) one reports the schema as it is.
  await svc.container.database.pool.query(
    `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
     VALUES (gen_random_uuid()::text, 'x', '29991231000000_from_a_newer_release', now(), now(), 1)`,
  );
  expect(await json(await svc.fetch('/version', { key: null }))).toMatchObject({
    schema_migration: '29991231000000_from_a_newer_release',
  });
});
