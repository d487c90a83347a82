import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLI_MAIN, runCli, startCli } from '../helpers/cli-process';
import { CountingProxy } from '../helpers/counting-proxy';
import { bytes, startFakeProviders, type FakeProviders } from '../helpers/fake-providers';
import { blake3Of, json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';

/**
 * The `assets` command-line client, built (dist/) and run as a child process against a real service,
 * through a proxy that counts requests and bytes and can cut the network mid-transfer.
 */
const KiB = 1024;
const MiB = 1024 * KiB;

let fake: FakeProviders;
let svc: TestService;
let proxy: CountingProxy;
let work: string;
let env: Record<string, string>;

jest.setTimeout(120_000);

beforeAll(async () => {
  if (!fs.existsSync(CLI_MAIN)) throw new Error(`${CLI_MAIN} is missing: run npm run build first (npm test does)`);
  fake = await startFakeProviders();
  svc = await startTestService({ ...fake.env, DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'false' });
  proxy = await new CountingProxy(svc.url).start();
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'assets-cli-test-'));
  env = { ASSETS_URL: proxy.url, ASSETS_API_KEY: KEYS.alice, HOME: work, XDG_CACHE_HOME: path.join(work, 'cache') };
});
afterAll(async () => {
  await proxy?.close();
  await svc?.stop();
  await fake?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

const UPLOAD_PATH = /^\/api\/(assets|uploads)(\/[0-9a-f-]*)?(\?|$)/;
/** Requests that carry file bytes (multipart POST /api/assets, tus POST/PATCH /api/uploads) since `from`. */
const uploadRequests = (from: number) =>
  proxy.requests
    .slice(from)
    .filter(
      (r) =>
        (r.method === 'POST' || r.method === 'PATCH') && UPLOAD_PATH.test(r.path) && !r.path.startsWith('/api/assets/'),
    );

function write(root: string, rel: string, data: Buffer): void {
  const abs = path.join(root, ...rel.split('/'));
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, data);
}

const fileHash = (file: string): string => blake3Of(fs.readFileSync(file));

/** `strace <args>` with only the given environment (plus PATH): the files a command opens. */
function runStrace(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn('strace', args, {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

// A ComfyUI-shaped tree: nested folders, unicode and spaces, an empty file, one content under two names.
const TREE: Record<string, Buffer> = {
  'models/checkpoints/SDXL/base.safetensors': bytes(3 * MiB, 1),
  'models/loras/style ünï 🎨 v2.safetensors': bytes(700 * KiB, 2),
  'models/loras/copy a.safetensors': bytes(300 * KiB, 3),
  'models/vae/copy b.safetensors': bytes(300 * KiB, 3),
  'input/empty.png': Buffer.alloc(0),
  'output/run 1/ComfyUI_00001_.png': bytes(50 * KiB, 4),
};

const listAll = async (q = ''): Promise<any[]> => (await json(await svc.fetch(`/api/assets?limit=500${q}`))).assets;

describe('push and pull of a ComfyUI tree', () => {
  let comfy: string;

  beforeAll(() => {
    comfy = path.join(work, 'ComfyUI');
    for (const [rel, data] of Object.entries(TREE)) write(comfy, rel, data);
    write(comfy, 'README.md', Buffer.from('not an asset'));
    write(comfy, 'models/.cache/ignored.bin', Buffer.from('hidden'));
  });

  test('push --comfyui tags and names every file as ComfyUI does; the duplicate content becomes one asset', async () => {
    const from = proxy.requests.length;
    const r = await runCli(['push', comfy, '--comfyui', '--tag', 'Team-X', '--json'], env);
    expect(r.stderr).not.toMatch(/FAILED/);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.failed).toBe(0);
    const byFile = new Map<string, { action: string; asset_id: string; name: string }>(
      out.files.map((f: { file: string }) => [path.relative(comfy, f.file).split(path.sep).join('/'), f]),
    );
    expect(byFile.get('README.md')!.action).toBe('skipped');
    expect([...byFile.keys()].some((k) => k.includes('.cache'))).toBe(false);

    const assets = await listAll();
    const named = new Map(assets.map((a) => [a.name, a]));
    // ComfyUI's model_type: tags (its `model_type` mode lists the asset under its folder) beside the plain folder name.
    expect(named.get('SDXL/base.safetensors')).toMatchObject({
      tags: ['models', 'model_type:checkpoints', 'checkpoints', 'Team-X'],
      size: 3 * MiB,
    });
    expect(named.get('style ünï 🎨 v2.safetensors')).toMatchObject({
      tags: ['models', 'model_type:loras', 'loras', 'Team-X'],
    });
    const byType = await listAll('&tags_all=model_type:loras');
    expect(byType.map((x) => x.name).sort()).toEqual(expect.arrayContaining(['style ünï 🎨 v2.safetensors']));
    expect(named.get('empty.png')).toMatchObject({ tags: ['input', 'Team-X'], size: 0 });
    expect(named.get('run 1/ComfyUI_00001_.png')).toMatchObject({ tags: ['output', 'Team-X'] });
    for (const [rel, data] of Object.entries(TREE)) {
      const f = byFile.get(rel)!;
      expect(f.action === 'uploaded' || f.action === 'from_hash').toBe(true);
      expect((await json(await svc.fetch(`/api/assets/${f.asset_id}`))).asset_hash).toBe(blake3Of(data));
    }
    // One content under two names: the service keeps one asset per content and owner; the second
    // file is created by hash and answers that asset.
    const a = byFile.get('models/loras/copy a.safetensors')!;
    const b = byFile.get('models/vae/copy b.safetensors')!;
    expect(a.asset_id).toBe(b.asset_id);
    expect([a.action, b.action].sort()).toEqual(['from_hash', 'uploaded']);
    // ... and adds its folder's tag to that asset.
    const dup = assets.find((x) => x.id === a.asset_id);
    expect(dup.tags).toEqual(
      expect.arrayContaining(['models', 'loras', 'vae', 'model_type:loras', 'model_type:vae', 'Team-X']),
    );
    expect(dup.tags[1]).toBe(dup.name === 'copy a.safetensors' ? 'model_type:loras' : 'model_type:vae');
    // ... and both paths are kept with it, for pull.
    expect([...dup.metadata.paths].sort()).toEqual([
      'models/loras/copy a.safetensors',
      'models/vae/copy b.safetensors',
    ]);
    expect(assets).toHaveLength(5);
    // Each distinct content was sent once.
    expect(
      new Set(
        uploadRequests(from)
          .filter((q) => q.method === 'POST')
          .map((q) => q.path),
      ).size,
    ).toBeGreaterThan(0);
    expect(out.bytes_sent).toBe(3 * MiB + 700 * KiB + 300 * KiB + 50 * KiB);
    // Files under RESUMABLE_MIN go in one multipart POST each (the five contents, the empty one too), never through a
    // resumable upload.
    expect(proxy.count('POST', /^\/api\/uploads$/, from)).toBe(0);
    expect(uploadRequests(from).filter((q) => q.method === 'POST' && q.path.startsWith('/api/assets'))).toHaveLength(5);
    // Each file's tree path went with its upload or from-hash: no request of its own.
    expect(proxy.count('POST', /^\/api\/assets\/[^/]+\/paths$/, from)).toBe(0);
  });

  test('pushing again sends nothing: HEAD + from-hash only, no upload request', async () => {
    const from = proxy.requests.length;
    const r = await runCli(['push', comfy, '--comfyui', '--tag', 'Team-X', '--json'], env);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.bytes_sent).toBe(0);
    // Every hash came from the hash cache: no file was opened.
    expect(out.files_hashed).toBe(0);
    expect(
      out.files
        .filter((f: { action: string }) => f.action !== 'skipped')
        .every((f: { action: string }) => f.action === 'from_hash'),
    ).toBe(true);
    expect(uploadRequests(from)).toEqual([]);
    expect(proxy.requests.slice(from).reduce((s, q) => s + q.bytesIn, 0)).toBeLessThan(8 * KiB);
    expect(await listAll()).toHaveLength(5);
  });

  test('pull --comfyui into an empty folder lays out models/<folder>/<name>, input/, output/ with the right bytes', async () => {
    const dest = path.join(work, 'pulled');
    const r = await runCli(['pull', dest, '--comfyui', '--tag', 'Team-X', '--json'], env);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.failed).toBe(0);
    // Every path of the tree, the one content under two names included (one download, one copy).
    for (const [rel, data] of Object.entries(TREE)) {
      expect({ rel, hash: fileHash(path.join(dest, ...rel.split('/'))) }).toEqual({ rel, hash: blake3Of(data) });
    }
    expect(out.files.filter((f: { action: string }) => f.action === 'copied')).toHaveLength(1);
    expect(fs.readdirSync(path.join(dest, 'models')).sort()).toEqual(['checkpoints', 'loras', 'vae']);
    expect(out.extra_model_paths_yaml).toContain(`base_path: ${JSON.stringify(path.resolve(dest))}`);
    expect(out.extra_model_paths_yaml).toContain('checkpoints: "models/checkpoints/"');
    expect(fs.readdirSync(dest, { recursive: true }).some((f) => String(f).endsWith('.part'))).toBe(false);
  });

  test('pulling again downloads nothing and prints the extra_model_paths.yaml entry', async () => {
    const from = proxy.requests.length;
    const r = await runCli(['pull', path.join(work, 'pulled'), '--comfyui', '--tag', 'Team-X'], env);
    expect(r.code).toBe(0);
    expect(proxy.count('GET', /\/content/, from)).toBe(0);
    expect(r.stderr).toMatch(/0 downloaded/);
    expect(r.stdout).toContain('extra_model_paths.yaml');
    expect(r.stdout).toMatch(/loras: "models\/loras\/"/);
  });

  test('pull --link makes the second path of a content a hard link of the first', async () => {
    const dest = path.join(work, 'pulled-linked');
    const r = await runCli(['pull', dest, '--comfyui', '--tag', 'Team-X', '--link', '--json'], env);
    expect(r.code).toBe(0);
    const a = fs.statSync(path.join(dest, 'models', 'loras', 'copy a.safetensors'));
    const b = fs.statSync(path.join(dest, 'models', 'vae', 'copy b.safetensors'));
    expect(a.ino).toBe(b.ino);
    expect(a.nlink).toBe(2);
  });

  test('a re-push of the unchanged tree opens none of its files; an edited file is hashed and sent again', async () => {
    const log = path.join(work, 'strace.log');
    const node = process.execPath;
    const traced = await runStrace(
      [
        '-f',
        '-e',
        'trace=open,openat,openat2',
        '-o',
        log,
        node,
        CLI_MAIN,
        'push',
        comfy,
        '--comfyui',
        '--tag',
        'Team-X',
        '--json',
      ],
      env,
    );
    expect(traced.code).toBe(0);
    expect(JSON.parse(traced.stdout)).toMatchObject({ files_hashed: 0, bytes_sent: 0 });
    const lines = fs
      .readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l.includes(comfy + path.sep));
    // The trace sees the folders walked (so it would see a file opened), and no file.
    expect(lines.some((l) => l.includes('O_DIRECTORY'))).toBe(true);
    expect(lines.filter((l) => !l.includes('O_DIRECTORY'))).toEqual([]);

    // Same size, new bytes: its size and mtime may even look the same; its ctime moved.
    const rel = 'output/run 1/ComfyUI_00001_.png';
    const edited = bytes(50 * KiB, 99);
    write(comfy, rel, edited);
    const again = JSON.parse((await runCli(['push', comfy, '--comfyui', '--tag', 'Team-X', '--json'], env)).stdout);
    expect(again.files_hashed).toBe(1);
    expect(again.files.find((f: { file: string }) => f.file.endsWith('ComfyUI_00001_.png'))).toMatchObject({
      action: 'uploaded',
      hash: blake3Of(edited),
    });
    write(comfy, rel, TREE[rel]!);
  });
});

