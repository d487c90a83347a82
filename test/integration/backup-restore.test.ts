import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { blobOrphanSweepJob } from '../../src/domain/content/blob-orphan-sweep.job';
import { contentGcSweepJob } from '../../src/domain/content/content-gc.job';
import { blobTempSweepJob } from '../../src/domain/content/blob-temp-sweep.job';
import { ContentRepository } from '../../src/domain/content/content.repository';
import { ContentService } from '../../src/domain/content/content.service';
import {
  blake3Of,
  createTestDatabase,
  json,
  startTestService,
  uploadForm,
  waitFor,
  type TestService,
} from '../helpers/harness';
import { startS3Server, type TestS3Server } from '../helpers/rgw';

/**
 * Contract 7, "backups and restores lose nothing": a database backup is restored while the blob store carries on,
 * then a newer one; every sweep runs in between with the clock past the orphan age; every asset of the newer
 * database still has its bytes. Once ORPHAN_RETENTION_DAYS are over, the blobs no row names are gone for good.
 * The backups are copies of the database (CREATE DATABASE ... TEMPLATE): what pg_dump and pg_restore would give
 * back, without needing a pg_dump of the embedded server's version.
 */
const DAY = 24 * 3600 * 1000;
const JOB_CONTEXT = { id: 'test', retryCount: 0, signal: new AbortController().signal };

interface Backend {
  name: string;
  env(): Record<string, string>;
}
let s3: TestS3Server | undefined;
const backends: Backend[] = [
  { name: 'fs', env: () => ({}) },
  { name: 's3', env: () => s3!.env },
];
beforeAll(async () => {
  s3 = await startS3Server();
});
afterAll(async () => {
  await s3?.stop();
});

/** The test database's server, for the copies. */
function adminOf(databaseUrl: string): { admin: () => Promise<Client>; name: string } {
  const u = new URL(databaseUrl);
  const name = u.pathname.slice(1);
  u.pathname = '/postgres';
  return {
    name,
    admin: async () => {
      const c = new Client({ connectionString: u.toString() });
      await c.connect();
      return c;
    },
  };
}

