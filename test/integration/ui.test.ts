/**
 * The asset browser (GET /ui) in headless Chromium (playwright-core) against the real service: the
 * key prompt (a wrong key refused), the grid with thumbnails, a tag facet, the second page by scrolling, a detail
 * renamed, uploads by drag-and-drop and by the file input, a download from the fake Hugging Face server followed
 * to completion (and a held one cancelled), and a selection exported when the service has `startExport`.
 * Screenshots are kept in test-artifacts/ui-*.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import sharp from 'sharp';
import { json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { startFakeHub, type FakeHub } from '../helpers/fake-hub';
import { gql } from '../helpers/graphql';

// Functions given to page.evaluate run in the page, whose globals these are (the tests' tsconfig has no DOM library).
declare const document: any;
declare const DataTransfer: any;
declare const DragEvent: any;
declare const requestAnimationFrame: (f: () => void) => number;
type HTMLImageElement = any;

const { buildUi } = require('../../scripts/build-ui.cjs') as { buildUi(o?: { outDir?: string }): Promise<{ script: string; style: string }> };

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts');
const PAGE_SIZE = 24;
const IMAGES = 30;

let svc: TestService;
let hub: FakeHub;
let browser: Browser | undefined;
let page: Page;
const pageErrors: string[] = [];
const foreign: string[] = [];
const badAnswers: string[] = [];
/** Every URL the page asked for: the key must never be in one. */
const requested: string[] = [];

/** A small picture that looks like one: a two-hue gradient with a disc, different for every seed. */
function picture(seed: number): Promise<Buffer> {
  const h1 = (seed * 47) % 360;
  const h2 = (h1 + 50) % 360;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="240">
    <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">
      <stop offset="0" stop-color="hsl(${h1},70%,62%)"/><stop offset="1" stop-color="hsl(${h2},65%,38%)"/></linearGradient></defs>
    <rect width="320" height="240" fill="url(#g)"/>
    <circle cx="${90 + ((seed * 37) % 140)}" cy="${80 + ((seed * 23) % 80)}" r="${30 + (seed % 4) * 10}" fill="hsl(${(h1 + 180) % 360},80%,85%)" fill-opacity="0.85"/>
  </svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

async function upload(data: Buffer, name: string, tags: string): Promise<string> {
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(data, { tags }, name) });
  expect(res.status).toBe(201);
  return (await json(res)).id;
}

const shot = (name: string) => page.screenshot({ path: path.join(ARTIFACTS, `ui-${name}.png`) });
const tiles = () => page.locator('.grid .tile');

beforeAll(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await buildUi();
  hub = await startFakeHub();
  svc = await startTestService({ HF_ENDPOINT: hub.url });
  // Oldest first so the newest (the grid's first tiles) are the last ones made here.
  const ids: string[] = [];
  for (let i = 0; i < IMAGES; i++) ids.push(await upload(await picture(i), `render_${String(i).padStart(3, '0')}.png`, i % 3 === 0 ? 'output,cats' : 'output'));
  await upload(Buffer.from('{"__metadata__":{}}'), 'SDXL/base.safetensors', 'models,checkpoints');
  await waitFor(
    async () => {
      const r = await gql(svc, '{ assets(limit: 100) { items { thumbnailUrl } } }');
      return r.data.assets.items.filter((a: { thumbnailUrl?: string }) => a.thumbnailUrl).length >= IMAGES ? true : undefined;
    },
    { timeoutMs: 40_000, what: 'thumbnails of the uploaded PNGs' },
  );

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--disable-component-update', '--no-first-run'],
  });
  page = await browser.newPage({ viewport: { width: 1360, height: 860 } });
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(svc.url) || url.startsWith('blob:') || url.startsWith('data:')) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => {
    // Failed requests are checked one by one below (badAnswers), with their URLs.
    if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) pageErrors.push(m.text());
  });
  page.on('request', (r) => requested.push(r.url()));
  page.on('response', (r) => {
    if (r.status() >= 400) badAnswers.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
  });
}, 80_000);

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
  await hub?.close();
});

test('GET /ui: the page and its files without a key, a strict CSP, nothing from elsewhere', async () => {
  const res = await svc.fetch('/ui', { key: null });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  const csp = res.headers.get('content-security-policy')!;
  expect(csp).toMatch(/default-src 'self'/);
  // This origin's files, and the page's one inline script by its hash (it sends the first screen's requests early).
  expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/]{43}=';/);
  expect(csp).not.toMatch(/unsafe/);
  const html = await res.text();
  expect(html).not.toMatch(/https?:\/\//);
  const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  // The stylesheet, the module script and the chunks it imports at once (modulepreload).
  expect(refs.length).toBeGreaterThanOrEqual(2);
  for (const ref of refs) {
    const file = await svc.fetch(ref, { key: null });
    expect({ ref, status: file.status }).toEqual({ ref, status: 200 });
    expect(file.headers.get('cache-control')).toMatch(/immutable/);
  }
  expect((await svc.fetch('/ui/assets/..%2Fmanifest.json', { key: null })).status).toBe(404);
  expect((await svc.fetch('/ui/assets/manifest.json', { key: null })).status).toBe(404);
});

