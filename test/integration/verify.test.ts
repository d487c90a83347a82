import crypto from 'node:crypto';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { Client } from 'pg';
import { loadConfig } from '../../src/config';
import { createBlobStore } from '../../src/container';
import { blobPath } from '../../src/infra/blob-store/blob-path';
import { IngestWorkers } from '../../src/infra/blob-store/ingest-pool';
import { blake3Of, createTestDatabase, json, startTestService, uploadForm, type TestService } from '../helpers/harness';
import { startS3Server, type TestS3Server } from '../helpers/rgw';

/**
 * `node dist/src/cli/verify.js` (`npm run verify`): compares rows and blobs, re-reads a sample, reports in text or
 * JSON with exit status 0 / 1 / 2, and changes nothing, neither in the store nor in the database.
 */
const VERIFY = path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'verify.js');

function verify(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string; err: string }> {
  const proc = spawn(process.execPath, [VERIFY, ...args], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve) => proc.on('close', (code) => resolve({ code, out, err })));
}

/** Every row of every table of the database, as one digest per table. */
async function databaseDigest(url: string): Promise<Record<string, string>> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    const { rows: tables } = await c.query<{ t: string }>(
      `SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables
        WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
    );
    const out: Record<string, string> = {};
    for (const { t } of tables) {
      const { rows } = await c.query<{ d: string }>(
        `SELECT md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text), '')) AS d FROM ${t} x`,
      );
      out[t] = rows[0]!.d;
    }
    return out;
  } finally {
    await c.end();
  }
}

/** Every file under `dir`: its path, size, mtime and SHA-256. */
function treeDigest(dir: string): string[] {
  const out: string[] = [];
  for (const rel of (fs.readdirSync(dir, { recursive: true }) as string[]).sort()) {
    const file = path.join(dir, rel);
    const st = fs.statSync(file);
    if (st.isDirectory()) out.push(`${rel}/`);
    else
      out.push(
        `${rel} ${st.size} ${st.mtimeMs} ${crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex')}`,
      );
  }
  return out;
}

interface Backend {
  name: 'fs' | 's3';
  env(): Record<string, string>;
  /** Everything the store holds, in a form that changes with any byte. */
  digest(dataDir: string): Promise<string[]>;
  /** Replaces a blob's bytes with others of the same length, behind the service's back. */
  corrupt(dataDir: string, hex: string, bytes: Buffer): Promise<void>;
}
let s3: TestS3Server | undefined;
const backends: Backend[] = [
  {
    name: 'fs',
    env: () => ({}),
    digest: async (dataDir) => treeDigest(path.join(dataDir, 'blobs')),
    corrupt: async (dataDir, hex, bytes) => fs.writeFileSync(path.join(dataDir, 'blobs', blobPath(hex)), bytes),
  },
  {
    name: 's3',
    env: () => s3!.env,
    digest: async () => {
      const res = await s3!.client.send(new ListObjectsV2Command({ Bucket: s3!.bucket }));
      return (res.Contents ?? []).map((o) => `${o.Key} ${o.Size} ${o.ETag} ${o.LastModified?.getTime()}`).sort();
    },
    corrupt: async (_dataDir, hex, bytes) => {
      await s3!.client.send(new PutObjectCommand({ Bucket: s3!.bucket, Key: blobPath(hex), Body: bytes }));
    },
  },
];
beforeAll(async () => {
  s3 = await startS3Server();
});
afterAll(async () => {
  await s3?.stop();
});