describe('interruptions', () => {
  test('a pull cut mid-file keeps its .part; the next run continues it with Range and checks the hash', async () => {
    const data = bytes(12 * MiB, 21);
    const up = await svc.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(data, { tags: 'bigpull', name: 'big/pull.bin' }, 'pull.bin'),
    });
    expect(up.status).toBe(201);
    const dest = path.join(work, 'pull-cut');
    proxy.cutRule = { direction: 'out', afterBytes: 5 * MiB, match: (m, p) => m === 'GET' && p.endsWith('/content') };
    const first = await runCli(['pull', dest, '--tag', 'bigpull'], env);
    proxy.restore();
    expect(first.code).toBe(1);
    expect(first.stderr).toMatch(/failed: big\/pull\.bin .*NETWORK/);
    const part = path.join(dest, 'big', 'pull.bin.part');
    const kept = fs.statSync(part).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(5 * MiB);

    const from = proxy.requests.length;
    const second = await runCli(['pull', dest, '--tag', 'bigpull', '--json'], env);
    expect(second.code).toBe(0);
    const get = proxy.requests.slice(from).find((q) => q.method === 'GET' && q.path.endsWith('/content'))!;
    expect(get.headers.range).toBe(`bytes=${kept}-`);
    expect(get.status).toBe(206);
    expect(get.bytesOut).toBe(data.length - kept);
    expect(JSON.parse(second.stdout).files[0]).toMatchObject({
      action: 'downloaded',
      bytes_received: data.length - kept,
    });
    expect(fileHash(path.join(dest, 'big', 'pull.bin'))).toBe(blake3Of(data));
    expect(fs.existsSync(part)).toBe(false);
  });

  test('a push cut mid-file fails that file (exit 1); the next run continues the same upload', async () => {
    const dir = path.join(work, 'push-cut');
    const data = bytes(12 * MiB, 22);
    write(dir, 'cut.bin', data);
    const isUpload = (m: string, p: string) =>
      m === 'PATCH' || (m === 'POST' && /^\/api\/(assets|uploads)(\?|$)/.test(p));
    proxy.cutRule = { direction: 'in', afterBytes: 5 * MiB, match: isUpload };
    const first = await runCli(['push', dir, '--json'], env);
    proxy.restore();
    expect(first.code).toBe(1);
    const failed = JSON.parse(first.stdout).files[0];
    expect(failed).toMatchObject({ action: 'failed', name: 'cut.bin' });
    expect(first.stderr).toContain(path.join(dir, 'cut.bin'));

    expect(proxy.count('POST', /^\/api\/uploads$/)).toBeGreaterThan(0);
    const from = proxy.requests.length;
    const second = await runCli(['push', dir, '--json'], env);
    expect(second.code).toBe(0);
    const done = JSON.parse(second.stdout).files[0];
    expect(done).toMatchObject({ action: 'uploaded', name: 'cut.bin' });
    expect((await json(await svc.fetch(`/api/assets/${done.asset_id}`))).asset_hash).toBe(blake3Of(data));
    // The same tus upload continued (HEAD for its offset, no new POST), only the rest sent.
    expect(uploadRequests(from).filter((q) => q.method === 'POST')).toEqual([]);
    expect(proxy.count('HEAD', /^\/api\/uploads\//, from)).toBe(1);
    expect(uploadRequests(from).reduce((s, q) => s + q.bytesIn, 0)).toBeLessThanOrEqual(data.length - 4 * MiB);
  });

  test('a push killed mid-upload is finished by the next run', async () => {
    const dir = path.join(work, 'push-kill');
    const data = bytes(8 * MiB, 23);
    write(dir, 'killed.bin', data);
    proxy.throttleIn = 4 * MiB;
    let from = proxy.requests.length;
    const child = startCli(['push', dir], env);
    await waitFor(async () => (uploadRequests(from).reduce((s, q) => s + q.bytesIn, 0) >= 2 * MiB ? true : undefined), {
      timeoutMs: 30_000,
    });
    child.proc.kill('SIGKILL');
    await child.done;
    proxy.throttleIn = undefined;
    from = proxy.requests.length;
    const second = await runCli(['push', dir, '--json'], env);
    expect(second.code).toBe(0);
    const done = JSON.parse(second.stdout).files[0];
    expect(done.action).toBe('uploaded');
    expect((await json(await svc.fetch(`/api/assets/${done.asset_id}`))).asset_hash).toBe(blake3Of(data));
    // The second run asks where the upload stands (HEAD) and sends only the rest.
    expect(proxy.count('HEAD', /^\/api\/uploads\//, from)).toBe(1);
    expect(uploadRequests(from).reduce((s, q) => s + q.bytesIn, 0)).toBeLessThan(data.length);
  });

  test('an instance without /api/uploads (404) gets a streamed multipart POST /api/assets with the hash first', async () => {
    const dir = path.join(work, 'old-instance');
    // As large as a file that would otherwise go up resumably (RESUMABLE_MIN).
    const data = bytes(8 * MiB, 24);
    write(dir, 'sub dir/old.bin', data);
    proxy.notFound = (_m, p) => p.startsWith('/api/uploads');
    const from = proxy.requests.length;
    const r = await runCli(['push', dir, '--tag', 'old', '--json'], env);
    proxy.notFound = undefined;
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('no resumable uploads');
    const [f] = JSON.parse(r.stdout).files;
    expect(f).toMatchObject({ action: 'uploaded', name: 'sub dir/old.bin', bytes_sent: data.length });
    const posts = uploadRequests(from).filter((q) => q.path.startsWith('/api/assets'));
    expect(posts).toHaveLength(1);
    expect(posts[0]!.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(posts[0]!.bytesIn).toBeGreaterThan(data.length);
    expect(await json(await svc.fetch(`/api/assets/${f.asset_id}`))).toMatchObject({
      name: 'sub dir/old.bin',
      tags: ['old'],
      asset_hash: blake3Of(data),
    });
  });
});

test("a gateway that refuses OPTIONS with a page of its own (403) does not stop a push: only the service's refusal of the key does", async () => {
  const dir = path.join(work, 'gateway');
  const data = bytes(256 * KiB, 27);
  write(dir, 'behind-gateway.bin', data);
  proxy.refuse = (m) => (m === 'OPTIONS' ? 403 : undefined);
  try {
    const r = await runCli(['push', dir, '--tag', 'gateway', '--json'], env);
    expect(r.stderr).not.toContain('FAILED');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).files[0]).toMatchObject({ action: 'uploaded', bytes_sent: data.length });
  } finally {
    proxy.refuse = undefined;
  }
});

describe('large files: the hash first, then the bytes', () => {
  const patches = (from: number) =>
    proxy.requests.slice(from).filter((q) => q.method === 'PATCH' && q.path.startsWith('/api/uploads/'));
  const hashHeads = (from: number) =>
    proxy.requests.slice(from).filter((q) => q.method === 'HEAD' && q.path.startsWith('/api/assets/hash/'));

  test('a push killed mid-upload resumes from the service offset: no new upload, no byte before the offset sent again', async () => {
    const dir = path.join(work, 'big-kill');
    const data = bytes(16 * MiB, 31);
    write(dir, 'big.bin', data);
    proxy.throttleIn = 4 * MiB;
    let from = proxy.requests.length;
    const child = startCli(['push', dir, '--tag', 'big'], env);
    await waitFor(async () => (uploadRequests(from).reduce((s, q) => s + q.bytesIn, 0) >= 6 * MiB ? true : undefined), {
      timeoutMs: 30_000,
    });
    child.proc.kill('SIGKILL');
    await child.done;
    proxy.throttleIn = undefined;
    // The hash was asked for before the upload was created, and the upload names it (the service checks it).
    const posts = uploadRequests(from).filter((q) => q.method === 'POST');
    expect(posts).toHaveLength(1);
    expect(hashHeads(from).map((q) => q.path)).toEqual([`/api/assets/hash/${blake3Of(data)}`]);
    expect(proxy.requests.indexOf(hashHeads(from)[0]!)).toBeLessThan(proxy.requests.indexOf(posts[0]!));
    const meta = String(posts[0]!.headers['upload-metadata'])
      .split(',')
      .find((kv) => kv.startsWith('hash '));
    expect(Buffer.from(meta!.slice(5), 'base64').toString()).toBe(blake3Of(data));

    from = proxy.requests.length;
    const second = await runCli(['push', dir, '--tag', 'big', '--json'], env);
    expect(second.code).toBe(0);
    const done = JSON.parse(second.stdout).files[0];
    expect(done.action).toBe('uploaded');
    expect((await json(await svc.fetch(`/api/assets/${done.asset_id}`))).asset_hash).toBe(blake3Of(data));
    expect(uploadRequests(from).filter((q) => q.method === 'POST')).toEqual([]);
    expect(proxy.count('HEAD', /^\/api\/uploads\//, from)).toBe(1);
    const [patch] = patches(from);
    const offset = Number(patch!.headers['upload-offset']);
    expect(offset).toBeGreaterThan(0);
    expect(patches(from).reduce((s, q) => s + q.bytesIn, 0)).toBe(data.length - offset);
  });

  test('content stored under another name is created by hash: no upload request, 0 bytes sent', async () => {
    const data = bytes(16 * MiB, 32);
    const up = await svc.fetch('/api/assets', {
      method: 'POST',
      body: uploadForm(data, { name: 'first name.bin' }, 'first name.bin'),
    });
    expect(up.status).toBe(201);
    const stored = await json(up);
    const dir = path.join(work, 'stored-elsewhere');
    write(dir, 'second name.bin', data);
    const from = proxy.requests.length;
    const r = await runCli(['push', dir, '--tag', 'again', '--json'], env);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).files[0]).toMatchObject({ action: 'from_hash', asset_id: stored.id, bytes_sent: 0 });
    expect(uploadRequests(from)).toEqual([]);
    expect(proxy.requests.slice(from).reduce((s, q) => s + q.bytesIn, 0)).toBeLessThan(64 * KiB);
    expect((await json(await svc.fetch(`/api/assets/${stored.id}`))).tags).toContain('again');
  });
});

describe('commands, exit codes and --json', () => {
  test('usage errors exit 2; --help exits 0', async () => {
    expect((await runCli(['push'], env)).code).toBe(2);
    expect((await runCli(['push', '--concurrency', 'x', work], env)).code).toBe(2);
    expect((await runCli(['frobnicate'], env)).code).toBe(2);
    expect((await runCli(['export', 'not-a-zip'], env)).code).toBe(2);
    const missing = await runCli(['push', path.join(work, 'no-such-folder')], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file or folder');
    const version = await runCli(['--version'], env);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toBe(
      (JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string })
        .version,
    );
    const help = await runCli(['pull', '--help'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--comfyui');
    // The package's bin (what `npx assets` runs).
    const { execFileSync } = await import('node:child_process');
    const bin = path.join(__dirname, '..', '..', 'bin', 'assets.cjs');
    expect(
      execFileSync(bin, ['--help'], {
        encoding: 'utf8',
        env: { PATH: `${path.dirname(process.execPath)}:${process.env.PATH}` },
      }),
    ).toMatch(/^Usage: assets/);
    // Output into a pipe whose reader is gone (`assets ls | head`): a quiet end, not an EPIPE stack trace.
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [bin, 'ls', '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  test('failed files exit 1 and name the file and the service code', async () => {
    const dir = path.join(work, 'nokey');
    write(dir, 'one.bin', bytes(10 * KiB, 31));
    const r = await runCli(['push', dir, '--json'], { ...env, ASSETS_API_KEY: 'wrong-key' });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).files[0]).toMatchObject({ action: 'failed', error: { code: 'UNAUTHORIZED' } });
    expect(r.stderr).toMatch(/one\.bin: UNAUTHORIZED/);
    // The key is checked beside the first hashes (OPTIONS /api/uploads), not after each file's: a large file's hash
    // is given up once the service refuses the key (4 GiB of holes take the hashing thread a second or more).
    const big = path.join(work, 'nokey-big');
    fs.mkdirSync(big, { recursive: true });
    fs.closeSync(fs.openSync(path.join(big, 'holes.bin'), 'w'));
    fs.truncateSync(path.join(big, 'holes.bin'), 4 * 1024 * 1024 * 1024);
    const refused = await runCli(['push', big, '--json'], { ...env, ASSETS_API_KEY: 'wrong-key' });
    expect(refused.code).toBe(1);
    const [only] = JSON.parse(refused.stdout).files;
    expect(only).toMatchObject({ action: 'failed', error: { code: 'UNAUTHORIZED' } });
    expect(only.hash).toBeUndefined();
    fs.rmSync(big, { recursive: true, force: true });
  });

  test('ls, get and rm', async () => {
    const ls = await runCli(['ls', '--tag', 'checkpoints', '--json'], env);
    expect(ls.code).toBe(0);
    const [asset] = JSON.parse(ls.stdout).assets;
    expect(asset.name).toBe('SDXL/base.safetensors');
    const plain = await runCli(['ls', '--tag', 'checkpoints'], env);
    expect(plain.stdout).toContain(`${asset.id}`);
    expect(plain.stdout).toContain('SDXL/base.safetensors');
    const get = await runCli(['get', asset.id, '--json'], env);
    expect(JSON.parse(get.stdout)).toMatchObject({ id: asset.id, asset_hash: asset.asset_hash });
    const other = (await listAll('&include_tags=output'))[0];
    expect((await runCli(['rm', other.id], env)).code).toBe(0);
    const gone = await runCli(['get', other.id], env);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('ASSET_NOT_FOUND');
  });

  test('ls pages through more assets than one page', async () => {
    const r = await runCli(['ls', '--limit', '3', '--json'], env);
    expect(JSON.parse(r.stdout).assets).toHaveLength(3);
    const from = proxy.requests.length;
    const all = await runCli(['--page-size', '2', 'ls', '--limit', '1000', '--json'], env);
    const expected = (await listAll()).map((a) => a.id).sort();
    expect(expected.length).toBeGreaterThan(4);
    expect(
      JSON.parse(all.stdout)
        .assets.map((a: { id: string }) => a.id)
        .sort(),
    ).toEqual(expected);
    // Pages by `after=<next_cursor>` where the service sends cursors, else by offset.
    const pages = proxy.requests.slice(from).filter((q) => q.method === 'GET' && q.path.startsWith('/api/assets?'));
    expect(pages.length).toBe(Math.ceil(expected.length / 2));
    expect(pages.slice(1).every((q) => /[?&](after|offset)=[^0&]/.test(q.path))).toBe(true);
  });

  test('download follows the task to the end and answers the asset', async () => {
    const data = bytes(2 * MiB, 41);
    const url = fake.hf.lfs('org/cli/unet/model.safetensors', data, { throttle: 4 * MiB });
    const r = await runCli(['download', url, '--tag', 'models', '--tag', 'unet', '--json'], env);
    expect(r.stderr).not.toMatch(/failed/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      name: 'model.safetensors',
      asset_hash: blake3Of(data),
      tags: ['models', 'unet'],
    });
    const again = await runCli(['download', url, '--json'], env);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).asset_hash).toBe(blake3Of(data));

    // A file the provider does not have: exit 1 with the service's code (at once, or the failed task's message).
    const missing = await runCli(['download', `${fake.hf.url}/org/cli/resolve/main/nope.safetensors`], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/SOURCE_NOT_FOUND|download failed/);
  });

  test('export writes the ZIP of the named assets (by ids or by tag)', async () => {
    const files = { 'exp one.safetensors': bytes(200 * KiB, 61), 'exp two ü.bin': bytes(10 * KiB, 62) };
    const ids: string[] = [];
    for (const [name, data] of Object.entries(files)) {
      const res = await svc.fetch('/api/assets', {
        method: 'POST',
        body: uploadForm(data, { tags: 'exp', name }, name),
      });
      ids.push((await json(res)).id);
    }
    const members = async (zip: string): Promise<Record<string, string>> => {
      const yauzl = await import('yauzl');
      const zipfile = await yauzl.fromBufferPromise(fs.readFileSync(zip), { lazyEntries: true });
      const found: Record<string, string> = {};
      const entries: import('yauzl').Entry[] = await new Promise((resolve, reject) => {
        const list: import('yauzl').Entry[] = [];
        zipfile.on('entry', (e: import('yauzl').Entry) => {
          list.push(e);
          zipfile.readEntry();
        });
        zipfile.on('end', () => resolve(list));
        zipfile.on('error', reject);
        zipfile.readEntry();
      });
      for (const entry of entries) {
        const chunks: Buffer[] = [];
        for await (const c of await zipfile.openReadStreamPromise(entry)) chunks.push(c as Buffer);
        found[entry.fileName] = blake3Of(Buffer.concat(chunks));
      }
      zipfile.close();
      return found;
    };
    const expected = Object.fromEntries(Object.entries(files).map(([n, d]) => [n, blake3Of(d)]));

    const byTag = path.join(work, 'by-tag.zip');
    const r = await runCli(['export', '--tag', 'exp', byTag, '--json'], env);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ file: byTag, task: { status: 'completed' } });
    expect(await members(byTag)).toEqual(expected);

    const byIds = path.join(work, 'by-ids.zip');
    const r2 = await runCli(['export', ids[0]!, byIds], env);
    expect(r2.code).toBe(0);
    expect(await members(byIds)).toEqual({ 'exp one.safetensors': expected['exp one.safetensors'] });
    expect(fs.existsSync(`${byIds}.part`)).toBe(false);

    // An id the service cannot export is named (the archive still holds the rest), and the run fails (exit 1).
    const missing = crypto.randomUUID();
    const partial = path.join(work, 'partial.zip');
    const r3 = await runCli(['export', ids[1]!, missing, partial], env);
    expect(r3.code).toBe(1);
    expect(r3.stderr).toContain(`! ${missing}: not_found`);
    expect(await members(partial)).toEqual({ 'exp two ü.bin': expected['exp two ü.bin'] });

    // Nothing exportable: the service's own reason, not a generic one.
    const none = await runCli(['export', crypto.randomUUID(), path.join(work, 'none.zip'), '--json'], env);
    expect(none.code).toBe(1);
    expect(JSON.parse(none.stdout).error.code).toBe('EXPORT_FAILED');
    expect(JSON.parse(none.stdout).error.message).toMatch(/export/i);
    expect(JSON.parse(none.stdout).error.message).not.toMatch(/named no archive/);
    expect(fs.existsSync(path.join(work, 'none.zip'))).toBe(false);
  });
});

