/**
 * The asset browser (GET /ui) in headless Chromium (playwright-core) against the real service, driven end to end:
 * the key prompt (a wrong key refused, focus on the search after sign-in), the grid with thumbnails (one tab stop),
 * facets (all-of / any-of, the other tags kept), the second page by scrolling, honest empty / offline / error states
 * with Retry, a detail renamed, copied and deleted, uploads with their tags chosen in a dialog, downloads (one
 * cancelled, one failed and retried), select all, bulk tags and bulk delete, an export whose link survives a reload,
 * the viewer (previous / next, audio, JSON as text) and the model library. axe-core checks each state.
 * Screenshots are kept in test-artifacts/ui-*.png. The layout at four viewports: ui-responsive.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { startFakeHub, type FakeHub } from '../helpers/fake-hub';
import { gql } from '../helpers/graphql';
import { ARTIFACTS, axeViolations, LAUNCH, picture, safetensors, wav, webm } from '../helpers/ui-checks';

// Functions given to page.evaluate run in the page, whose globals these are (the tests' tsconfig has no DOM library).
declare const document: any;
declare const DataTransfer: any;
declare const DragEvent: any;
declare const requestAnimationFrame: (f: () => void) => number;
declare const navigator: any;
type HTMLImageElement = any;

const { buildUi } = require('../../scripts/build-ui.cjs') as {
  buildUi(o?: { outDir?: string }): Promise<{ script: string; style: string }>;
};

const PAGE_SIZE = 24;
const IMAGES = 30;
/** The images, two models, a JSON file and a sound. */
const ALL = IMAGES + 5;

let svc: TestService;
let hub: FakeHub;
let browser: Browser | undefined;
let page: Page;
const pageErrors: string[] = [];
const foreign: string[] = [];
const badAnswers: string[] = [];
/** Every URL the page asked for: the key must never be in one. */
const requested: string[] = [];
/** The asset whose content has two tree paths. */
let pathsOf = '';

async function upload(data: Buffer, name: string, tags: string): Promise<string> {
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(data, { tags }, name) });
  expect(res.status).toBe(201);
  return (await json(res)).id;
}

const shot = (name: string) => page.screenshot({ path: path.join(ARTIFACTS, `ui-${name}.png`) });
const tiles = () => page.locator('.grid .tile');
/** The one asset of that name opened in the viewer: searched, its tile opened, then View in its details. */
async function viewOne(name: string): Promise<void> {
  await searchOne(name);
  await page.locator('.tile-main').first().click();
  await page.locator('.drawer').getByRole('button', { name: 'View', exact: true }).click();
}

/** Until the viewer's audio or video element has its media's metadata (a player that can play). */
async function playerReady(viewer: Locator, kind: 'audio' | 'video'): Promise<void> {
  await waitFor(async () => ((await viewer.locator(kind).evaluate((m: any) => m.readyState)) >= 1 ? true : undefined), {
    what: `the ${kind} player`,
  });
}

/** Searches by name and waits for the one tile of that name (not the previous search's one tile, still shown). */
async function searchOne(name: string): Promise<void> {
  await page.getByLabel('Search by name').fill(name);
  await waitFor(async () =>
    (await tiles().count()) === 1 && (await tiles().first().innerText()).includes(name) ? true : undefined,
  );
}

