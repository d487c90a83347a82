/**
 * The asset browser for every day (contract 6.3, "Everyday use"), in headless Chromium at 390 px and 1440 px: a
 * 200 MB asset's download from its details is a browser download of a signed http URL (never a blob: the tab's heap
 * does not grow by it); dark mode under the system's dark scheme and the light/dark/system switch kept across a reload;
 * each filter (type, dates, excluded tags, model folder) and the sort change the grid and the URL and survive a
 * reload, the tag facets following them; the list view sorts by size and is kept; axe finds nothing serious in either
 * theme. At 1440 px: the keys page of an admin key (make, secret once, revoke), the shortcuts (`?`, `/`, Escape), and
 * the storage use once the schema has `usage`.
 */
import fs from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { gql } from '../helpers/graphql';
import { axeViolations, LAUNCH, picture, safetensors, wav } from '../helpers/ui-checks';

declare const document: any;
declare const getComputedStyle: any;
declare const localStorage: any;

const { buildUi } = require('../../scripts/build-ui.cjs') as { buildUi(): Promise<unknown> };

const BIG = 200 * 1024 * 1024;
let svc: TestService;
let browser: Browser | undefined;

async function upload(data: Buffer, name: string, tags: string): Promise<void> {
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(data, { tags }, name) });
  expect(res.status).toBe(201);
  await json(res);
}