describe('on a terminal', () => {
  test('push inside tmux draws per-file and total bars (bytes/s, ETA) and finishes them', async () => {
    const { execFileSync } = await import('node:child_process');
    try {
      execFileSync('tmux', ['-V'], { stdio: 'ignore' });
    } catch {
      console.log('tmux is not installed: the terminal test did not run (apt-get install -y tmux)');
      return;
    }
    const dir = path.join(work, 'tty');
    write(dir, 'first model.safetensors', bytes(3 * MiB, 51));
    write(dir, 'second.safetensors', bytes(3 * MiB, 52));
    proxy.throttleIn = 2 * MiB;
    const socket = `assets-cli-test-${process.pid}`;
    const tmux = (...args: string[]): string => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
    const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
    const command =
      Object.entries({ ...env, TERM: 'xterm-256color' })
        .map(([k, v]) => `${k}=${q(v)}`)
        .join(' ') + ` ${q(process.execPath)} ${q(CLI_MAIN)} push ${q(dir)}; echo CLI-EXIT=$?; sleep 120`;
    tmux(
      'new-session',
      '-d',
      '-s',
      'cli',
      '-x',
      '150',
      '-y',
      '30',
      'env',
      '-i',
      `PATH=${process.env.PATH}`,
      'sh',
      '-c',
      command,
    );
    try {
      const screens: string[] = [];
      const final = await waitFor(
        async () => {
          const screen = tmux('capture-pane', '-p', '-t', 'cli');
          screens.push(screen);
          return screen.includes('CLI-EXIT=') ? screen : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 100, what: 'the push in tmux to end' },
      );
      // While sending: a bar per file being uploaded and the total, with a rate and an ETA.
      const during = screens.find(
        (s) => /↑ first model\.safetensors\s.*\d+% \|.*\/s \| ETA/.test(s) && /total\s.*\d+%/.test(s),
      );
      expect(during).toBeDefined();
      expect(final).toContain('CLI-EXIT=0');
      expect(final).toMatch(/total\s+█+ 100% \| 12\.0 MiB\/12\.0 MiB/);
      expect(final).toContain('uploaded first model.safetensors (3.0 MiB)');
      expect(final).toMatch(/2 files: 2 uploaded \(6\.0 MiB sent\)/);
    } finally {
      proxy.throttleIn = undefined;
      tmux('kill-server');
    }
  });
});

describe('untagged files', () => {
  test('an untagged file whose content is stored is created by hash, 0 bytes sent (from-hash needs a tag; the CLI names the hash in an upload without a file part)', async () => {
    const data = Buffer.from(`stored by someone else ${process.hrtime.bigint()} ${Math.random()}`);
    const other = await svc.fetch('/api/assets', {
      method: 'POST',
      key: KEYS.bob,
      body: uploadForm(data, {}, 'theirs.bin'),
    });
    expect(other.status).toBe(201);
    const dir = path.join(work, 'untagged');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'mine.bin'), data);
    const r = await runCli(['push', dir, '--json'], env);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: expect.anything() });
    const out = JSON.parse(r.stdout);
    expect(out.bytes_sent).toBe(0);
    expect(out.files.map((f: { action: string }) => f.action)).toEqual(['from_hash']);
    const created = await json(await svc.fetch(`/api/assets/${out.files[0].asset_id}`));
    expect([created.name, created.asset_hash, created.tags]).toEqual(['mine.bin', blake3Of(data), []]);
  });
});
