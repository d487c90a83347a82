/**
 * The shipped deployment's proxy works as written: deploy/nginx.conf itself, run by Debian's nginx, in front of the
 * built service with TRUST_PROXY=true as docker-compose.yml sets it. Through the proxy, the URLs in answers
 * (preview_url, thumbnail_url, short_url, the tus Location) name the proxy's address and port and load, a tus upload
 * completes, and the failed-authentication limiter counts each client's address, not the proxy's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { freePort } from '../../src/infra/embedded-postgres';
import { json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { TUS, tusUpload } from '../helpers/tus';

const CONF = path.join(__dirname, '..', '..', 'deploy', 'nginx.conf');

/** Debian's nginx (scripts/test-prereqs.cjs installs it); /usr/sbin is not on every user's PATH. */
function nginxBinary(): string {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/sbin'];
  const found = dirs.map((d) => path.join(d, 'nginx')).find((f) => fs.existsSync(f));
  if (!found) throw new Error('nginx is not installed: run node scripts/test-prereqs.cjs (apt-get install nginx)');
  return found;
}

let svc: TestService;
let nginx: ChildProcess | undefined;
let nginxLog = '';
let proxy: string;
let tmp: string;

beforeAll(async () => {
  // As compose runs the replicas behind the proxy (its `assets` environment), with a small failure limit to test.
  svc = await startTestService({ TRUST_PROXY: 'true', AUTH_FAILURES_PER_MINUTE: '3' });
  const port = await freePort();
  proxy = `http://127.0.0.1:${port}`;
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'deploy-proxy-'));
  // Run as root, nginx's workers drop to `nobody`, who must reach the temp folders nginx creates here.
  fs.chmodSync(tmp, 0o755);
  // The deploy's file with only its listen port (on loopback only: tests listen on 127.0.0.1) and its upstream (the
  // compose service name) replaced; anything else in it is what compose runs.
  const original = fs.readFileSync(CONF, 'utf8');
  const site = original
    .replace(/^(\s*)listen 80;$/m, `$1listen 127.0.0.1:${port};`)
    .replace('http://assets:8080', svc.url);
  expect(site.split('\n').filter((l, i) => l !== original.split('\n')[i])).toHaveLength(2);
  fs.writeFileSync(path.join(tmp, 'default.conf'), site);
  // The rest is what the nginx image's own /etc/nginx/nginx.conf provides around conf.d/*.conf, with the paths nginx
  // writes (pid, temporaries) in the temp folder instead of /var.
  const temps = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((t) => `  ${t}_temp_path ${path.join(tmp, t)};`)
    .join('\n');
  fs.writeFileSync(
    path.join(tmp, 'nginx.conf'),
    `worker_processes 1;\npid ${path.join(tmp, 'nginx.pid')};\nerror_log stderr warn;\nevents {}\n` +
      `http {\n  access_log off;\n${temps}\n  include ${path.join(tmp, 'default.conf')};\n}\n`,
  );
  nginx = spawn(nginxBinary(), ['-e', 'stderr', '-p', tmp, '-c', path.join(tmp, 'nginx.conf'), '-g', 'daemon off;'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  nginx.stderr!.on('data', (d: Buffer) => (nginxLog += d.toString()));
  await waitFor(
    async () => {
      if (nginx!.exitCode !== null) throw new Error(`nginx exited: ${nginxLog}`);
      return fetch(`${proxy}/readyz`).then(
        (r) => (r.status === 200 ? true : undefined),
        () => undefined,
      );
    },
    { timeoutMs: 20_000, what: 'nginx to proxy /readyz' },
  );
});

