import crypto from 'node:crypto';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CLI_MAIN, runCli, type CliRun } from '../helpers/cli-process';
import { CountingProxy } from '../helpers/counting-proxy';
import { blake3Of, json, KEYS, startTestService, uploadForm, type TestService } from '../helpers/harness';

/**
 * The `assets` client against hostile input and failing dependencies (issue 14's hostile-input pass): a fake server
 * that answers what a broken or malicious one would, and the real service with files that change, special files,
 * unreadable files and a full disk. In every case: nothing written outside the target folder, exit codes 0/1/2,
 * `--json` on stdout, no stack trace.
 */
jest.setTimeout(120_000);

let work: string;
beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'assets-cli-hostile-'));
});
afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

const noStackTrace = (r: CliRun): void => {
  expect(r.stderr).not.toMatch(/\n\s+at .+\(.+:\d+:\d+\)|^\s+at /m);
  expect(r.stdout).not.toMatch(/\n\s+at .+\(.+:\d+:\d+\)/);
};

/** Every file and folder under `dir`, relative, sorted. */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const abs = path.join(d, e.name);
      out.push(path.relative(dir, abs) + (e.isDirectory() ? '/' : ''));
      if (e.isDirectory()) walk(abs);
    }
  };
  walk(dir);
  return out.sort();
}

interface FakeAsset {
  id: string;
  name: string;
  size: number;
  asset_hash: string;
  tags: string[];
  created_at: string;
}

/** A server that answers what a broken or hostile one would; `handler` decides each answer. */
async function fakeServer(
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<{ url: string; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const CONTENT = Buffer.from('the content every fake asset has');
const fakeAsset = (name: string, extra: Partial<FakeAsset> = {}): FakeAsset => ({
  id: crypto.randomUUID(),
  name,
  size: CONTENT.length,
  asset_hash: blake3Of(CONTENT),
  tags: ['t'],
  created_at: new Date().toISOString(),
  ...extra,
});

/** A listing of `assets` and their content, answered by `content` (default: the right bytes). */
const listing =
  (assets: FakeAsset[], content?: (req: http.IncomingMessage, res: http.ServerResponse) => void) =>
  (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const url = new URL(req.url!, 'http://x');
    if (url.pathname === '/api/assets') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ assets, total: assets.length, has_more: false }));
    }
    if (/^\/api\/assets\/[^/]+\/content$/.test(url.pathname)) {
      if (content) return content(req, res);
      res.writeHead(200, { 'content-length': CONTENT.length });
      return void res.end(CONTENT);
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":"NOT_FOUND","message":"no such route"}');
  };

