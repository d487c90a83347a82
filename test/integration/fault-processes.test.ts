import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { contentLockKey } from '../../src/infra/prisma';
import { blake3Of, KEYS, uploadForm, waitFor } from '../helpers/harness';
import { spawnService, type ServiceProcess } from '../helpers/service-process';

/**
 * The fault-injection suite over real processes (dist/src/main.js, embedded PostgreSQL under DATA_DIR):
 * the service SIGKILLed in the middle of an upload's body and between putting the blob in place and committing its
 * row; a full filesystem (a tmpfs of 8 MiB as the blob store, when running as root). After each: no blob without a
 * row, no row without a blob, no temporary file, and the service answers. DATA_DIR is a fresh `mktemp -d` (mode
 * 0700), which as root also covers starting as root (the embedded PostgreSQL runs as `postgres` and must reach it).
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-fault-proc-'));
const blobs = path.join(dataDir, 'blobs');
let tmpfs = false;
let svc: ServiceProcess | undefined;

beforeAll(() => {
  fs.mkdirSync(blobs);
  if (process.getuid?.() !== 0) {
    console.log('fault-processes: not root, so no tmpfs; the full-disk case runs only as a stub in faults.test.ts');
    return;
  }
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', blobs], { stdio: 'ignore' });
    tmpfs = true;
  } catch {
    console.log('fault-processes: mounting a tmpfs failed; the full-disk case is skipped here');
  }
});

afterAll(async () => {
  await svc?.kill('SIGTERM');
  if (tmpfs) execFileSync('umount', ['-l', blobs], { stdio: 'ignore' });
  fs.rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

const start = () => spawnService({ DATA_DIR: dataDir, STORAGE_MIN_FREE_BYTES: '0', DATABASE_URL: '' });

function databaseUrl(): string {
  const port = fs
    .readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')
    .split('\n')[3]!
    .trim();
  return `postgresql://postgres:postgres@127.0.0.1:${port}/assets`;
}

function blobsOnDisk(): string[] {
  const out: string[] = [];
  for (const a of fs.readdirSync(blobs).filter((n) => /^[0-9a-f]{2}$/.test(n)))
    for (const b of fs.readdirSync(path.join(blobs, a))) out.push(...fs.readdirSync(path.join(blobs, a, b)));
  return out.sort();
}
const temps = () => fs.readdirSync(path.join(blobs, '.tmp'));

/** No blob without a row, no row without a blob, no temporary file; the service stores and serves an upload. */
async function expectConsistent(s: ServiceProcess): Promise<void> {
  const db = new Client({ connectionString: databaseUrl() });
  await db.connect();
  try {
    await waitFor(
      async () => {
        const rows = (await db.query<{ blake3: string }>('SELECT blake3 FROM content ORDER BY blake3')).rows.map((r) =>
          r.blake3.trim(),
        );
        return JSON.stringify(rows) === JSON.stringify(blobsOnDisk()) ? true : undefined;
      },
      { timeoutMs: 20_000, what: 'blobs and content rows to agree' },
    );
  } finally {
    await db.end();
  }
  expect(temps()).toEqual([]);
  const bytes = crypto.randomBytes(1000);
  const res = await s.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
  expect(res.status).toBe(201);
  expect((await s.fetch(`/api/assets/hash/${blake3Of(bytes)}`, { method: 'HEAD' })).status).toBe(200);
}

/** A multipart upload on a raw socket: the head and `sent` bytes now. */
function rawUpload(url: string, bytes: Buffer, sent: number) {
  const boundary = 'procBoundary';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const u = new URL(url);
  const socket = net.connect(Number(u.port), u.hostname);
  socket.on('error', () => undefined);
  socket.write(
    `POST /api/assets HTTP/1.1\r\nHost: ${u.host}\r\nx-api-key: ${KEYS.alice}\r\ncontent-type: multipart/form-data; boundary=${boundary}\r\n` +
      `content-length: ${head.length + bytes.length + tail.length}\r\n\r\n`,
  );
  socket.write(head);
  socket.write(bytes.subarray(0, sent));
  return { finish: () => socket.write(Buffer.concat([bytes.subarray(sent), tail])), close: () => socket.destroy() };
}

test('start as root under a DATA_DIR of mode 0700', async () => {
  expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
  svc = await start();
  if (process.getuid?.() === 0) {
    expect(svc.logs().some((l) => String(l.msg).startsWith('made directories searchable'))).toBe(true);
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o701);
  }
  await expectConsistent(svc);
}, 120_000);

test('SIGKILL in the middle of an upload body: the next start leaves no temporary file', async () => {
  const up = rawUpload(svc!.url, crypto.randomBytes(2 * 1024 * 1024), 1024 * 1024);
  await waitFor(async () => (temps().length > 0 ? true : undefined), { what: 'the upload to start' });
  await svc!.kill('SIGKILL');
  up.close();
  expect(temps().length).toBeGreaterThan(0);
  svc = await start();
  await expectConsistent(svc);
}, 120_000);

test('SIGKILL between putting the blob in place and committing its row: the next start removes the blob', async () => {
  const bytes = crypto.randomBytes(256 * 1024);
  const hex = blake3Of(bytes).slice(7);
  // Hold the content's lock, as a concurrent commit would: the upload puts its blob in place, then waits for it.
  const locker = new Client({ connectionString: databaseUrl() });
  await locker.connect();
  await locker.query('SELECT pg_advisory_lock($1::bigint)', [contentLockKey(hex).toString()]);
  const up = rawUpload(svc!.url, bytes, bytes.length);
  up.finish();
  await waitFor(async () => (blobsOnDisk().includes(hex) ? true : undefined), { what: 'the blob to be put in place' });
  await svc!.kill('SIGKILL');
  up.close();
  await locker.end();
  expect(blobsOnDisk()).toContain(hex);
  svc = await start();
  await expectConsistent(svc);
  expect(blobsOnDisk()).not.toContain(hex);
}, 120_000);

test('a full filesystem (tmpfs of 8 MiB): 507 INSUFFICIENT_STORAGE, nothing kept, the service still answers', async () => {
  if (!tmpfs) {
    console.log('fault-processes: no tmpfs, nothing to do here');
    return;
  }
  const res = await svc!.fetch('/api/assets', {
    method: 'POST',
    body: uploadForm(crypto.randomBytes(12 * 1024 * 1024)),
  });
  expect(res.status).toBe(507);
  expect(((await res.json()) as { code: string }).code).toBe('INSUFFICIENT_STORAGE');
  await expectConsistent(svc!);
}, 120_000);