test('the browser: key, grid, facets, paging, details, uploads, downloads, selection', async () => {
  try {
    await walkThrough();
  } catch (err) {
    await shot('failure').catch(() => undefined);
    throw err;
  }
}, 90_000);

async function walkThrough(): Promise<void> {
  // 1. The key: a wrong one is refused and said so; the right one opens the grid.
  await page.goto(`${svc.url}/ui?pageSize=${PAGE_SIZE}`);
  await page.getByLabel('API key').fill('not-a-key');
  await page.getByRole('button', { name: 'Open' }).click();
  await page.getByRole('alert').filter({ hasText: 'refused' }).waitFor();
  expect(await page.getByRole('alert').innerText()).toMatch(/401 UNAUTHORIZED/);
  await shot('key-refused');
  await page.getByLabel('API key').fill(KEYS.alice);
  await page.getByRole('button', { name: 'Open' }).click();
  await tiles().first().waitFor();
  expect(await page.evaluate(() => sessionStorage.getItem('assetBrowser.apiKey'))).toBe(KEYS.alice);

  // 2. The first page, every image tile showing its thumbnail (the browser fetches each <img src> itself, with a
  // signed thumbnail access grant in the URL, never the key). Where the
  // page does not fill the view (and 400 px beyond), the grid goes on to the next page at once, as it should: hence
  // "at least" a page here and below.
  expect(await tiles().count()).toBeGreaterThanOrEqual(PAGE_SIZE);
  await waitFor(async () =>
    (await page.evaluate(() => [...document.querySelectorAll('.tile img')].filter((i: HTMLImageElement) => i.complete && i.naturalWidth > 0).length)) >= PAGE_SIZE - 1
      ? true
      : undefined,
  );
  expect(await page.locator('.tile img').first().getAttribute('src')).toMatch(new RegExp(`^${svc.url}/api/assets/[0-9a-f-]{36}/thumbnail\\?access=[\\w.-]+$`));
  expect(await page.locator('.facets').innerText()).toMatch(/cats\s*10/);
  await shot('grid');

  // 3. Scrolling to the end loads the next page by cursor.
  await page.locator('main.content').evaluate((el) => el.scrollTo(0, el.scrollHeight));
  await waitFor(async () => ((await tiles().count()) === IMAGES + 1 ? true : undefined), { what: 'the second page' });
  await expect(page.locator('.tile[data-id] .tile-name', { hasText: 'base.safetensors' }).count()).resolves.toBe(1);
  await page.locator('main.content').evaluate((el) => el.scrollTo(0, 0));

  // 4. A facet filters the grid.
  await page.locator('.facet', { hasText: 'cats' }).click();
  await waitFor(async () => ((await tiles().count()) === 10 ? true : undefined), { what: 'the cats facet' });
  expect(await page.locator('.toolbar .count').innerText()).toMatch(/10 assets tagged cats/);
  await page.locator('.facet', { hasText: 'cats' }).click();
  await waitFor(async () => ((await tiles().count()) >= PAGE_SIZE ? true : undefined));

  // 5. Search by name.
  await page.getByLabel('Search by name').fill('render_007');
  await waitFor(async () => ((await tiles().count()) === 1 ? true : undefined), { what: 'the search' });
  await page.getByLabel('Search by name').fill('');
  await waitFor(async () => ((await tiles().count()) >= PAGE_SIZE ? true : undefined));

  // 6. Details by keyboard: focus a tile, arrows move, Enter opens, rename, Escape closes.
  const id = (await page.locator('.tile-main').nth(1).getAttribute('data-asset-id'))!;
  await page.locator('.tile-main').first().focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowUp');
  expect(await page.evaluate(() => document.activeElement?.getAttribute('data-asset-id'))).toBe(id);
  await page.keyboard.press('Enter');
  await page.locator('.drawer').waitFor();
  expect(await page.locator('.drawer').innerText()).toMatch(/blake3:[0-9a-f]{64}/);
  expect(await page.locator('.drawer').innerText()).toMatch(/width\s*320/);
  await page.getByLabel('Name', { exact: true }).fill('sunset-final.png');
  await page.getByRole('textbox', { name: 'Tags' }).fill('output, favourites');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.locator('.drawer .ok', { hasText: 'Saved' }).waitFor();
  await page.locator(`.tile[data-id="${id}"] .tile-name`, { hasText: 'sunset-final.png' }).waitFor();
  const renamed = await json(await svc.fetch(`/api/assets/${id}`));
  expect(renamed).toMatchObject({ name: 'sunset-final.png', tags: ['output', 'favourites'] });
  await page.locator('.facet', { hasText: 'favourites' }).waitFor();
  await shot('detail');
  await page.keyboard.press('Escape');
  await page.locator('.drawer').waitFor({ state: 'detached' });
  await waitFor(async () => ((await page.evaluate(() => document.activeElement?.getAttribute('data-asset-id'))) === id ? true : undefined), {
    what: 'focus back on the tile',
  });

  // 7. Upload by drag and drop (a synthetic drop with a DataTransfer), then by the file input.
  const dropped = (await picture(99)).toString('base64');
  await page.evaluate((b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], 'dropped.png', { type: 'image/png' }));
    for (const type of ['dragenter', 'dragover', 'drop']) document.body.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, dropped);
  await page.locator('.tile .tile-name', { hasText: 'dropped.png' }).waitFor({ timeout: 20_000 });
  await page.locator('[data-upload="dropped.png"].status-done').waitFor();
  // Through resumable (tus) uploads where the service has them, else the GraphQL multipart upload.
  const hasTus = (await svc.fetch('/api/uploads', { method: 'OPTIONS' })).status !== 404;
  expect(await page.locator('[data-upload="dropped.png"]').getAttribute('data-via')).toBe(hasTus ? 'tus' : 'graphql');
  await page.locator('#file-input').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('prompt notes\n') });
  await page.locator('.tile .tile-name', { hasText: 'notes.txt' }).waitFor({ timeout: 20_000 });
  // The dropped PNG gets its thumbnail a moment later, without a reload.
  await page.locator('.tile', { hasText: 'dropped.png' }).locator('img').waitFor({ timeout: 20_000 });

  // 8. A download by URL from the (fake) Hugging Face server, followed to completion; a stalled one cancelled.
  hub.hold('big-model.safetensors', 50 * 1024 * 1024);
  await page.getByLabel('Download from URL').fill(hub.fileUrl('big-model.safetensors'));
  await page.getByRole('button', { name: 'Start download' }).click();
  const held = page.locator('[data-task-id][data-status="running"]');
  await held.waitFor({ timeout: 20_000 });
  hub.set('lora-v2.safetensors', Buffer.alloc(3 * 1024 * 1024, 7));
  await page.getByLabel('Download from URL').fill(hub.fileUrl('lora-v2.safetensors'));
  await page.getByRole('button', { name: 'Start download' }).click();
  await page.locator('[data-task-id][data-status="completed"]', { hasText: 'lora-v2.safetensors' }).waitFor({ timeout: 30_000 });
  await page.locator('.tile .tile-name', { hasText: 'lora-v2.safetensors' }).waitFor({ timeout: 10_000 });
  await shot('activity');
  await held.getByRole('button', { name: /^Cancel/ }).click();
  await page.locator('[data-task-id][data-status="cancelled"], [data-task-id][data-status="failed"]').first().waitFor({ timeout: 20_000 });
  hub.release();

  // 9. Select two (checkbox, then shift-click for the range) and export when the service can.
  await page.locator('.tile-check').nth(1).click();
  await page.locator('.tile-check').nth(2).click({ modifiers: ['Shift'] });
  await page.getByRole('group', { name: 'Selection' }).getByText('2 selected').waitFor();
  const exportButton = page.getByRole('button', { name: 'Export as ZIP' });
  const canExport = (await gql(svc, '{ __type(name: "Mutation") { fields { name } } }')).data.__type.fields.some((f: { name: string }) => f.name === 'startExport');
  if (canExport) {
    await exportButton.click();
    const link = page.getByRole('link', { name: 'Download archive' });
    await link.waitFor({ timeout: 30_000 });
    const href = (await link.getAttribute('href'))!;
    const zip = await fetch(href.startsWith('http') ? href : svc.url + href);
    expect(zip.status).toBe(200);
    expect((await zip.arrayBuffer()).byteLength).toBeGreaterThan(100);
  } else {
    expect(await exportButton.isDisabled()).toBe(true);
  }
  await shot('selection');

  // The whole tool at once (the README's picture): a detail open beside the grid, the activity below.
  await page.getByRole('button', { name: 'Clear selection' }).click();
  await page.locator(`.tile-main[data-asset-id="${id}"]`).click();
  await page.locator('.drawer img').waitFor();
  await shot('overview');

  expect(foreign).toEqual([]);
  expect(pageErrors).toEqual([]);
  expect(requested.length).toBeGreaterThan(PAGE_SIZE);
  expect(requested.filter((u) => u.includes(KEYS.alice) || u.includes(encodeURIComponent(KEYS.alice)))).toEqual([]);
  // The wrong key's 401, and /api/uploads missing (404) where this service has no resumable uploads yet.
  expect(badAnswers.filter((a) => a !== '401 POST /graphql' && a !== '404 POST /api/uploads')).toEqual([]);
}

