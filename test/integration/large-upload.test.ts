import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/infra/embedded-postgres';
import { createTestDatabase, KEYS, waitFor } from '../helpers/harness';

/**
 * A 1 GiB upload, streamed through a real service process (the compiled dist/, as `npm start` runs it), whose peak
 * resident memory must stay under 300 MB: memory does not grow with file size.
 */
const SIZE = 1024 * 1024 * 1024;
const MAIN = path.resolve(__dirname, '..', '..', 'dist', 'src', 'main.js');

let child: ChildProcess | undefined;
let dataDir: string;
afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child!.once('exit', r));
  }
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

function peakRssBytes(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

test('1 GiB streamed upload: correct hash, peak RSS under 300 MB', async () => {
  if (!fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: npm test builds it first (npm run build)`);
  const databaseUrl = await createTestDatabase();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-large-'));
  const port = await freePort();
  child = spawn(process.execPath, [MAIN], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      PORT: String(port),
      API_KEYS: `alice:${KEYS.alice}`,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => ((await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined),
    { timeoutMs: 60_000, what: 'the service' },
  );

  const block = crypto.randomBytes(1024 * 1024);
  const { Blake3Hasher } = require('@napi-rs/blake-hash') as typeof import('@napi-rs/blake-hash');
  const hasher = new Blake3Hasher();
  const boundary = 'bigUploadBoundary';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.safetensors"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const started = process.hrtime.bigint();
  const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(`${base}/api/assets`, {
      method: 'POST',
      headers: {
        'x-api-key': KEYS.alice,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(head.length + SIZE + tail.length),
      },
    });
    req.on('error', reject);
    req.on('response', (r) => {
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (c) => (body += c));
      r.on('end', () => resolve({ status: r.statusCode!, body }));
    });
    let sent = 0;
    let i = 0;
    const pump = () => {
      while (sent < SIZE) {
        // Vary each block so the content is not a repetition the hash could shortcut.
        block.writeUInt32LE(i++, 0);
        hasher.update(block);
        sent += block.length;
        if (!req.write(block)) {
          req.once('drain', pump);
          return;
        }
      }
      req.end(tail);
    };
    req.write(head);
    pump();
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  expect(res.status).toBe(201);
  const asset = JSON.parse(res.body);
  expect(asset.size).toBe(SIZE);
  expect(asset.asset_hash).toBe('blake3:' + hasher.digest('hex'));
  expect(asset.mime_type).toBe('application/x-safetensors');
  const peak = peakRssBytes(child.pid!);
  process.stdout.write(
    `1 GiB upload: ${(SIZE / 1e6 / seconds).toFixed(0)} MB/s, service peak RSS ${(peak / 1e6).toFixed(0)} MB\n`,
  );
  expect(peak).toBeLessThan(300 * 1000 * 1000);
}, 300_000);