beforeAll(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await buildUi();
  hub = await startFakeHub();
  svc = await startTestService({ HF_ENDPOINT: hub.url });
  // Oldest first so the newest (the grid's first tiles) are the last ones made here: the images.
  await upload(safetensors({ ss_base_model_version: 'sdxl_base_v1-0' }), 'SDXL/base.safetensors', 'models,checkpoints');
  await upload(
    safetensors({ 'modelspec.architecture': 'flux-1-dev/lora' }),
    'detail-tweaker.safetensors',
    'models,model_type:loras,loras',
  );
  await upload(Buffer.from('{"prompt": "<b>not bold</b>", "steps": 30}'), 'workflow.json', 'notes');
  await upload(wav(), 'tone.wav', 'sounds');
  await upload(webm(), 'clip.webm', 'clips');
  const ids: string[] = [];
  for (let i = 0; i < IMAGES; i++)
    ids.push(
      await upload(
        await picture(i),
        `render_${String(i).padStart(3, '0')}.png`,
        i % 3 === 0 ? 'output,cats' : 'output',
      ),
    );
  // The second newest image's content was pushed under two tree paths (contract 6.2): its details list both.
  pathsOf = ids[IMAGES - 2]!;
  const added = await svc.fetch(`/api/assets/${pathsOf}/paths`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ paths: ['output/a/sunset.png', 'output/b/sunset copy.png'] }),
  });
  expect(added.status).toBe(200);
  await waitFor(
    async () => {
      const r = await gql(svc, '{ assets(limit: 100) { items { thumbnailUrl } } }');
      return r.data.assets.items.filter((a: { thumbnailUrl?: string }) => a.thumbnailUrl).length >= IMAGES
        ? true
        : undefined;
    },
    { timeoutMs: 40_000, what: 'thumbnails of the uploaded PNGs' },
  );

  browser = await chromium.launch(LAUNCH);
  const context = await browser.newContext({ viewport: { width: 1360, height: 860 }, acceptDownloads: true });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url });
  page = await context.newPage();
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
  // The icon, the stylesheet, the module script and the chunks it imports at once (modulepreload).
  expect(refs.length).toBeGreaterThanOrEqual(3);
  for (const ref of refs) {
    const file = await svc.fetch(ref, { key: null });
    expect({ ref, status: file.status }).toEqual({ ref, status: 200 });
    if (ref.startsWith('/ui/assets/')) expect(file.headers.get('cache-control')).toMatch(/immutable/);
  }
  expect(refs).toContain('/ui/favicon.svg');
  expect((await svc.fetch('/ui/favicon.svg', { key: null })).headers.get('content-type')).toMatch(/^image\/svg\+xml/);
  expect((await svc.fetch('/ui/assets/..%2Fmanifest.json', { key: null })).status).toBe(404);
  expect((await svc.fetch('/ui/assets/manifest.json', { key: null })).status).toBe(404);
});

test('the browser: key, grid, facets, states, details, uploads, downloads, bulk actions, export, viewer, models', async () => {
  try {
    await walkThrough();
  } catch (err) {
    await shot('failure').catch(() => undefined);
    if (pageErrors.length) console.error('page errors:', pageErrors);
    throw err;
  }
}, 180_000);

/** axe-core finds nothing serious or critical in this state of the page. */
async function accessible(state: string): Promise<void> {
  expect({ state, violations: await axeViolations(page) }).toEqual({ state, violations: [] });
}