/** CREATE DATABASE `to` TEMPLATE `from`, after dropping `to`; nobody may be connected to either meanwhile. */
async function copyDatabase(databaseUrl: string, from: string, to: string): Promise<void> {
  const { admin } = adminOf(databaseUrl);
  const c = await admin();
  try {
    await c.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ANY($1)`, [[from, to]]);
    await c.query(`DROP DATABASE IF EXISTS ${to}`);
    await c.query(`CREATE DATABASE ${to} TEMPLATE ${from}`);
  } finally {
    await c.end();
  }
}

describe.each(backends)('on the $name store', (backend) => {
  let databaseUrl: string;
  let dataDir: string;
  let svc: TestService | undefined;
  const start = async () => {
    svc = await startTestService(
      { ...backend.env(), CONTENT_GC_GRACE_SECONDS: '0', ORPHAN_RETENTION_DAYS: '7' },
      { databaseUrl, dataDir },
    );
    // The start-up moves aside what no row of this database names, in the background: done before any sweep, so a
    // late move cannot land in the quarantine after a sweep that was to find it.
    await svc.reconciled;
    return svc;
  };
  const stop = async () => {
    await svc?.stop();
    svc = undefined;
  };
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-backup-'));
  });
  afterAll(async () => {
    await stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** The service's content service with its clock `shiftMs` ahead (the sweeps' notion of now). */
  function contentAt(s: TestService, shiftMs: number): ContentService {
    const { database, blobStore, logger, config } = s.container;
    const repo = new ContentRepository(database.prisma, database.pool, database.transactions);
    return new ContentService(repo, blobStore, logger, {
      maxUploadBytes: config.maxUploadBytes,
      gcGraceSeconds: config.contentGcGraceSeconds,
      orphanRetentionDays: config.orphanRetentionDays,
      now: () => Date.now() + shiftMs,
    });
  }
  /** Every sweep that removes or moves stored bytes, by its job's handler, with the clock `shiftMs` ahead. */
  async function runEverySweep(s: TestService, shiftMs: number): Promise<void> {
    const content = contentAt(s, shiftMs);
    const { logger, blobStore } = s.container;
    await contentGcSweepJob.define({ content }).handler({}, JOB_CONTEXT);
    await blobTempSweepJob.define({ blobStore, logger }).handler({}, JOB_CONTEXT);
    await blobOrphanSweepJob.define({ content, logger }).handler({}, JOB_CONTEXT);
  }
  const upload = async (s: TestService, bytes: Buffer): Promise<string> => {
    const res = await s.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
    expect(res.status).toBe(201);
    return (await json(res)).id;
  };
  /** GET content of every asset `s` lists: each 200 with the bytes of its hash. */
  async function everyAssetReadable(s: TestService, expected: Map<string, Buffer>): Promise<void> {
    const listed = await json(await s.fetch('/api/assets?limit=500'));
    const ids = (listed.assets as { id: string }[]).map((a) => a.id).sort();
    expect(ids).toEqual([...expected.keys()].sort());
    for (const [id, bytes] of expected) {
      const res = await s.fetch(`/api/assets/${id}/content`);
      expect(res.status).toBe(200);
      expect(blake3Of(Buffer.from(await res.arrayBuffer()))).toBe(blake3Of(bytes));
    }
  }
  const hexOf = (b: Buffer) => blake3Of(b).slice('blake3:'.length);
  const quarantined = async (s: TestService): Promise<Set<string>> => {
    const out = new Set<string>();
    for await (const q of s.container.blobStore.listQuarantined()) out.add(q.blake3);
    return out;
  };

  test('restoring an older database, sweeping, then restoring the newer one loses no blob', async () => {
    const { name } = adminOf(databaseUrl);
    const older = `${name}_older`;
    const newer = `${name}_newer`;
    const bytes = (label: string) => Buffer.from(`${label}-${crypto.randomUUID()}`.repeat(50));

    // Before the first backup: three assets.
    let s = await start();
    const before = new Map<string, Buffer>();
    for (const label of ['a1', 'a2', 'a3']) {
      const b = bytes(label);
      before.set(await upload(s, b), b);
    }
    await stop();
    await copyDatabase(databaseUrl, name, older); // backup 1 (the database first; the blob store stays)

    // After it: three more, and one of the first deleted (its content collected: grace 0).
    s = await start();
    const after = new Map(before);
    for (const label of ['b1', 'b2', 'b3']) {
      const b = bytes(label);
      after.set(await upload(s, b), b);
    }
    const [deletedId, deletedBytes] = [...before][0]!;
    expect((await s.fetch(`/api/assets/${deletedId}`, { method: 'DELETE' })).status).toBe(204);
    after.delete(deletedId);
    await waitFor(async () => ((await quarantined(s)).has(hexOf(deletedBytes)) ? true : undefined), {
      what: 'GC to move the deleted content aside',
    });
    await stop();
    await copyDatabase(databaseUrl, name, newer); // backup 2

    // Restore backup 1: the start-up moves the newer blobs aside; every sweep runs, two days later.
    await copyDatabase(databaseUrl, older, name);
    s = await start();
    await everyAssetReadable(s, before); // the deleted asset's blob is back from the quarantine
    await runEverySweep(s, 2 * DAY);
    for (const b of [...after.values()].filter((v) => ![...before.values()].includes(v)))
      expect((await quarantined(s)).has(hexOf(b))).toBe(true);
    await stop();

    // Restore backup 2: every asset of it has its bytes.
    await copyDatabase(databaseUrl, newer, name);
    s = await start();
    await everyAssetReadable(s, after);
    await runEverySweep(s, 3 * DAY);
    await everyAssetReadable(s, after);

    // With the retention over, what no row names is gone for good, and nothing else.
    await runEverySweep(s, 10 * DAY);
    expect(await s.container.blobStore.exists(hexOf(deletedBytes))).toBe(false);
    expect(await quarantined(s)).toEqual(new Set());
    await everyAssetReadable(s, after);
    const stored: string[] = [];
    for await (const b of s.container.blobStore.listStored()) stored.push(b.blake3);
    expect(stored.sort()).toEqual([...after.values()].map(hexOf).sort());

    const { admin } = adminOf(databaseUrl);
    const c = await admin();
    await c.query(`DROP DATABASE IF EXISTS ${older}`);
    await c.query(`DROP DATABASE IF EXISTS ${newer}`);
    await c.end();
  });
});
