import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/infra/embedded-postgres';
import { waitFor } from '../helpers/harness';

/**
 * The service as `npm start` runs it (compiled dist/, no DATABASE_URL: embedded PostgreSQL under DATA_DIR):
 * zero-setup start, graceful SIGTERM that lets an in-flight upload finish, PostgreSQL stopped, data kept for the
 * next start, and invalid settings refused with one message.
 */
const MAIN = path.resolve(__dirname, '..', '..', 'dist', 'src', 'main.js');
const KEY = 'lifecycle-key-1';

let dataDir: string;
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, DATABASE_URL: '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function ready(port: number): Promise<void> {
  await waitFor(
    async () =>
      (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined,
    {
      timeoutMs: 90_000,
      what: 'the service to be ready',
    },
  );
}

test('zero-setup start, graceful shutdown with an upload in flight, data kept across restarts', async () => {
  if (!fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: npm test builds it first (npm run build)`);
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-lifecycle-'));
  fs.chmodSync(dataDir, 0o755);
  const port = await freePort();
  const env = { DATA_DIR: dataDir, PORT: String(port), API_KEYS: `alice:${KEY}` };
  const first = start(env);
  await ready(port);
  expect(fs.existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'))).toBe(true);

  // An upload that is still sending when SIGTERM arrives.
  const bytes = crypto.randomBytes(2 * 1024 * 1024);
  const boundary = 'lifecycleBoundary';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const req = http.request(`http://127.0.0.1:${port}/api/assets`, {
    method: 'POST',
    headers: {
      'x-api-key': KEY,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + bytes.length + tail.length),
    },
  });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (r) => {
      let body = '';
      r.on('data', (c) => (body += c));
      r.on('end', () => resolve({ status: r.statusCode!, body }));
    });
  });
  req.write(head);
  req.write(bytes.subarray(0, 1024 * 1024));
  await waitFor(async () => (fs.readdirSync(path.join(dataDir, 'blobs', '.tmp')).length > 0 ? true : undefined), {
    what: 'the upload to start',
  });
  first.child.kill('SIGTERM');
  await waitFor(async () => (first.output().includes('shutting down') ? true : undefined), {
    what: 'shutdown to begin',
  });
  req.end(Buffer.concat([bytes.subarray(1024 * 1024), tail]));
  const res = await response;
  expect(res.status).toBe(201);
  const asset = JSON.parse(res.body);
  expect(asset.size).toBe(bytes.length);
  expect(await first.exited).toBe(0);
  // PostgreSQL was stopped too.
  expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);

  // A second start reuses the cluster and the blobs.
  const second = start(env);
  await ready(port);
  const got = await fetch(`http://127.0.0.1:${port}/api/assets/${asset.id}/content`, { headers: { 'x-api-key': KEY } });
  expect(got.status).toBe(200);
  expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
  expect(second.output()).not.toContain('initialising embedded PostgreSQL');
  second.child.kill('SIGINT');
  expect(await second.exited).toBe(0);
}, 180_000);

test('invalid settings stop the start with one message listing every bad variable', async () => {
  const run = start({ PORT: 'eighty', STORAGE_BACKEND: 'tape', MAX_UPLOAD_BYTES: 'lots', DATA_DIR: os.tmpdir() });
  expect(await run.exited).toBe(1);
  const out = run.output();
  expect(out).toContain('Invalid configuration');
  for (const name of ['PORT', 'STORAGE_BACKEND', 'MAX_UPLOAD_BYTES']) expect(out).toContain(name);
  expect(out).not.toMatch(/\n\s+at /);
});