async function walkThrough(): Promise<void> {
  // 1. The key: a wrong one is refused and said so; the right one opens the grid, with the focus in the search.
  await page.goto(`${svc.url}/ui?pageSize=${PAGE_SIZE}`);
  await page.getByLabel('API key').waitFor();
  await accessible('key prompt');
  await page.getByLabel('API key').fill('not-a-key');
  await page.getByRole('button', { name: 'Open' }).click();
  await page.getByRole('alert').filter({ hasText: 'refused' }).waitFor();
  expect(await page.getByRole('alert').innerText()).toMatch(/401 UNAUTHORIZED/);
  await shot('key-refused');
  await page.getByLabel('API key').fill(KEYS.alice);
  await page.getByRole('button', { name: 'Open' }).click();
  await tiles().first().waitFor();
  expect(await page.evaluate(() => sessionStorage.getItem('assetBrowser.apiKey'))).toBe(KEYS.alice);
  await waitFor(async () => ((await page.evaluate(() => document.activeElement?.id)) === 'search' ? true : undefined), {
    what: 'focus in the search',
  });

  // 2. The first page, every image tile showing its thumbnail (the browser fetches each <img src> itself, with a
  // signed thumbnail access grant in the URL, never the key). Where the page does not fill the view (and 400 px
  // beyond), the grid goes on to the next page at once, as it should: hence "at least" a page here and below.
  expect(await tiles().count()).toBeGreaterThanOrEqual(PAGE_SIZE);
  await waitFor(async () =>
    (await page.evaluate(
      () =>
        [...document.querySelectorAll('.tile img')].filter((i: HTMLImageElement) => i.complete && i.naturalWidth > 0)
          .length,
    )) >=
    PAGE_SIZE - 1
      ? true
      : undefined,
  );
  expect(await page.locator('.tile img').first().getAttribute('src')).toMatch(
    new RegExp(`^${svc.url}/api/assets/[0-9a-f-]{36}/thumbnail\\?access=[\\w.-]+$`),
  );
  expect(await page.locator('.facets').innerText()).toMatch(/cats\s*10/);
  // Activity is one collapsed line while nothing happens.
  expect(await page.locator('.activity').evaluate((el) => el.getBoundingClientRect().height)).toBeLessThan(50);
  expect(await page.locator('#activity-body').count()).toBe(0);
  // The grid is one tab stop: Tab from a tile leaves the grid.
  expect(await page.locator('.grid [tabindex="0"]').count()).toBe(1);
  expect(await page.locator('.grid input:not([tabindex="-1"])').count()).toBe(0);
  await page.locator('.tile-main').first().focus();
  await page.keyboard.press('Tab');
  expect(await page.evaluate(() => !!document.activeElement?.closest('.grid'))).toBe(false);
  await accessible('grid');
  await shot('grid');

  // 3. Scrolling to the end loads the next page by cursor.
  await page.locator('main.content').evaluate((el) => el.scrollTo(0, el.scrollHeight));
  await waitFor(async () => ((await tiles().count()) === ALL ? true : undefined), { what: 'the second page' });
  await expect(page.locator('.tile[data-id] .tile-name', { hasText: 'base.safetensors' }).count()).resolves.toBe(1);
  // A model's tile says what it is: its folder's icon, the folder, the base model and the size (not a MIME type).
  const modelTile = page.locator('.tile[data-id]', { hasText: 'base.safetensors' });
  expect(await modelTile.locator('.tile-meta').innerText()).toMatch(/^checkpoints · sdxl_base_v1-0 · \d+ B$/);
  expect(await modelTile.locator('.placeholder .folder-icon').count()).toBe(1);
  expect(
    await page.locator('.tile[data-id]', { hasText: 'detail-tweaker.safetensors' }).locator('.tile-meta').innerText(),
  ).toMatch(/^loras · flux-1-dev\/lora · /);
  await page.locator('main.content').evaluate((el) => el.scrollTo(0, 0));

  // 4. Facets: one filters and the other tags stay listed; two match all of them, or any of them.
  await page.locator('.facet', { hasText: 'cats' }).click();
  await waitFor(async () => ((await tiles().count()) === 10 ? true : undefined), { what: 'the cats facet' });
  expect(await page.locator('.toolbar .count').innerText()).toMatch(/10 assets tagged cats/);
  expect(await page.locator('.facet', { hasText: 'sounds' }).count()).toBe(1);
  await page.locator('.facet', { hasText: 'sounds' }).click();
  await page.locator('.empty', { hasText: 'No assets match' }).waitFor();
  expect(await page.locator('.empty').innerText()).not.toMatch(/Drop files|No tags/);
  await page.getByLabel('Any of').check();
  await waitFor(async () => ((await tiles().count()) === 11 ? true : undefined), { what: 'cats or sounds' });
  expect(await page.locator('.toolbar .count').innerText()).toMatch(/11 assets tagged cats or sounds/);
  await page.locator('.facets').getByRole('button', { name: 'Clear' }).click();
  await page.getByLabel('All of').check();
  await waitFor(async () => ((await tiles().count()) >= PAGE_SIZE ? true : undefined));

  // 5. Search by name; a search that finds nothing says so (and offers to clear it, not to drop files).
  await page.getByLabel('Search by name').fill('render_007');
  await waitFor(async () => ((await tiles().count()) === 1 ? true : undefined), { what: 'the search' });
  await page.getByLabel('Search by name').fill('no-such-asset');
  await page.locator('.empty', { hasText: 'No assets match “no-such-asset”' }).waitFor();
  await shot('empty-search');
  await page.getByRole('button', { name: 'Clear search and filters' }).click();
  await waitFor(async () => ((await tiles().count()) >= PAGE_SIZE ? true : undefined));

  // 6. Offline: said so, the count no longer claims results, Retry offered; back online, it asks again. A failed
  // request: its error and Retry.
  await page.context().setOffline(true);
  await page.getByRole('alert').filter({ hasText: 'You are offline' }).waitFor();
  expect(await page.locator('.toolbar .count').innerText()).toBe('Results may be out of date');
  await shot('offline');
  await page.context().setOffline(false);
  await page.getByRole('alert').filter({ hasText: 'offline' }).waitFor({ state: 'detached' });
  await waitFor(
    async () => ((await page.locator('.toolbar .count').innerText()).match(/^\d+ assets$/) ? true : undefined),
    { what: 'the count back' },
  );
  await page.route('**/graphql', (route) => route.abort());
  await page.getByLabel('Search by name').fill('render_01');
  const failed = page.getByRole('alert').filter({ hasText: 'could not be loaded' });
  await failed.waitFor();
  expect(await page.locator('.toolbar .count').innerText()).toBe('Results may be out of date');
  await page.unroute('**/graphql');
  await failed.getByRole('button', { name: 'Retry' }).click();
  await waitFor(async () => ((await tiles().count()) === 10 ? true : undefined), { what: 'the retried search' });
  await page.getByLabel('Search by name').fill('');
  await waitFor(async () => ((await tiles().count()) >= PAGE_SIZE ? true : undefined));

  // 7. Details by keyboard: focus a tile, arrows move, Enter opens, rename, copy the id, Escape closes.
  const id = (await page.locator('.tile-main').nth(1).getAttribute('data-asset-id'))!;
  const firstId = (await page.locator('.tile-main').first().getAttribute('data-asset-id'))!;
  await page.locator('.tile-main').first().focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowUp');
  expect(await page.evaluate(() => document.activeElement?.getAttribute('data-asset-id'))).toBe(id);
  expect(id).toBe(pathsOf);
  await page.keyboard.press('Enter');
  await page.locator('.drawer').waitFor();
  expect(await page.locator('.drawer').innerText()).toMatch(/blake3:[0-9a-f]{64}/);
  await page.locator('.drawer .paths', { hasText: 'output/b/sunset copy.png' }).waitFor();
  expect(await page.locator('.drawer h3', { hasText: /^Paths \(2\)$/ }).count()).toBe(1);
  expect(await page.locator('.drawer').innerText()).toMatch(/width\s*320/);
  await page.getByLabel('Name', { exact: true }).fill('sunset-final.png');
  await page.getByRole('textbox', { name: 'Tags' }).fill('output, favourites');
  // User metadata as fields: a number stays a number, a word stays text; a key given twice is refused.
  const meta = page.locator('.drawer .meta-editor');
  for (const [k, v] of [
    ['steps', '30'],
    ['sampler', 'euler a'],
    ['steps', '31'],
  ]) {
    await meta.getByRole('button', { name: 'Add field' }).click();
    await meta.locator('.meta-row').last().getByPlaceholder('key').fill(k!);
    await meta.locator('.meta-row').last().getByPlaceholder('value').fill(v!);
  }
  await page.getByRole('button', { name: 'Save' }).click();
  await page.locator('.drawer .error', { hasText: 'The key "steps" is given twice.' }).waitFor();
  await meta.getByRole('button', { name: 'Remove steps' }).last().click();
  await page.getByRole('button', { name: 'Save' }).click();
  await page.locator('.drawer .ok', { hasText: 'Saved' }).waitFor();
  await page.locator(`.tile[data-id="${id}"] .tile-name`, { hasText: 'sunset-final.png' }).waitFor();
  const renamed = await json(await svc.fetch(`/api/assets/${id}`));
  expect(renamed).toMatchObject({ name: 'sunset-final.png', tags: ['output', 'favourites'] });
  expect(renamed.user_metadata).toMatchObject({ steps: 30, sampler: 'euler a' });
  await page.locator('.drawer').getByRole('button', { name: 'Copy URL' }).click();
  await page.locator('.drawer .ok', { hasText: 'Copied the URL' }).waitFor();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(renamed.short_url);
  await page.locator('.facet', { hasText: 'favourites' }).waitFor();
  await page.locator('.drawer').getByRole('button', { name: 'Copy ID' }).click();
  await page.locator('.drawer .ok', { hasText: 'Copied the id' }).waitFor();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(id);
  await accessible('details sheet');
  await shot('detail');

  // 8. The viewer from the details: the image itself (its signed preview_url), previous / next by keys.
  await page.locator('.drawer').getByRole('button', { name: 'View', exact: true }).click();
  const viewer = page.getByRole('dialog');
  await viewer.locator(`.viewer-stage[data-asset-id="${id}"] img:not(.viewer-thumb)`).waitFor();
  await waitFor(async () =>
    (await viewer.locator('img:not(.viewer-thumb)').evaluate((i: HTMLImageElement) => i.naturalWidth)) === 320
      ? true
      : undefined,
  );
  await accessible('viewer');
  await shot('viewer');
  await page.keyboard.press('ArrowLeft');
  await viewer.locator(`.viewer-stage[data-asset-id="${firstId}"] img:not(.viewer-thumb)`).waitFor();
  await viewer.getByRole('button', { name: /^Next/ }).click();
  await viewer.locator(`.viewer-stage[data-asset-id="${id}"]`).waitFor();
  await page.keyboard.press('ArrowRight');
  await viewer.locator(`.viewer-stage:not([data-asset-id="${id}"]) img:not(.viewer-thumb)`).waitFor();
  await page.keyboard.press('Escape');
  await viewer.waitFor({ state: 'detached' });
  await page.keyboard.press('Escape');
  await page.locator('.drawer').waitFor({ state: 'detached' });

  // JSON shown as text (never as HTML), and audio in a player.
  await viewOne('workflow');
  await viewer.locator('.viewer-text').waitFor();
  expect(await viewer.locator('.viewer-text').innerText()).toContain('"prompt": "<b>not bold</b>"');
  expect(await viewer.locator('.viewer-stage b').count()).toBe(0);
  await shot('viewer-json');
  await page.keyboard.press('Escape');
  await viewOne('tone');
  await playerReady(viewer, 'audio');
  expect(await viewer.locator('audio').evaluate((a: any) => Math.round(a.duration * 100))).toBe(25);
  await page.keyboard.press('Escape');
  await page.keyboard.press('Escape');
  // Video in a player: its frames decoded (the size is the clip's), its length the clip's.
  await viewOne('clip');
  await playerReady(viewer, 'video');
  expect(await viewer.locator('video').evaluate((v: any) => [v.videoWidth, v.videoHeight])).toEqual([64, 48]);
  expect(await viewer.locator('video').evaluate((v: any) => Math.round(v.duration * 10))).toBe(5);
  await accessible('video viewer');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Escape');
  await page.getByLabel('Search by name').fill('');
  await waitFor(async () => ((await tiles().count()) >= PAGE_SIZE ? true : undefined));

  // 9. Uploads: a drop while filtering by a tag proposes that tag, visibly; the tags chosen are the ones given.
  await page.locator('.facet', { hasText: 'cats' }).click();
  await waitFor(async () => ((await tiles().count()) === 10 ? true : undefined));
  const dropped = (await picture(99)).toString('base64');
  await page.evaluate((b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], 'dropped.png', { type: 'image/png' }));
    for (const type of ['dragenter', 'dragover', 'drop'])
      document.body.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, dropped);
  const tagsAtUpload = page.getByRole('dialog').getByLabel('Tags');
  expect(await tagsAtUpload.inputValue()).toBe('cats');
  await accessible('upload dialog');
  await tagsAtUpload.fill('dropped, cats');
  await page.getByRole('dialog').getByRole('button', { name: 'Upload' }).click();
  await page.locator('.tile .tile-name', { hasText: 'dropped.png' }).waitFor({ timeout: 20_000 });
  await page.locator('[data-upload="dropped.png"].status-done').waitFor();
  // Through resumable (tus) uploads where the service has them, else the GraphQL multipart upload.
  const hasTus = (await svc.fetch('/api/uploads', { method: 'OPTIONS' })).status !== 404;
  expect(await page.locator('[data-upload="dropped.png"]').getAttribute('data-via')).toBe(hasTus ? 'tus' : 'graphql');
  await page.locator('.facets').getByRole('button', { name: 'Clear' }).click();
  await page
    .locator('#file-input')
    .setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('prompt notes\n') });
  expect(await tagsAtUpload.inputValue()).toBe('');
  await page.getByRole('dialog').getByRole('button', { name: 'Upload' }).click();
  await page.locator('.tile .tile-name', { hasText: 'notes.txt' }).waitFor({ timeout: 20_000 });
  const uploaded = (await gql(svc, '{ assets(filter: {nameContains: "dropped.png"}) { items { tags } } }')).data.assets
    .items;
  expect(uploaded[0].tags.map((t: string) => t.toLowerCase()).sort()).toEqual(['cats', 'dropped']);
  const notes = (await gql(svc, '{ assets(filter: {nameContains: "notes.txt"}) { items { tags } } }')).data.assets
    .items;
  expect(notes[0].tags).toEqual([]);
  // The dropped PNG gets its thumbnail a moment later, without a reload.
  await page.locator('.tile', { hasText: 'dropped.png' }).locator('img').waitFor({ timeout: 20_000 });

  // 10. Downloads by URL (Activity opened when the uploads started): one followed to completion, a stalled one
  // cancelled, and one that fails, shown with its reason and retried.
  await page.locator('#activity-body').waitFor();
  hub.hold('big-model.safetensors', 50 * 1024 * 1024);
  await page.getByLabel('Download from URL').fill(hub.fileUrl('big-model.safetensors'));
  await page.getByRole('button', { name: 'Start download' }).click();
  const held = page.locator('[data-task-id][data-status="running"]');
  await held.waitFor({ timeout: 20_000 });
  hub.set('lora-v2.safetensors', Buffer.alloc(3 * 1024 * 1024, 7));
  await page.getByLabel('Download from URL').fill(hub.fileUrl('lora-v2.safetensors'));
  await page.getByRole('button', { name: 'Start download' }).click();
  await page
    .locator('[data-task-id][data-status="completed"]', { hasText: 'lora-v2.safetensors' })
    .waitFor({ timeout: 30_000 });
  await page.locator('.tile .tile-name', { hasText: 'lora-v2.safetensors' }).waitFor({ timeout: 10_000 });
  await held.getByRole('button', { name: /^Cancel/ }).click();
  await page
    .locator('[data-task-id][data-status="cancelled"], [data-task-id][data-status="failed"]')
    .first()
    .waitFor({ timeout: 20_000 });
  hub.release();
  const body = Buffer.alloc(64 * 1024, 3);
  hub.set('flaky.safetensors', body, { getStatus: 404 });
  await page.getByLabel('Download from URL').fill(hub.fileUrl('flaky.safetensors'));
  await page.getByRole('button', { name: 'Start download' }).click();
  const failedTask = page.locator('[data-task-id][data-status="failed"]', { hasText: 'flaky.safetensors' });
  await failedTask.waitFor({ timeout: 30_000 });
  expect(await failedTask.locator('progress').count()).toBe(0);
  expect(await failedTask.locator('.row-status').innerText()).toMatch(/answered 404/);
  await accessible('activity');
  await shot('activity');
  hub.set('flaky.safetensors', body);
  await failedTask.getByRole('button', { name: /^Retry/ }).click();
  await page
    .locator('[data-task-id][data-status="completed"]', { hasText: 'flaky.safetensors' })
    .waitFor({ timeout: 30_000 });
  await page.locator('.tile .tile-name', { hasText: 'flaky.safetensors' }).waitFor({ timeout: 10_000 });

  // 11. Select all of what is shown, add and remove a tag on all of them, export them, delete two.
  await page.getByLabel('Search by name').fill('render_00');
  await waitFor(async () => ((await tiles().count()) === 10 ? true : undefined));
  await page.getByRole('button', { name: 'Select all 10 shown' }).click();
  const selection = page.getByRole('group', { name: 'Selection' });
  await selection.getByText('10 selected').waitFor();
  await selection.getByRole('button', { name: 'Edit tags' }).click();
  await selection.getByLabel('Tags for the 10 selected').fill('bulk-tag');
  await selection.getByRole('button', { name: 'Add tags' }).click();
  const tagged = async () =>
    (await gql(svc, '{ assets(filter: {includeTags: ["bulk-tag"]}) { total } }')).data.assets.total;
  await waitFor(async () => ((await tagged()) === 10 ? true : undefined), { what: 'the bulk tag added' });
  await page.locator('.facet', { hasText: 'bulk-tag' }).waitFor();
  await shot('bulk-tags');
  await selection.getByRole('button', { name: 'Edit tags' }).click();
  await selection.getByLabel('Tags for the 10 selected').fill('bulk-tag');
  await selection.getByRole('button', { name: 'Remove tags' }).click();
  await waitFor(async () => ((await tagged()) === 0 ? true : undefined), { what: 'the bulk tag removed' });

  await selection.getByRole('button', { name: 'Export as ZIP' }).click();
  const archiveButton = page
    .locator('[data-task-id][data-status="completed"]')
    .getByRole('button', { name: 'Download archive' });
  await archiveButton.first().waitFor({ timeout: 30_000 });
  await saveArchive(archiveButton.first());
  // After a reload the export is still there, with its link.
  await page.reload();
  await tiles().first().waitFor();
  await page.getByRole('button', { name: 'Activity' }).click();
  await archiveButton.first().waitFor({ timeout: 20_000 });
  await shot('export-after-reload');
  await saveArchive(archiveButton.first());
  await page.getByRole('button', { name: 'Activity' }).click();

  await page.getByLabel('Search by name').fill('render_00');
  await waitFor(async () => ((await tiles().count()) === 10 ? true : undefined));
  const doomed = [
    (await page.locator('.tile').nth(0).getAttribute('data-id'))!,
    (await page.locator('.tile').nth(1).getAttribute('data-id'))!,
  ];
  await page.locator('.tile-check').nth(0).click();
  await page.locator('.tile-check').nth(1).click();
  await selection.getByText('2 selected').waitFor();
  await selection.getByRole('button', { name: 'Delete' }).click();
  await selection.getByRole('button', { name: 'Delete 2' }).click();
  await waitFor(async () => ((await tiles().count()) === 8 ? true : undefined), { what: 'two deleted' });
  for (const d of doomed) expect((await svc.fetch(`/api/assets/${d}`)).status).toBe(404);

  // One from its details, after a confirmation.
  const single = (await page.locator('.tile').first().getAttribute('data-id'))!;
  await page.locator('.tile-main').first().click();
  await page.locator('.drawer').getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('group', { name: 'Confirm delete' }).getByRole('button', { name: 'Delete' }).click();
  await page.locator('.drawer').waitFor({ state: 'detached' });
  await waitFor(async () => ((await tiles().count()) === 7 ? true : undefined), { what: 'one deleted' });
  expect((await svc.fetch(`/api/assets/${single}`)).status).toBe(404);
  await page.getByLabel('Search by name').fill('');

  // 12. The model library: by folder, with type, base model and size; the loader path one click away.
  await page.getByRole('button', { name: 'Models', exact: true }).click();
  const loras = page.getByRole('region', { name: /loras/ });
  await loras.waitFor();
  await page.getByRole('region', { name: /checkpoints/ }).waitFor();
  const card = loras.locator('.model-card', { hasText: 'detail-tweaker.safetensors' });
  expect(await card.innerText()).toMatch(/Base model\s*flux-1-dev\/lora/);
  expect(await card.innerText()).toMatch(/Size\s*\d/);
  expect(await page.locator('.model-card', { hasText: 'base.safetensors' }).innerText()).toMatch(/sdxl_base_v1-0/);
  await card.getByRole('button', { name: /^Copy loader path/ }).click();
  await card.getByText('Copied ✓').waitFor();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('detail-tweaker.safetensors');
  await accessible('model library');
  await shot('models');
  await page.getByRole('button', { name: 'All assets' }).click();

  // The whole tool at once (docs/ui.png): a detail open beside the grid, the activity below.
  await page.getByRole('button', { name: 'Activity' }).click();
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

