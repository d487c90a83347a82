/**
 * A web app on another origin, in headless Chromium (playwright-core), against the real service with CORS_ORIGINS
 * naming it (contract 3.7, 3.8): from a page served on a second local port it lists assets with the key, runs a
 * GraphQL query, uploads a file with tus-js-client (reading Location and Upload-Offset), shows a thumbnail_url and a
 * preview_url in <img src> (decoded: naturalWidth > 0) and follows a short_url with the key (302 to a signed URL
 * whose bytes load). The same page on an origin not listed gets no data: the browser blocks every answer.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import sharp from 'sharp';
import { json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';

// Functions given to page.evaluate run in the page, whose globals these are (the tests' tsconfig has no DOM library).
declare const tus: any;
declare const Image: any;
declare const Blob: any;

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const TUS_BROWSER_BUILD = require.resolve('tus-js-client/dist/tus.min.js');

let svc: TestService;
let browser: Browser | undefined;
let listed: http.Server;
let unlisted: http.Server;
let image: { id: string; bytes: Buffer };

/** A web app's origin: a blank page that loads tus-js-client's browser build. */
function appServer(): Promise<http.Server> {
  const page =
    '<!doctype html><html><head><meta charset="utf-8"><title>app</title><script src="/tus.min.js"></script></head><body></body></html>';
  const server = http.createServer((req, res) => {
    if (req.url === '/tus.min.js')
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(fs.readFileSync(TUS_BROWSER_BUILD));
    else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}
const originOf = (s: http.Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

beforeAll(async () => {
  listed = await appServer();
  unlisted = await appServer();
  svc = await startTestService({ CORS_ORIGINS: originOf(listed) });
  const bytes = await sharp({ create: { width: 120, height: 80, channels: 3, background: '#2a6' } })
    .png()
    .toBuffer();
  const res = await svc.fetch('/api/assets', {
    method: 'POST',
    body: uploadForm(bytes, { tags: 'output' }, 'shown.png'),
  });
  image = { id: (await json(res)).id, bytes };
  await waitFor(
    async () => ((await json(await svc.fetch(`/api/assets/${image.id}`))).thumbnail_url ? true : undefined),
    { what: 'the thumbnail' },
  );
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-gpu',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  await svc?.stop();
  listed?.close();
  unlisted?.close();
});

/** What the app does, run in its page: every call the browser makes to the service from that origin. */
async function runApp(origin: string): Promise<Record<string, unknown>> {
  const page = await browser!.newPage();
  try {
    await page.goto(`${origin}/`);
    return await page.evaluate(
      async ({ api, key }) => {
        const out: Record<string, unknown> = {};
        const step = async (name: string, fn: () => Promise<unknown>) => {
          try {
            out[name] = await fn();
          } catch (err) {
            out[name] = { error: String(err) };
          }
        };
        const headers = { 'X-API-Key': key };
        let listing: any;
        await step('rest', async () => {
          const r = await fetch(`${api}/api/assets?limit=10&tags_all=output`, { headers });
          listing = await r.json();
          return {
            status: r.status,
            names: listing.assets.map((a: any) => a.name),
            requestId: r.headers.get('x-request-id') !== null,
          };
        });
        await step('graphql', async () => {
          const r = await fetch(`${api}/graphql`, {
            method: 'POST',
            headers: { ...headers, 'Content-Type': 'application/json' },
            body: JSON.stringify({ query: '{ assets(limit: 10) { total items { name shortUrl } } }' }),
          });
          const body: any = await r.json();
          return {
            status: r.status,
            total: body.data.assets.total,
            names: body.data.assets.items.map((a: any) => a.name),
          };
        });
        await step(
          'tus',
          () =>
            new Promise((resolve, reject) => {
              const seen: { location?: string; offsets: string[]; assetId?: string } = { offsets: [] };
              const upload = new tus.Upload(new Blob(['hello from another origin']), {
                endpoint: `${api}/api/uploads`,
                headers,
                chunkSize: 10,
                retryDelays: null,
                metadata: { filename: 'from-browser.txt', tags: '["browser"]' },
                onAfterResponse: (_req: any, res: any) => {
                  seen.location ??= res.getHeader('Location') ?? undefined;
                  const offset = res.getHeader('Upload-Offset');
                  if (offset) seen.offsets.push(offset);
                  seen.assetId = res.getHeader('Asset-Id') ?? seen.assetId;
                },
                onSuccess: () => resolve({ ...seen, url: upload.url }),
                onError: (err: unknown) => reject(err),
              });
              upload.start();
            }),
        );
        const decoded = (src: string) =>
          new Promise((resolve) => {
            const img = new Image();
            img.onload = () => resolve({ naturalWidth: img.naturalWidth });
            img.onerror = () => resolve({ naturalWidth: 0, error: 'did not load' });
            img.src = src;
          });
        await step('images', async () => {
          const a = listing.assets.find((x: any) => x.name === 'shown.png');
          return { thumbnail: await decoded(a.thumbnail_url), preview: await decoded(a.preview_url) };
        });
        await step('short', async () => {
          const a = listing.assets.find((x: any) => x.name === 'shown.png');
          const r = await fetch(a.short_url, { headers });
          const bytes = new Uint8Array(await r.arrayBuffer());
          return {
            status: r.status,
            redirected: r.redirected,
            signed: new URL(r.url).searchParams.has('access'),
            length: bytes.length,
            type: r.headers.get('content-type'),
          };
        });
        return out;
      },
      { api: svc.url, key: KEYS.alice },
    );
  } finally {
    await page.close();
  }
}

test('a page on a listed origin uses REST, GraphQL, tus, <img src> media URLs and short_url with only CORS_ORIGINS set', async () => {
  const out: any = await runApp(originOf(listed));
  expect(out.rest).toEqual({ status: 200, names: ['shown.png'], requestId: true });
  expect(out.graphql).toMatchObject({ status: 200, total: 1, names: ['shown.png'] });
  expect(out.tus.location).toMatch(new RegExp(`^${svc.url}/api/uploads/[0-9a-f-]{36}$`));
  expect(out.tus.offsets.at(-1)).toBe(String('hello from another origin'.length));
  expect(out.tus.offsets.length).toBeGreaterThan(1);
  const made = await json(await svc.fetch(`/api/assets/${out.tus.assetId}`));
  expect([made.name, made.tags, made.size]).toEqual([
    'from-browser.txt',
    ['browser'],
    'hello from another origin'.length,
  ]);
  expect(out.images.thumbnail.naturalWidth).toBeGreaterThan(0);
  expect(out.images.preview.naturalWidth).toBe(120);
  expect(out.short).toEqual({
    status: 200,
    redirected: true,
    signed: true,
    length: image.bytes.length,
    type: 'image/png',
  });
});

test('the same page on an origin not listed gets no data (the browser blocks the answers)', async () => {
  const out: any = await runApp(originOf(unlisted));
  for (const step of ['rest', 'graphql', 'tus'])
    expect([step, String(out[step]?.error ?? 'no error')]).toEqual([
      step,
      expect.stringMatching(/fetch|tus|xhr|network|error/i),
    ]);
  // Nothing was uploaded from there.
  expect((await json(await svc.fetch('/api/assets?tags_all=browser'))).assets.map((a: any) => a.name)).toEqual([
    'from-browser.txt',
  ]);
});