async function pullFrom(
  url: string,
  name: string,
  extra: string[] = [],
): Promise<{ r: CliRun; dir: string; out: any }> {
  const parent = fs.mkdtempSync(path.join(work, `${name}-`));
  const dir = path.join(parent, 'target');
  const r = await runCli(['pull', dir, '--json', '--timeout', '2', ...extra], {
    ASSETS_URL: url,
    ASSETS_API_KEY: 'k',
    HOME: work,
  });
  noStackTrace(r);
  let out: any;
  try {
    out = JSON.parse(r.stdout);
  } catch {
    throw new Error(`not JSON on stdout (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
  // Nothing is ever written beside the target folder.
  expect(fs.readdirSync(parent)).toEqual(fs.existsSync(dir) ? ['target'] : []);
  return { r, dir, out };
}

describe('pull from a hostile server', () => {
  test('names that try to escape, collide with a folder, with another asset or with its .part: nothing outside the folder, each collision listed', async () => {
    const assets = [
      fakeAsset('../x'),
      fakeAsset('/abs/evil'),
      fakeAsset('a/../../b'),
      fakeAsset('..'),
      fakeAsset('nul\u0000byte'),
      fakeAsset('L'.repeat(5000) + '.bin'),
      fakeAsset('dir'),
      fakeAsset('dir/inner'),
      fakeAsset('same'),
      fakeAsset('same'),
      fakeAsset('ok.txt'),
      fakeAsset('ok.txt.part'),
    ];
    const fake = await fakeServer(listing(assets));
    try {
      const { r, dir, out } = await pullFrom(fake.url, 'names');
      expect(r.code).toBe(1);
      const byName = new Map<string, any[]>();
      for (const f of out.files) byName.set(f.name, [...(byName.get(f.name) ?? []), f]);
      expect(byName.get('dir')![0]).toMatchObject({ action: 'failed', error: { code: 'PATH_TAKEN' } });
      expect(byName.get('dir/inner')![0]).toMatchObject({ action: 'downloaded', path: 'dir/inner' });
      expect(byName.get('same')!.map((f) => f.action)).toEqual(['downloaded', 'failed']);
      expect(byName.get('ok.txt.part')![0]).toMatchObject({ action: 'failed', error: { code: 'PATH_TAKEN' } });
      expect(out.failed).toBe(3);
      // A name of 5,000 characters becomes a file name the disk takes (≤ 240 bytes, the extension kept).
      const long = byName.get('L'.repeat(5000) + '.bin')![0];
      expect(long.action).toBe('downloaded');
      expect(Buffer.byteLength(long.path)).toBeLessThanOrEqual(240);
      expect(long.path.endsWith('.bin')).toBe(true);
      const files = tree(dir);
      expect(files.filter((f) => f.endsWith('.part'))).toEqual([]);
      for (const f of files.filter((f) => !f.endsWith('/')))
        expect(blake3Of(fs.readFileSync(path.join(dir, f)))).toBe(blake3Of(CONTENT));
      expect(files).toEqual(
        expect.arrayContaining(['x', 'evil', 'b', 'nulbyte', 'dir/', 'dir/inner', 'same', 'ok.txt', assets[3]!.id]),
      );
    } finally {
      await fake.close();
    }
  });

  test("a folder already at an asset's path is not replaced, and a .part that is a symlink is not written through", async () => {
    const fake = await fakeServer(listing([fakeAsset('folder'), fakeAsset('linked.bin')]));
    try {
      const parent = fs.mkdtempSync(path.join(work, 'existing-'));
      const dir = path.join(parent, 'target');
      fs.mkdirSync(path.join(dir, 'folder'), { recursive: true });
      const victim = path.join(parent, 'victim.txt');
      fs.writeFileSync(victim, 'untouched');
      fs.symlinkSync(victim, path.join(dir, 'linked.bin.part'));
      const r = await runCli(['pull', dir, '--json'], { ASSETS_URL: fake.url, ASSETS_API_KEY: 'k' });
      noStackTrace(r);
      expect(r.code).toBe(1);
      const out = JSON.parse(r.stdout);
      expect(out.files.map((f: any) => [f.name, f.action, f.error?.code])).toEqual([
        ['folder', 'failed', 'PATH_TAKEN'],
        ['linked.bin', 'failed', 'ELOOP'],
      ]);
      expect(fs.readFileSync(victim, 'utf8')).toBe('untouched');
      expect(fs.readdirSync(path.join(dir, 'folder'))).toEqual([]);
    } finally {
      await fake.close();
    }
  });

  test('content that is not what the listing said is never kept: a wrong hash, an endless body', async () => {
    const evil = Buffer.alloc(CONTENT.length, 0x45);
    const wrong = await fakeServer(
      listing([fakeAsset('wrong.bin')], (_req, res) => {
        res.writeHead(200, { 'content-length': evil.length });
        res.end(evil);
      }),
    );
    const endless = await fakeServer(
      listing([fakeAsset('endless.bin')], (req, res) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream' }); // chunked, no end
        const block = Buffer.alloc(1 << 20, 0x41);
        const more = (): void => {
          while (!res.destroyed && res.write(block));
        };
        res.on('drain', more);
        more();
        req.on('close', () => res.destroy());
      }),
    );
    try {
      const a = await pullFrom(wrong.url, 'wrong');
      expect(a.r.code).toBe(1);
      expect(a.out.files[0]).toMatchObject({ action: 'failed', error: { code: 'HASH_MISMATCH' } });
      expect(tree(a.dir)).toEqual([]);
      const b = await pullFrom(endless.url, 'endless');
      expect(b.r.code).toBe(1);
      expect(b.out.files[0]).toMatchObject({ action: 'failed', error: { code: 'SIZE_MISMATCH' } });
      expect(tree(b.dir)).toEqual([]);
    } finally {
      await wrong.close();
      await endless.close();
    }
  });

  test('answers that are not the API (HTML, invalid JSON, the wrong shape) fail with INVALID_RESPONSE, exit 1, an error object on stdout', async () => {
    const answers: [string, string][] = [
      ['text/html', '<html><body>Sign in to the proxy</body></html>'],
      ['application/json', '{"assets": [1, 2'],
      ['application/json', '{"assets": [{"id": 5, "name": null, "size": "big"}], "has_more": false}'],
      [
        'application/json',
        '{"assets": [{"id": "../../etc", "name": "x", "size": 1, "asset_hash": "blake3:00", "tags": []}]}',
      ],
    ];
    for (const [type, body] of answers) {
      const fake = await fakeServer((_req, res) => res.writeHead(200, { 'content-type': type }).end(body));
      try {
        for (const args of [
          ['ls', '--json'],
          ['get', crypto.randomUUID(), '--json'],
        ]) {
          const r = await runCli([...args, '--timeout', '2'], { ASSETS_URL: fake.url, ASSETS_API_KEY: 'k' });
          noStackTrace(r);
          expect([r.code, JSON.parse(r.stdout).error.code]).toEqual([1, 'INVALID_RESPONSE']);
          expect(r.stderr).toMatch(/^assets: INVALID_RESPONSE: /);
        }
        const { r, out } = await pullFrom(fake.url, 'html');
        expect([r.code, out.error.code]).toEqual([1, 'INVALID_RESPONSE']);
      } finally {
        await fake.close();
      }
    }
  });

  test('429 with Retry-After and 503 are waited out and retried; a 5xx that persists fails with its code', async () => {
    const asset = fakeAsset('retried.bin');
    let listings = 0;
    let contents = 0;
    const fake = await fakeServer((req, res) => {
      const isContent = req.url!.includes('/content');
      const n = isContent ? ++contents : ++listings;
      if (n === 1)
        return void res
          .writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' })
          .end('{"code":"RATE_LIMITED","message":"slow down"}');
      if (n === 2)
        return void res.writeHead(503, { 'retry-after': '0', 'content-type': 'text/html' }).end('<b>busy</b>');
      listing([asset])(req, res);
    });
    const broken = await fakeServer((_req, res) =>
      res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad Gateway</h1>'),
    );
    try {
      const { r, out } = await pullFrom(fake.url, 'retry');
      expect(r.code).toBe(0);
      expect(out.files[0]).toMatchObject({ action: 'downloaded' });
      expect([listings, contents]).toEqual([3, 3]);
      const gone = await runCli(['ls', '--json'], { ASSETS_URL: broken.url, ASSETS_API_KEY: 'k' });
      noStackTrace(gone);
      expect([gone.code, JSON.parse(gone.stdout).error.code]).toEqual([1, 'HTTP_502']);
      expect(broken.hits.length).toBe(4); // the first request and 3 retries
    } finally {
      await fake.close();
      await broken.close();
    }
  });

  test('a connection reset mid-body and a server that stalls fail as NETWORK (the stall after --timeout), exit 1; the next run resumes the part', async () => {
    const asset = fakeAsset('cut.bin');
    let resets = true;
    const fake = await fakeServer(
      listing([asset], (req, res) => {
        const range = /bytes=(\d+)-/.exec(req.headers.range ?? '');
        const from = range ? Number(range[1]) : 0;
        if (!resets) {
          res.writeHead(range ? 206 : 200, {
            'content-length': CONTENT.length - from,
            ...(range ? { 'content-range': `bytes ${from}-${CONTENT.length - 1}/${CONTENT.length}` } : {}),
          });
          return void res.end(CONTENT.subarray(from));
        }
        res.writeHead(200, { 'content-length': CONTENT.length });
        res.write(CONTENT.subarray(0, 10));
        setTimeout(() => req.socket.destroy(), 20);
      }),
    );
    const stall = await fakeServer(() => undefined); // never answers
    const stallBody = await fakeServer(
      (_req, res) =>
        void res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' }).write('{"assets":['),
    );
    try {
      const first = await pullFrom(fake.url, 'reset');
      expect(first.r.code).toBe(1);
      expect(first.out.files[0]).toMatchObject({ action: 'failed', error: { code: 'NETWORK' } });
      expect(fs.statSync(path.join(first.dir, 'cut.bin.part')).size).toBe(10);
      resets = false;
      const again = await runCli(['pull', first.dir, '--json'], { ASSETS_URL: fake.url, ASSETS_API_KEY: 'k' });
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout).files[0]).toMatchObject({
        action: 'downloaded',
        bytes_received: CONTENT.length - 10,
      });
      expect(fs.readFileSync(path.join(first.dir, 'cut.bin')).equals(CONTENT)).toBe(true);

      for (const s of [stall, stallBody]) {
        const r = await runCli(['ls', '--json', '--timeout', '0.5'], { ASSETS_URL: s.url, ASSETS_API_KEY: 'k' });
        noStackTrace(r);
        expect([r.code, JSON.parse(r.stdout).error.code]).toEqual([1, 'NETWORK']);
        expect(JSON.parse(r.stdout).error.message).toMatch(/no answer in time/);
      }
      // A stalled content body (after its head): the raw socket reader gives up too.
      const stalledContent = await fakeServer(
        listing(
          [fakeAsset('stalled.bin')],
          (_req, res) => void res.writeHead(200, { 'content-length': CONTENT.length }).write(CONTENT.subarray(0, 5)),
        ),
      );
      try {
        const { r, out } = await pullFrom(stalledContent.url, 'stalled', ['--timeout', '0.5']);
        expect(r.code).toBe(1);
        expect(out.files[0]).toMatchObject({ action: 'failed', error: { code: 'NETWORK' } });
      } finally {
        await stalledContent.close();
      }
    } finally {
      await fake.close();
      await stall.close();
      await stallBody.close();
    }
  });
});

describe('more from a hostile server', () => {
  test('escape sequences in names never reach the terminal: ls, get and pull show them escaped', async () => {
    const name = 'evil\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202Etxt.exe';
    const asset = fakeAsset(name);
    const fake = await fakeServer((req, res) => {
      if (req.url!.startsWith(`/api/assets/${asset.id}`) && !req.url!.includes('/content'))
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(asset));
      listing(
        [asset],
        (_q, r) => void r.writeHead(500, { 'content-type': 'text/plain' }).end('\u001b[31mboom\u001b[0m'),
      )(req, res);
    });
    try {
      const env = { ASSETS_URL: fake.url, ASSETS_API_KEY: 'k' };
      const bad = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/;
      const ls = await runCli(['ls'], env);
      expect(ls.code).toBe(0);
      expect(ls.stdout).not.toMatch(bad);
      expect(ls.stdout).toContain('evil\\u001b]0;pwned\\u0007');
      const get = await runCli(['get', asset.id], env);
      expect(get.stdout).not.toMatch(bad);
      const dir = fs.mkdtempSync(path.join(work, 'escapes-'));
      const pull = await runCli(['pull', dir, '--timeout', '1'], env);
      expect(pull.code).toBe(1);
      expect(pull.stderr).not.toMatch(bad);
      expect(pull.stderr).toContain('\\u001b[31mboom');
      // --json keeps the name as sent (JSON escapes the controls itself).
      const json = await runCli(['ls', '--json'], env);
      expect(JSON.parse(json.stdout).assets[0].name).toBe(name);
    } finally {
      await fake.close();
    }
  });

  test('a listing whose cursor never moves is refused instead of listed for ever', async () => {
    const asset = fakeAsset('loop.bin');
    const fake = await fakeServer((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ assets: [asset], total: 1e9, has_more: true, next_cursor: 'same' })),
    );
    try {
      const { r, out } = await pullFrom(fake.url, 'cursor');
      expect([r.code, out.error.code]).toEqual([1, 'INVALID_RESPONSE']);
      expect(fake.hits.length).toBe(2);
    } finally {
      await fake.close();
    }
  });

  test("download: a task whose status is not one of the contract's is refused instead of followed for ever", async () => {
    const taskId = crypto.randomUUID();
    const fake = await fakeServer((req, res) => {
      const send = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/api/assets/download') return void send(202, { task_id: taskId, status: 'created' });
      send(200, { id: taskId, task_name: 'download_file', status: 'thinking', progress: { bytes_total: -1 } });
    });
    try {
      const r = await runCli(['download', 'https://huggingface.co/a/b/resolve/main/c.bin', '--json'], {
        ASSETS_URL: fake.url,
        ASSETS_API_KEY: 'k',
      });
      noStackTrace(r);
      expect([r.code, JSON.parse(r.stdout).error.code]).toEqual([1, 'INVALID_RESPONSE']);
    } finally {
      await fake.close();
    }
  });

  test('push to a tus server that takes no byte (its offset never moves) or names an offset outside the file: the upload ends, it does not loop', async () => {
    const file = path.join(work, 'tus-victim.bin');
    const SIZE = 8 << 20;
    // As large as a file that goes up resumably (RESUMABLE_MIN); a smaller one is sent in one multipart request.
    fs.writeFileSync(file, crypto.randomBytes(SIZE));
    for (const [offset, code] of [
      ['0', 'NO_PROGRESS'],
      ['-5', 'INVALID_RESPONSE'],
      ['99999999999', 'INVALID_RESPONSE'],
    ] as const) {
      let patches = 0;
      const fake = await fakeServer((req, res) => {
        req.resume();
        req.on('end', () => {
          const tus = { 'tus-resumable': '1.0.0' };
          if (req.method === 'OPTIONS')
            return void res.writeHead(204, { ...tus, 'tus-version': '1.0.0', 'tus-max-size': '999999999' }).end();
          if (req.method === 'HEAD' && req.url!.startsWith('/api/assets/hash/')) return void res.writeHead(404).end();
          if (req.method === 'POST') return void res.writeHead(201, { ...tus, location: '/api/uploads/abc' }).end();
          if (req.method === 'PATCH') {
            patches++;
            return void res.writeHead(204, { ...tus, 'upload-offset': offset }).end();
          }
          if (req.method === 'HEAD')
            return void res
              .writeHead(200, {
                ...tus,
                'upload-offset': '0',
                'upload-length': String(SIZE),
                'cache-control': 'no-store',
              })
              .end();
          res.writeHead(404).end();
        });
      });
      try {
        const r = await runCli(['push', file, '--json'], {
          ASSETS_URL: fake.url,
          ASSETS_API_KEY: 'k',
          HOME: work,
          XDG_CACHE_HOME: path.join(work, `tus-cache-${code}-${offset}`),
        });
        noStackTrace(r);
        expect([r.code, JSON.parse(r.stdout).files[0].error.code]).toEqual([1, code]);
        expect(patches).toBeLessThanOrEqual(3);
      } finally {
        await fake.close();
      }
    }
  });

  test('a bad --url or --api-key is a usage error (exit 2) at once, not a network error retried for seconds', async () => {
    for (const env of [
      { ASSETS_URL: 'not a url', ASSETS_API_KEY: 'k' },
      { ASSETS_URL: 'ftp://example.com', ASSETS_API_KEY: 'k' },
      { ASSETS_URL: 'http://127.0.0.1:9', ASSETS_API_KEY: 'line\nbreak' },
    ]) {
      const r = await runCli(['ls', '--json'], env);
      noStackTrace(r);
      expect([r.code, JSON.parse(r.stdout).error.code]).toEqual([2, 'USAGE']);
    }
  });

  test('push: a server that claims to store the content but answers an asset of other content is HASH_MISMATCH', async () => {
    const file = path.join(work, 'claimed.bin');
    fs.writeFileSync(file, crypto.randomBytes(500));
    const fake = await fakeServer((req, res) => {
      req.resume();
      if (req.method === 'OPTIONS') return void res.writeHead(204, { 'tus-resumable': '1.0.0' }).end();
      if (req.method === 'HEAD') return void res.writeHead(200).end();
      res
        .writeHead(201, { 'content-type': 'application/json' })
        .end(JSON.stringify({ ...fakeAsset('claimed.bin'), created_new: true }));
    });
    try {
      const r = await runCli(['push', file, '--tag', 'x', '--json'], {
        ASSETS_URL: fake.url,
        ASSETS_API_KEY: 'k',
        HOME: work,
      });
      noStackTrace(r);
      expect([r.code, JSON.parse(r.stdout).files[0].error.code]).toEqual([1, 'HASH_MISMATCH']);
    } finally {
      await fake.close();
    }
  });

  test('export: an archive download that breaks off leaves neither the file nor a .part', async () => {
    const taskId = crypto.randomUUID();
    const fake = await fakeServer((req, res) => {
      const send = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/api/assets/export')
        return void send(202, { task_id: taskId, status: 'created', message: 'export queued' });
      if (req.url === `/api/tasks/${taskId}`)
        return void send(200, {
          id: taskId,
          task_name: 'export_assets',
          status: 'completed',
          result: { export_name: 'x.zip' },
        });
      if (req.url === '/api/assets/exports/x.zip')
        return void send(200, { url: `http://${req.headers.host}/dl`, expires_at: new Date().toISOString() });
      if (req.url === '/dl') {
        res.writeHead(200, { 'content-type': 'application/zip', 'content-length': 100_000 });
        res.write(Buffer.alloc(1000));
        return void setTimeout(() => req.socket.destroy(), 20);
      }
      send(404, { code: 'NOT_FOUND', message: 'no' });
    });
    try {
      const dir = fs.mkdtempSync(path.join(work, 'export-'));
      const r = await runCli(['export', crypto.randomUUID(), path.join(dir, 'out.zip'), '--json'], {
        ASSETS_URL: fake.url,
        ASSETS_API_KEY: 'k',
      });
      noStackTrace(r);
      expect([r.code, JSON.parse(r.stdout).error.code]).toEqual([1, 'NETWORK']);
      expect(fs.readdirSync(dir)).toEqual([]);
    } finally {
      await fake.close();
    }
  });
});