afterAll(async () => {
  if (nginx && nginx.exitCode === null) {
    const exited = new Promise((resolve) => nginx!.once('exit', resolve));
    nginx.kill('SIGQUIT');
    await exited;
  }
  await svc?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** A request through the proxy with alice's key (or `key`), not following redirects. */
const viaProxy = (p: string, init: RequestInit & { key?: string | null } = {}) => {
  const { key = KEYS.alice, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (key !== null) headers.set('x-api-key', key);
  return fetch(p.startsWith('http') ? p : proxy + p, { redirect: 'manual', ...rest, headers });
};

test("an uploaded PNG's preview_url, thumbnail_url and short_url name the proxy's address and port, and load", async () => {
  const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#36a' } })
    .png()
    .toBuffer();
  const res = await viaProxy('/api/assets', { method: 'POST', body: uploadForm(png, { tags: 'output' }, 'p.png') });
  expect(res.status).toBe(201);
  const { id } = await json(res);
  // The thumbnail is made by a job: the asset names it once it exists.
  const asset = await waitFor(
    async () => {
      const a = await json(await viaProxy(`/api/assets/${id}`));
      return a.thumbnail_url ? a : undefined;
    },
    { what: 'the thumbnail' },
  );
  for (const field of ['preview_url', 'thumbnail_url', 'short_url'])
    expect([field, asset[field]]).toEqual([field, expect.stringMatching(new RegExp(`^${proxy}/api/`))]);

  const preview = await viaProxy(asset.preview_url, { key: null });
  expect(preview.status).toBe(200);
  expect(Buffer.from(await preview.arrayBuffer()).equals(png)).toBe(true);
  const thumb = await viaProxy(asset.thumbnail_url, { key: null });
  expect(thumb.status).toBe(200);
  expect(thumb.headers.get('content-type')).toMatch(/^image\//);

  const short = await viaProxy(asset.short_url);
  expect(short.status).toBe(302);
  const target = short.headers.get('location')!;
  expect(target).toMatch(new RegExp(`^${proxy}/api/assets/${id}/content\\?`));
  const followed = await viaProxy(target, { key: null });
  expect(followed.status).toBe(200);
  expect(Buffer.from(await followed.arrayBuffer()).equals(png)).toBe(true);
});

test("a tus upload completes through the proxy; its Location names the proxy's address and port", async () => {
  const data = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
  const { url } = await tusUpload(proxy, data, {
    chunkSize: 1024 * 1024,
    metadata: { filename: 'through-proxy.bin' },
  });
  expect(url).toMatch(new RegExp(`^${proxy}/api/uploads/`));
  const head = await viaProxy(url, { method: 'HEAD', headers: TUS });
  expect([head.status, head.headers.get('upload-offset')]).toEqual([200, String(data.length)]);
  const asset = await json(await viaProxy(`/api/assets/${head.headers.get('asset-id')}`));
  expect(asset).toMatchObject({ name: 'through-proxy.bin', size: data.length });
});

test("an export's link names the proxy's address and port, and its archive loads through it", async () => {
  const up = await viaProxy('/api/assets', { method: 'POST', body: uploadForm(Buffer.from('to export'), {}, 'e.txt') });
  const { id } = await json(up);
  const started = await viaProxy('/api/assets/export', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ asset_ids: [id] }),
  });
  expect(started.status).toBe(202);
  const { task_id } = await json(started);
  const task = await waitFor(
    async () => {
      const t = await json(await viaProxy(`/api/tasks/${task_id}`));
      return t.status === 'completed' || t.status === 'failed' ? t : undefined;
    },
    { what: 'the export task' },
  );
  expect(task.status).toBe('completed');
  const { url } = await json(await viaProxy(`/api/assets/exports/${task.result.export_name}`));
  expect(url).toMatch(new RegExp(`^${proxy}/api/`));
  const archive = await viaProxy(url, { key: null });
  expect([archive.status, archive.headers.get('content-type')]).toEqual([200, 'application/zip']);
});

/** GET /api/assets with a wrong key through the proxy, from the loopback address `from`: its status. */
function badKeyFrom(from: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${proxy}/api/assets`,
      { localAddress: from, headers: { 'x-api-key': 'not-a-valid-key', 'x-forwarded-for': '203.0.113.9' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
  });
}

test('the failed-authentication limiter counts each client address the proxy passes, not the proxy', async () => {
  // The forged X-Forwarded-For above is kept as an earlier hop; the service takes the one nginx added.
  const first = [];
  for (let i = 0; i < 4; i++) first.push(await badKeyFrom('127.0.0.2'));
  expect(first).toEqual([401, 401, 401, 429]);
  expect(await badKeyFrom('127.0.0.3')).toBe(401);
});