/** Clicks an export's "Download archive": a ZIP saved under a readable name. */
async function saveArchive(button: ReturnType<Page['locator']>): Promise<void> {
  const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
  expect(download.suggestedFilename()).toMatch(/^assets-\d{4}-\d\d-\d\d-\d{4}\.zip$/);
  const file = path.join(ARTIFACTS, download.suggestedFilename());
  await download.saveAs(file);
  expect(fs.statSync(file).size).toBeGreaterThan(100);
}

test('without a thumbnail access grant (a service that has none), thumbnails are fetched with the key header instead', async () => {
  const context = await browser!.newContext({ viewport: { width: 1360, height: 860 } });
  try {
    await context.addInitScript((key) => sessionStorage.setItem('assetBrowser.apiKey', key), KEYS.alice);
    await context.route('**/api/thumbnail-access', (route) =>
      route.fulfill({
        status: 404,
        contentType: 'application/json',
        body: '{"code":"NOT_FOUND","message":"no route"}',
      }),
    );
    const p = await context.newPage();
    await p.goto(`${svc.url}/ui`);
    await waitFor(async () =>
      (await p.evaluate(
        () =>
          [...document.querySelectorAll('.tile img')].filter((i: HTMLImageElement) => i.complete && i.naturalWidth > 0)
            .length,
      )) > 0
        ? true
        : undefined,
    );
    expect(await p.locator('.tile img').first().getAttribute('src')).toMatch(/^blob:/);
  } finally {
    await context.close();
  }
});