test('without a thumbnail access grant (a service that has none), thumbnails are fetched with the key header instead', async () => {
  const context = await browser!.newContext({ viewport: { width: 1360, height: 860 } });
  try {
    await context.addInitScript((key) => sessionStorage.setItem('assetBrowser.apiKey', key), KEYS.alice);
    await context.route('**/api/thumbnail-access', (route) => route.fulfill({ status: 404, contentType: 'application/json', body: '{"code":"NOT_FOUND","message":"no route"}' }));
    const p = await context.newPage();
    await p.goto(`${svc.url}/ui`);
    await waitFor(async () => ((await p.evaluate(() => [...document.querySelectorAll('.tile img')].filter((i: HTMLImageElement) => i.complete && i.naturalWidth > 0).length)) > 0 ? true : undefined));
    expect(await p.locator('.tile img').first().getAttribute('src')).toMatch(/^blob:/);
  } finally {
    await context.close();
  }
});

test('a first page of 100 tiles, every thumbnail fetched, loads in about a second on loopback', async () => {
  for (let i = 0; i < 70; i++) await upload(await picture(200 + i), `batch_${String(i).padStart(3, '0')}.png`, 'batch');
  await waitFor(
    async () => {
      const r = await gql(svc, '{ assets(limit: 100) { items { mimeType thumbnailUrl } } }');
      const images = r.data.assets.items.filter((a: { mimeType: string }) => a.mimeType.startsWith('image/'));
      return images.every((a: { thumbnailUrl?: string }) => a.thumbnailUrl) ? true : undefined;
    },
    { timeoutMs: 40_000, what: 'thumbnails of the batch' },
  );
  const context = await browser!.newContext({ viewport: { width: 1360, height: 860 } });
  await context.addInitScript((key) => sessionStorage.setItem('assetBrowser.apiKey', key), KEYS.alice);
  const fresh = await context.newPage();
  const times: number[] = [];
  const phases: string[] = [];
  for (let run = 0; run < 3; run++) {
    await fresh.goto(`${svc.url}/ui?pageSize=100`);
    const ms = await fresh.evaluate(
      () =>
        new Promise<{ shown: number; script: number; firstPage: number; cached: number }>((resolve) => {
          const at = (name: string) => Math.round(performance.getEntriesByName(name)[0]?.startTime ?? -1);
          const check = () => {
            const tiles = [...document.querySelectorAll('.tile')];
            const images = tiles.filter((t: any) => /^image\//.test(t.querySelector('.tile-meta')?.textContent ?? ''));
            const loaded = [...document.querySelectorAll('.tile img')].filter((i: any) => i.complete && i.naturalWidth > 0).length;
            if (tiles.length === 100 && images.length > 0 && loaded === images.length) {
              const script = performance.getEntriesByType('resource').find((e: any) => /app-.*\.js$/.test(e.name)) as any;
              const thumbs = performance.getEntriesByType('resource').filter((e: any) => /\/thumbnail(\?|$)/.test(e.name)) as any[];
              const cached = thumbs.filter((e) => e.transferSize === 0).length;
              resolve({ shown: Math.round(performance.now()), script: Math.round(script?.responseEnd ?? -1), firstPage: at('ui:first-page'), cached });
            }
            else requestAnimationFrame(check);
          };
          check();
        }),
    );
    times.push(ms.shown);
    phases.push(`script ${ms.script}, first page ${ms.firstPage}, thumbnails ${ms.shown} (${ms.cached} from the browser cache)`);
  }
  await context.close();
  // From navigation start to the last of the page's thumbnails shown (decoded in their <img>).
  console.log(`asset browser, first page of 100 tiles with thumbnails: ${times.join(', ')} ms (3 loads)\n  ms after navigation start: ${phases.join(' | ')}`);
  // The target is 1 s; the bound here leaves room for a loaded CI machine.
  expect(Math.min(...times)).toBeLessThan(3000);
}, 80_000);