beforeAll(async () => {
  await buildUi();
  svc = await startTestService();
  // Oldest first: big.bin is the last in the default order (newest first).
  await upload(Buffer.alloc(BIG), 'big.bin', 'big');
  await upload(
    safetensors({ 'modelspec.architecture': 'flux-1-dev/lora' }),
    'detail.safetensors',
    'models,model_type:loras,loras',
  );
  await upload(Buffer.from('{"steps": 30}'), 'notes.json', 'notes');
  await upload(wav(), 'tone.wav', 'sounds');
  await upload(await picture(1), 'pic-1.png', 'output');
  await upload(await picture(2), 'pic-2.png', 'output,draft');
  browser = await chromium.launch(LAUNCH);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

async function open(
  width: number,
  opts: { key?: string; colorScheme?: 'light' | 'dark'; path?: string } = {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser!.newContext({
    viewport: { width, height: width < 600 ? 844 : 900 },
    acceptDownloads: true,
    colorScheme: opts.colorScheme ?? 'light',
  });
  await context.addInitScript((key) => sessionStorage.setItem('assetBrowser.apiKey', key), opts.key ?? KEYS.alice);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${svc.url}/ui${opts.path ?? ''}`);
  await page.locator('.toolbar .count').waitFor();
  return { context, page, errors };
}

/** The names of the grid's tiles (or the list's rows), once the count line says `n`. */
async function shown(page: Page, n: number): Promise<string[]> {
  await page.locator('.toolbar .count', { hasText: new RegExp(`^${n} assets?`) }).waitFor();
  const names = page.locator('.grid .tile-name, .list .list-name button');
  await waitFor(async () => ((await names.count()) === n ? true : undefined), { what: `${n} assets shown` });
  return names.allInnerTexts();
}

async function openFilters(page: Page): Promise<void> {
  const box = page.locator('details.filters-box');
  if (!(await box.evaluate((d: any) => d.open))) await box.locator('summary').click();
}

const query = (page: Page) => new URL(page.url()).searchParams;

/** The root's computed background, as its relative luminance (0 black, 1 white). */
const backgroundLuminance = (page: Page): Promise<number> =>
  page.evaluate(() => {
    const [r, g, b] = (getComputedStyle(document.documentElement).backgroundColor.match(/\d+/g) ?? []).map(Number);
    const lin = (c: number) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  });

/** The day after today in the browser's (and this process's) time zone, as a date input takes it. */
const tomorrow = () => {
  const d = new Date(Date.now() + 86400_000);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
};

describe.each([390, 1440])('at %i px', (width) => {
  test('a 200 MB download from the details is a browser download of a signed URL; the heap does not hold it', async () => {
    const { context, page, errors } = await open(width, { path: '?q=big' });
    try {
      expect(await shown(page, 1)).toEqual(['big.bin']);
      await page.locator('.tile-main').first().click();
      const link = page.locator('.drawer').getByRole('link', { name: 'Download' });
      const cdp = await context.newCDPSession(page);
      await cdp.send('Performance.enable');
      const heap = async () => {
        await cdp.send('HeapProfiler.collectGarbage');
        const { metrics } = await cdp.send('Performance.getMetrics');
        return metrics.find((m: { name: string }) => m.name === 'JSHeapUsedSize')!.value;
      };
      const before = await heap();
      const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
      const url = new URL(download.url());
      expect(url.protocol).toBe('http:');
      expect(url.pathname).toMatch(/^\/api\/assets\/[\w-]+\/content$/);
      expect(url.searchParams.get('access')).toMatch(/^\d+\.[\w-]+\.[\w-]+$/);
      expect(url.searchParams.get('disposition')).toBe('attachment');
      expect(download.suggestedFilename()).toBe('big.bin');
      // The whole file saved by the browser (its path resolves once the download ends).
      const saved = await download.path();
      expect(await download.failure()).toBeNull();
      expect(fs.statSync(saved).size).toBe(BIG);
      expect((await heap()) - before).toBeLessThan(10 * 1024 * 1024);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);

  test('dark mode follows the system, the switch is kept across a reload, axe is clean in both themes', async () => {
    const { context, page, errors } = await open(width, { colorScheme: 'dark' });
    try {
      await shown(page, 6);
      expect(await backgroundLuminance(page)).toBeLessThan(0.05);
      expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
      await openFilters(page);
      expect(await axeViolations(page)).toEqual([]);
      // The switch: light, kept in localStorage, still light after a reload under a dark system.
      await page.getByLabel('Theme').selectOption('light');
      expect(await backgroundLuminance(page)).toBeGreaterThan(0.8);
      await page.reload();
      await shown(page, 6);
      expect(await backgroundLuminance(page)).toBeGreaterThan(0.8);
      expect(await page.getByLabel('Theme').inputValue()).toBe('light');
      await openFilters(page);
      expect(await axeViolations(page)).toEqual([]);
      await page.getByLabel('Theme').selectOption('dark');
      // The details sheet and the list view in the dark too.
      await page.locator('.tile-main').first().click();
      await page.locator('.drawer').waitFor();
      expect(await axeViolations(page)).toEqual([]);
      await page.locator('.drawer .close-button').click();
      await page.getByRole('button', { name: 'List', exact: true }).click();
      await page.locator('table.list').waitFor();
      expect(await axeViolations(page)).toEqual([]);
      // System again: the system's dark.
      await page.getByLabel('Theme').selectOption('system');
      expect(await page.evaluate(() => localStorage.getItem('assetBrowser.theme'))).toBeNull();
      expect(await backgroundLuminance(page)).toBeLessThan(0.05);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  test('each filter and the sort change the grid and the URL and survive a reload; the facets follow', async () => {
    const { context, page, errors } = await open(width);
    try {
      expect(await shown(page, 6)).toHaveLength(6);
      await openFilters(page);
      const facets = () => page.locator('.facets .facet-name').allTextContents();

      // Type.
      await page.getByLabel('Type').selectOption('image');
      expect((await shown(page, 2)).sort()).toEqual(['pic-1.png', 'pic-2.png']);
      expect(query(page).get('type')).toBe('image');
      await waitFor(async () => ((await facets()).includes('sounds') ? undefined : true), {
        what: 'the facets of images',
      });
      expect((await facets()).sort()).toEqual(['draft', 'output']);
      // Excluded tags, beside the type.
      await page.getByLabel('Not tagged').fill('draft');
      await page.getByLabel('Not tagged').press('Tab');
      expect(await shown(page, 1)).toEqual(['pic-1.png']);
      expect(query(page).getAll('not')).toEqual(['draft']);
      await page.reload();
      expect(await shown(page, 1)).toEqual(['pic-1.png']);
      expect(await page.getByLabel('Type').inputValue()).toBe('image');
      expect(await page.getByLabel('Not tagged').inputValue()).toBe('draft');
      await page.getByRole('button', { name: 'Clear filters' }).click();
      expect(await shown(page, 6)).toHaveLength(6);
      expect(query(page).has('type')).toBe(false);

      // Model folder.
      await openFilters(page);
      await page.getByLabel('Model folder').selectOption('loras');
      expect(await shown(page, 1)).toEqual(['detail.safetensors']);
      expect(query(page).get('folder')).toBe('loras');
      await page.reload();
      expect(await shown(page, 1)).toEqual(['detail.safetensors']);
      await page.getByRole('button', { name: 'Clear filters' }).click();
      await shown(page, 6);

      // Base model: offered from what the models' metadata names.
      await openFilters(page);
      await page.getByLabel('Base model').selectOption('flux-1-dev/lora');
      expect(await shown(page, 1)).toEqual(['detail.safetensors']);
      expect(query(page).get('base')).toBe('flux-1-dev/lora');
      await page.reload();
      expect(await shown(page, 1)).toEqual(['detail.safetensors']);
      expect(await page.getByLabel('Base model').inputValue()).toBe('flux-1-dev/lora');
      await page.getByRole('button', { name: 'Clear filters' }).click();
      await shown(page, 6);

      // Created since / before.
      await openFilters(page);
      await page.getByLabel('Created since').fill(tomorrow());
      await page.locator('.empty', { hasText: 'No assets match' }).waitFor();
      expect(query(page).get('since')).toBe(tomorrow());
      await page.reload();
      await page.locator('.empty', { hasText: 'No assets match' }).waitFor();
      await page.getByRole('button', { name: 'Clear search and filters' }).click();
      await shown(page, 6);
      await openFilters(page);
      await page.getByLabel('Created before').fill(tomorrow());
      await shown(page, 6);
      expect(query(page).get('before')).toBe(tomorrow());
      await page.getByRole('button', { name: 'Clear filters' }).click();

      // Sort.
      await page.getByLabel('Sort').selectOption('name:asc');
      await waitFor(async () => ((await shown(page, 6))[0] === 'big.bin' ? true : undefined), { what: 'name order' });
      expect(query(page).get('sort')).toBe('name:asc');
      await page.reload();
      expect((await shown(page, 6))[0]).toBe('big.bin');
      expect(await page.getByLabel('Sort').inputValue()).toBe('name:asc');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);

  test('the list view sorts by size (both ways), keeps the selection and bulk actions, and is kept', async () => {
    const { context, page, errors } = await open(width);
    try {
      await shown(page, 6);
      await page.getByRole('button', { name: 'List', exact: true }).click();
      const sizes = async () =>
        await page.locator('table.list td.num').evaluateAll((tds: any[]) => tds.map((td) => Number(td.dataset.bytes)));
      await page.getByRole('button', { name: /^Size/ }).click();
      await waitFor(async () => (query(page).get('sort') === 'size:desc' ? true : undefined));
      await waitFor(
        async () => {
          const s = await sizes();
          return s.length === 6 && s.every((v, i) => i === 0 || s[i - 1]! >= v) ? true : undefined;
        },
        { what: 'largest first' },
      );
      expect((await sizes())[0]).toBe(BIG);
      expect(await page.locator('th[aria-sort="descending"]').innerText()).toMatch(/^Size/);
      await page.getByRole('button', { name: /^Size/ }).click();
      await waitFor(
        async () => {
          const s = await sizes();
          return s.length === 6 && s.every((v, i) => i === 0 || s[i - 1]! <= v) && s[5] === BIG ? true : undefined;
        },
        { what: 'smallest first' },
      );
      // Selection: the bulk actions appear as in the grid.
      await page.getByLabel('Select pic-1.png').click();
      await page.getByLabel('Select tone.wav').click();
      await page.locator('.selection', { hasText: '2 selected' }).waitFor();
      expect(await axeViolations(page)).toEqual([]);
      await page.reload();
      await page.locator('table.list').waitFor();
      expect(query(page).get('sort')).toBe('size:asc');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});

test('the keys page of an admin key: a key made with scopes and expiry, its secret once, listed, revoked', async () => {
  // An owner key sees no keys page.
  const owner = await open(1440);
  try {
    await shown(owner.page, 6);
    // Until the page has asked who the key is (and anything else it asks at start).
    await owner.page.waitForLoadState('networkidle');
    expect(await owner.page.getByRole('button', { name: 'Keys', exact: true }).count()).toBe(0);
  } finally {
    await owner.context.close();
  }
  const { context, page, errors } = await open(1440, { key: KEYS.admin });
  try {
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url });
    await page.getByRole('button', { name: 'Keys', exact: true }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByLabel('Owner').fill('carol');
    await page.getByLabel('Label').fill('ci runner');
    await page.getByLabel('write').uncheck();
    await page.getByLabel('Expires on').fill(tomorrow());
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByLabel('Secret of the new key').inputValue();
    expect(secret.length).toBeGreaterThan(20);
    await page.locator('.key-secret').getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied the key.').waitFor();
    expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(secret);
    const row = page.locator('table.keys tr', { hasText: 'ci runner' });
    expect(await row.innerText()).toMatch(/carol\s+ci runner\s+read\s+.+\s+never\s+\S/);
    // The key works, then is revoked.
    expect((await gql(svc, '{ viewer { owner scopes } }', {}, { key: secret })).data.viewer).toEqual({
      owner: 'carol',
      scopes: ['read'],
    });
    expect(await axeViolations(page)).toEqual([]);
    await page.locator('.key-secret').getByRole('button', { name: 'Done' }).click();
    expect(await page.getByLabel('Secret of the new key').count()).toBe(0);
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('group', { name: 'Confirm revoke' }).getByRole('button', { name: 'Revoke' }).click();
    await page.locator('table.keys tr.revoked', { hasText: 'ci runner' }).waitFor();
    expect((await gql(svc, '{ viewer { owner } }', {}, { key: secret })).status).toBe(401);
    expect(errors).toEqual([]);
  } finally {
    await context.close();
  }
}, 60_000);

test('shortcuts: ? shows them, Escape closes them, / goes to the search', async () => {
  const { context, page, errors } = await open(1440);
  try {
    await shown(page, 6);
    await page.keyboard.press('?');
    const dialog = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await dialog.waitFor();
    expect(await dialog.innerText()).toMatch(/Search by name/);
    expect(await axeViolations(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await page.keyboard.press('/');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('search');
    // Typed into a field, `?` and `/` are text.
    await page.keyboard.type('a/?');
    expect(await page.getByLabel('Search by name').inputValue()).toBe('a/?');
    expect(await dialog.count()).toBe(0);
    expect(errors).toEqual([]);
  } finally {
    await context.close();
  }
});

test('the storage use and limits, once the schema has usage (skipped until then)', async () => {
  const r = await gql(svc, '{ __type(name: "Query") { fields { name } } }');
  const hasUsage = r.data.__type.fields.some((f: { name: string }) => f.name === 'usage');
  const { context, page, errors } = await open(1440);
  try {
    await shown(page, 6);
    if (!hasUsage) {
      // Without the field, no block and no failed request.
      expect(await page.locator('.usage').count()).toBe(0);
      return;
    }
    const usage = (await gql(svc, '{ usage { bytes assets } }')).data.usage;
    expect(usage.assets).toBe(6);
    await page.locator('.usage').waitFor();
    expect(await page.locator('.usage').innerText()).toMatch(/6 assets/);
    expect(await axeViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
  } finally {
    await context.close();
  }
});