describe('against the real service', () => {
  let svc: TestService;
  let proxy: CountingProxy;
  let env: Record<string, string>;
  beforeAll(async () => {
    svc = await startTestService();
    proxy = await new CountingProxy(svc.url).start();
    env = { ASSETS_URL: proxy.url, ASSETS_API_KEY: KEYS.alice, HOME: work, XDG_CACHE_HOME: path.join(work, 'cache') };
  });
  afterAll(async () => {
    await proxy?.close();
    await svc?.stop();
  });

  const assetsNamed = async (name: string): Promise<any[]> =>
    (await json(await svc.fetch(`/api/assets?limit=500&name_contains=${encodeURIComponent(name)}`))).assets.filter(
      (a: any) => a.name === name,
    );

  test('FIFOs, sockets, symlink loops and dangling links in a pushed tree: skipped or listed as failed, the rest pushed, nothing hangs', async () => {
    const dir = path.join(work, 'specials');
    fs.mkdirSync(path.join(dir, 'sub'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'good.bin'), crypto.randomBytes(1000));
    fs.writeFileSync(path.join(dir, 'sub', 'also.bin'), crypto.randomBytes(1000));
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    fs.symlinkSync('loop-b', path.join(dir, 'loop-a'));
    fs.symlinkSync('loop-a', path.join(dir, 'loop-b'));
    fs.symlinkSync('/nonexistent/target', path.join(dir, 'dangling'));
    fs.symlinkSync('..', path.join(dir, 'sub', 'up'));
    // A file name that is not UTF-8 (Latin-1 bytes), and names with a line break and a terminal escape.
    fs.writeFileSync(
      Buffer.concat([Buffer.from(dir + '/'), Buffer.from([0x6c, 0xe4, 0x74, 0x69, 0x6e]), Buffer.from('.bin')]),
      'latin-1 name',
    );
    fs.writeFileSync(path.join(dir, 'new\nline \u001b[31m.bin'), crypto.randomBytes(100));
    const socket = net.createServer().listen(path.join(dir, 'sock'));
    try {
      const r = await runCli(['push', dir, '--json'], env);
      noStackTrace(r);
      expect(r.code).toBe(1);
      const out = JSON.parse(r.stdout);
      const by = (f: string) => out.files.find((x: any) => path.basename(x.file) === f);
      expect(by('fifo')).toMatchObject({ action: 'skipped', error: { code: 'NOT_A_FILE' } });
      expect(by('sock')).toMatchObject({ action: 'skipped', error: { code: 'NOT_A_FILE' } });
      expect(by('loop-a')).toMatchObject({ action: 'failed', error: { code: 'ELOOP' } });
      expect(by('loop-b')).toMatchObject({ action: 'failed', error: { code: 'ELOOP' } });
      expect(by('good.bin').action).toBe('uploaded');
      expect(by('also.bin').action).toBe('uploaded');
      expect(by('new\nline \u001b[31m.bin').action).toBe('uploaded');
      expect(out.files.find((x: any) => x.file.includes('\ufffd'))).toMatchObject({
        action: 'failed',
        error: { code: 'INVALID_FILE_NAME' },
      });
      expect(r.stderr).not.toMatch(/\u001b/);
      expect(out.files).toHaveLength(8); // the dangling link is nothing; sub/up (a loop back) is walked once
      expect(out.failed).toBe(3);
      // A FIFO named on the command line is not opened (that would wait for a writer forever).
      const fifo = await runCli(['push', path.join(dir, 'fifo'), '--json'], env);
      expect([fifo.code, JSON.parse(fifo.stdout).files[0].error.code]).toEqual([0, 'NOT_A_FILE']);
      const loop = await runCli(['push', path.join(dir, 'loop-a'), '--json'], env);
      expect([loop.code, JSON.parse(loop.stdout).files[0].error.code]).toEqual([1, 'ELOOP']);
    } finally {
      socket.close();
    }
  });

  test('unreadable files and folders (EACCES) are listed as failed, exit 1, the others still pushed', async () => {
    const dir = path.join(work, 'locked');
    fs.mkdirSync(path.join(dir, 'closed'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'open.bin'), crypto.randomBytes(1000));
    fs.writeFileSync(path.join(dir, 'secret.bin'), crypto.randomBytes(1000));
    fs.writeFileSync(path.join(dir, 'closed', 'inside.bin'), crypto.randomBytes(1000));
    fs.chmodSync(path.join(dir, 'secret.bin'), 0o000);
    fs.chmodSync(path.join(dir, 'closed'), 0o000);
    // Root reads everything: run the client as nobody then, in folders nobody can use.
    const asRoot = process.getuid?.() === 0;
    const cache = path.join(work, 'cache-nobody');
    fs.mkdirSync(cache, { recursive: true, mode: 0o777 });
    fs.chmodSync(cache, 0o777);
    fs.chmodSync(work, 0o755);
    const proc = spawn(process.execPath, [CLI_MAIN, 'push', dir, '--json'], {
      env: { PATH: process.env.PATH ?? '', ...env, HOME: cache, XDG_CACHE_HOME: cache },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((r) => proc.on('close', r));
    fs.chmodSync(path.join(dir, 'closed'), 0o755);
    noStackTrace({ code, stdout, stderr });
    expect(code).toBe(1);
    const out = JSON.parse(stdout);
    const by = (f: string) => out.files.find((x: any) => path.basename(x.file) === f);
    expect(by('secret.bin')).toMatchObject({ action: 'failed', error: { code: 'EACCES' } });
    expect(by('closed')).toMatchObject({ action: 'failed', error: { code: 'EACCES' } });
    expect(by('open.bin').action).toBe('uploaded');
    expect(stderr).toMatch(/failed: .*secret\.bin: EACCES/);
  });

  test('a file that changes between its hash and its upload, or during the upload, never makes an asset (FILE_CHANGED, exit 1)', async () => {
    const dir = path.join(work, 'changing');
    fs.mkdirSync(dir, { recursive: true });
    const before = path.join(dir, 'grows.bin');
    fs.writeFileSync(before, crypto.randomBytes(200_000));
    // Written to after it was hashed, before its bytes are sent: when the client asks whether its hash is stored.
    proxy.onRequest = (method, p) => {
      if (method === 'HEAD' && p.startsWith('/api/assets/hash/')) fs.appendFileSync(before, 'more');
    };
    const from = proxy.requests.length;
    const r = await runCli(['push', before, '--json'], env);
    noStackTrace(r);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).files[0]).toMatchObject({ action: 'failed', error: { code: 'FILE_CHANGED' } });
    expect(
      proxy.requests
        .slice(from)
        .filter((q) => q.method === 'PATCH' || (q.method === 'POST' && q.path.startsWith('/api/uploads'))),
    ).toEqual([]);
    expect(await assetsNamed('grows.bin')).toEqual([]);

    // Rewritten in place (same size) while its upload runs: the bytes sent are not those hashed; the service
    // refuses them and the client says why. Both ways a file goes up: one multipart request (a small file) and a
    // resumable upload in PATCHes (from RESUMABLE_MIN).
    for (const [name, size, starts] of [
      ['rewritten.bin', 3 << 20, (m: string, p: string) => m === 'POST' && p.startsWith('/api/assets')],
      ['rewritten-big.bin', 9 << 20, (m: string, p: string) => m === 'PATCH' && p.startsWith('/api/uploads/')],
    ] as const) {
      const during = path.join(dir, name);
      fs.writeFileSync(during, crypto.randomBytes(size));
      let sends = 0;
      proxy.onRequest = (method, p) => {
        if (starts(method, p) && ++sends === 1) {
          const fd = fs.openSync(during, 'r+');
          fs.writeSync(fd, crypto.randomBytes(1024), 0, 1024, 2 * 1024 * 1024 + 10);
          fs.closeSync(fd);
        }
      };
      const r2 = await runCli(['push', during, '--json', '--chunk-size', '1'], env);
      proxy.onRequest = undefined;
      noStackTrace(r2);
      expect([name, r2.code]).toEqual([name, 1]);
      expect(JSON.parse(r2.stdout).files[0]).toMatchObject({ action: 'failed', error: { code: 'FILE_CHANGED' } });
      expect(await assetsNamed(name)).toEqual([]);
      // Once the file is still, it is pushed with the hash of what it is now.
      const r3 = await runCli(['push', during, '--json'], env);
      expect(r3.code).toBe(0);
      const [asset] = await assetsNamed(name);
      expect(asset.asset_hash).toBe(blake3Of(fs.readFileSync(during)));
    }
  });

  test('ENOSPC on the local disk during a pull: that file failed, no .part left, the others complete (tmpfs; skipped where mount is not allowed)', async () => {
    const mnt = path.join(work, 'small-disk');
    fs.mkdirSync(mnt, { recursive: true });
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt], { stdio: 'ignore' });
    } catch {
      console.warn('mount is not allowed here: the ENOSPC test is skipped');
      return;
    }
    try {
      const tag = `enospc-${crypto.randomBytes(4).toString('hex')}`;
      for (const [name, size] of [
        ['first.bin', 400 * 1024],
        ['second.bin', 900 * 1024],
      ] as const) {
        const res = await svc.fetch('/api/assets', {
          method: 'POST',
          body: uploadForm(crypto.randomBytes(size), { name, tags: tag }),
        });
        expect(res.status).toBe(201);
      }
      const r = await runCli(['pull', '--tag', tag, mnt, '--json', '--concurrency', '1'], env);
      noStackTrace(r);
      expect(r.code).toBe(1);
      const out = JSON.parse(r.stdout);
      expect(out.files.map((f: any) => [f.name, f.action, f.error?.code])).toEqual([
        ['first.bin', 'downloaded', undefined],
        ['second.bin', 'failed', 'ENOSPC'],
      ]);
      expect(fs.readdirSync(mnt)).toEqual(['first.bin']);
    } finally {
      execFileSync('umount', [mnt]);
    }
  });

  test('a state file that cannot be written costs resuming, not the push: a warning, the file uploaded', async () => {
    const file = path.join(work, 'stateless.bin');
    // A file that goes up resumably (RESUMABLE_MIN): a smaller one keeps no state.
    fs.writeFileSync(file, crypto.randomBytes(8 << 20));
    const r = await runCli(['push', file, '--json', '--state-file', path.join(file, 'under-a-file.json')], env);
    noStackTrace(r);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).files[0].action).toBe('uploaded');
    expect(r.stderr).toMatch(/warning: cannot keep upload state .*(ENOTDIR|EEXIST)/);
  });

  test('exit codes and --json in every case: rm, a usage error, an unknown id', async () => {
    const gone = await runCli(['rm', crypto.randomUUID(), '--json'], env);
    noStackTrace(gone);
    expect([gone.code, JSON.parse(gone.stdout).error.code]).toEqual([1, 'ASSET_NOT_FOUND']);
    const usage = await runCli(['pull', '--concurrency', 'x', work, '--json'], env);
    expect([usage.code, JSON.parse(usage.stdout).error.code]).toEqual([2, 'USAGE']);
    const noKey = await runCli(['ls', '--json'], { ...env, ASSETS_API_KEY: 'wrong' });
    expect([noKey.code, JSON.parse(noKey.stdout).error.code]).toEqual([1, 'UNAUTHORIZED']);
    const a = await json(
      await svc.fetch('/api/assets', {
        method: 'POST',
        body: uploadForm(crypto.randomBytes(100), { name: 'to-remove.bin' }),
      }),
    );
    const rm = await runCli(['rm', a.id, '--json'], env);
    expect([rm.code, JSON.parse(rm.stdout)]).toEqual([0, { deleted: a.id }]);
  });
});