test('a first page of 100 tiles, every thumbnail fetched, loads in about a second on loopback', async () => {
  // Four uploads at a time: one after another, the 70 of them plus their thumbnails once outlasted the test's bound
  // on a loaded CI machine (2026-12-03).
  for (let i = 0; i < 70; i += 4) {
    await Promise.all(
      Array.from({ length: Math.min(4, 70 - i) }, async (_, j) =>
        upload(await picture(200 + i + j), `batch_${String(i + j).padStart(3, '0')}.png`, 'batch'),
      ),
    );
  }
  await waitFor(
    async () => {
      const r = await gql(svc, '{ assets(limit: 100) { items { mimeType thumbnailUrl } } }');
      const images = r.data.assets.items.filter((a: { mimeType: string }) => a.mimeType.startsWith('image/'));
      return images.every((a: { thumbnailUrl?: string }) => a.thumbnailUrl) ? true : undefined;
    },
    { timeoutMs: 90_000, what: 'thumbnails of the batch' },
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
            const loaded = [...document.querySelectorAll('.tile img')].filter(
              (i: any) => i.complete && i.naturalWidth > 0,
            ).length;
            if (tiles.length === 100 && images.length > 0 && loaded === images.length) {
              const script = performance
                .getEntriesByType('resource')
                .find((e: any) => /app-.*\.js$/.test(e.name)) as any;
              const thumbs = performance
                .getEntriesByType('resource')
                .filter((e: any) => /\/thumbnail(\?|$)/.test(e.name)) as any[];
              const cached = thumbs.filter((e) => e.transferSize === 0).length;
              resolve({
                shown: Math.round(performance.now()),
                script: Math.round(script?.responseEnd ?? -1),
                firstPage: at('ui:first-page'),
                cached,
              });
            } else requestAnimationFrame(check);
          };
          check();
        }),
    );
    times.push(ms.shown);
    phases.push(
      `script ${ms.script}, first page ${ms.firstPage}, thumbnails ${ms.shown} (${ms.cached} from the browser cache)`,
    );
  }
  await context.close();
  // From navigation start to the last of the page's thumbnails shown (decoded in their <img>).
  console.log(
    `asset browser, first page of 100 tiles with thumbnails: ${times.join(', ')} ms (3 loads)\n  ms after navigation start: ${phases.join(' | ')}`,
  );
  // The target is 1 s; the bound here leaves room for a loaded CI machine.
  expect(Math.min(...times)).toBeLessThan(3000);
}, 150_000);