describe.each(backends)('verify on the $name store', (backend) => {
  let databaseUrl: string;
  let dataDir: string;
  let env: Record<string, string>;
  const assets: { id: string; bytes: Buffer }[] = [];
  const hexOf = (b: Buffer) => blake3Of(b).slice('blake3:'.length);

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-verify-'));
    env = { ...backend.env(), DATABASE_URL: databaseUrl, DATA_DIR: dataDir };
    const svc: TestService = await startTestService(backend.env(), { databaseUrl, dataDir });
    try {
      for (let i = 0; i < 5; i++) {
        const bytes = Buffer.from(`verify-${i}-${crypto.randomUUID()}`.repeat(100));
        const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
        expect(res.status).toBe(201);
        assets.push({ id: (await json(res)).id, bytes });
      }
    } finally {
      await svc.stop(); // nothing else writes to the store or the database while verify runs
    }
  });
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  test('a consistent store: exit 0, every blob re-read with --all', async () => {
    const text = await verify([], env);
    expect(text.err).toBe('');
    expect(text.code).toBe(0);
    expect(text.out).toContain('5 content rows, 5 stored blobs, 0 in the quarantine');
    expect(text.out).toMatch(/^consistent$/m);
    const all = await verify(['--all', '--json'], env);
    expect(all.code).toBe(0);
    expect(JSON.parse(all.out)).toMatchObject({ rows: 5, storedBlobs: 5, reread: 5, consistent: true });
  });

  test('usage errors: exit 2 with the usage', async () => {
    for (const args of [['--sample', 'ten'], ['--bogus'], ['--all', '--sample', '3'], ['extra']]) {
      const r = await verify(args, env);
      expect(r.code).toBe(2);
      expect(r.err).toContain('usage: npm run verify');
    }
    expect((await verify(['--help'], env)).code).toBe(0);
  });

  test('problems are found and reported (exit 1), and verify changes nothing, in the store or the database', async () => {
    // The store alone: a service's start-up would move the quarantined blob back.
    const workers = new IngestWorkers();
    const store = await createBlobStore(loadConfig(env), workers);
    const [lost, aside, corrupt] = assets;
    try {
      await store.quarantine(hexOf(lost!.bytes), '2026-01-01');
      await store.purgeQuarantined(hexOf(lost!.bytes), '2026-01-01');
      await store.quarantine(hexOf(aside!.bytes), '2026-01-02');
    } finally {
      await store.close();
      await workers.close();
    }
    const changed = Buffer.from(corrupt!.bytes);
    changed[0] = changed[0]! ^ 1;
    await backend.corrupt(dataDir, hexOf(corrupt!.bytes), changed);
    let orphan: string | undefined;
    if (backend.name === 'fs') {
      // A blob no row names, two hours old (S3 has no way to age an object).
      const bytes = Buffer.from(`orphan-${crypto.randomUUID()}`);
      orphan = hexOf(bytes);
      const file = path.join(dataDir, 'blobs', blobPath(orphan));
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, bytes);
      const old = new Date(Date.now() - 2 * 3600 * 1000);
      fs.utimesSync(file, old, old);
    }

    const storeBefore = await backend.digest(dataDir);
    const dbBefore = await databaseDigest(databaseUrl);
    const r = await verify(['--all', '--json'], env);
    const text = await verify(['--sample', '2'], env);
    expect(await backend.digest(dataDir)).toEqual(storeBefore);
    expect(await databaseDigest(databaseUrl)).toEqual(dbBefore);

    expect(r.code).toBe(1);
    const report = JSON.parse(r.out);
    expect(report.missing).toEqual({ count: 1, items: [hexOf(lost!.bytes)] });
    expect(report.toRestore).toEqual({ count: 1, items: [hexOf(aside!.bytes)] });
    expect(report.orphans).toEqual(orphan ? { count: 1, items: [orphan] } : { count: 0, items: [] });
    expect(report.corrupt.count).toBe(1);
    expect(report.corrupt.items[0]).toMatchObject({ blake3: hexOf(corrupt!.bytes) });
    expect(report).toMatchObject({ rows: 5, reread: 3, quarantinedBlobs: 1, consistent: false });
    expect(text.code).toBe(1);
    expect(text.out).toContain(
      `1 rows whose blob is missing, also from the quarantine (bytes lost)\n  ${hexOf(lost!.bytes)}`,
    );
    expect(text.out).toMatch(/^PROBLEMS FOUND$/m);
  });
});
