import crypto from 'node:crypto';
import { Client } from 'pg';
import { JOB } from '../../src/domain/job-map';
import { JOBS } from '../../src/jobs';
import { startTestService, waitFor, type TestService } from '../helpers/harness';

/**
 * Jobs are registered from one list (src/jobs.ts) under the names of one map (src/domain/job-map.ts), and every
 * schedule is pg-boss's: one row per scheduled job however many instances run, and the sweeps for downloads and
 * imports whose worker died run as jobs, not as timers of each process.
 */
let a: TestService;
let b: TestService;
let db: Client;

beforeAll(async () => {
  // Provider endpoints nothing listens on: a transfer the sweep hands on fails at once, offline.
  const env = { HF_ENDPOINT: 'http://127.0.0.1:1', CIVITAI_ENDPOINT: 'http://127.0.0.1:1' };
  a = await startTestService(env);
  b = await startTestService(env, { databaseUrl: a.databaseUrl });
  db = new Client({ connectionString: a.databaseUrl });
  await db.connect();
});

afterAll(async () => {
  await db?.end();
  await b?.stop();
  await a?.stop();
});

test('every name of the job map is registered once, from the one list', () => {
  const names = JOBS.map((j) => j.name);
  expect(new Set(names).size).toBe(names.length);
  expect([...names].sort()).toEqual(Object.values(JOB).sort());
});

test('each scheduled job has one pg-boss schedule across two instances, the download and import sweeps included', async () => {
  const scheduled = [
    JOB.contentGcSweep,
    JOB.blobTempSweep,
    JOB.blobOrphanSweep,
    JOB.uploadSweep,
    JOB.exportSweep,
    JOB.downloadSweep,
    JOB.importSweep,
  ];
  const { rows } = await db.query<{ name: string; n: number }>(
    `SELECT name, count(*)::int AS n FROM pgboss.schedule GROUP BY name ORDER BY name`,
  );
  expect(rows).toEqual([...scheduled].sort().map((name) => ({ name, n: 1 })));
});

test('the download sweep, run as a job, hands a transfer whose worker died to a new transfer job', async () => {
  const id = crypto.randomUUID();
  await db.query(
    `INSERT INTO download_transfer (id, source_url, provider, status, lease_token, lease_expires_at)
     VALUES ($1, 'http://127.0.0.1:1/org/x/resolve/main/a.bin', 'huggingface', 'running', $2, now() - interval '1 minute')`,
    [id, crypto.randomUUID()],
  );
  await a.container.queue.send(JOB.downloadSweep, {});
  await waitFor(
    async () => {
      const { rows } = await db.query(`SELECT 1 FROM pgboss.job WHERE name = $1 AND data->>'transferId' = $2`, [
        JOB.downloadTransfer,
        id,
      ]);
      return rows.length > 0 ? true : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 100, what: 'the sweep to send the transfer job' },
  );
});

test('the import sweep runs as a job', async () => {
  const id = await a.container.queue.send(JOB.importSweep, {});
  await waitFor(
    async () => {
      const { rows } = await db.query(`SELECT state FROM pgboss.job WHERE id = $1`, [id]);
      return rows[0]?.state === 'completed' ? true : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 100, what: 'the import sweep job to complete' },
  );
});
