/**
 * The asset browser at a phone (390×844), a tablet (768×1024), a desktop (1440×900) and the desktop at 200 % zoom
 * (720×450 CSS px), in headless Chromium: in every state (key prompt, grid, tags, details sheet, viewer, Activity,
 * selection, model library) the page does not scroll sideways and every visible control lies inside the window;
 * axe-core reports nothing serious or critical. Screenshots: test-artifacts/ui-<viewport>-<state>.png.
 */
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { json, KEYS, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';
import { startFakeHub, type FakeHub } from '../helpers/fake-hub';
import { gql } from '../helpers/graphql';
import {
  ARTIFACTS,
  axeViolations,
  layoutProblems,
  LAUNCH,
  onScreen,
  picture,
  safetensors,
  VIEWPORTS,
} from '../helpers/ui-checks';

declare const document: any;

const { buildUi } = require('../../scripts/build-ui.cjs') as { buildUi(): Promise<unknown> };

let svc: TestService;
let hub: FakeHub;
let browser: Browser | undefined;

async function upload(data: Buffer, name: string, tags: string): Promise<void> {
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(data, { tags }, name) });
  expect(res.status).toBe(201);
  await json(res);
}

beforeAll(async () => {
  await buildUi();
  hub = await startFakeHub();
  svc = await startTestService({ HF_ENDPOINT: hub.url });
  await upload(
    safetensors({ ss_base_model_version: 'sdxl_base_v1-0' }),
    'checkpoints/a-rather-long-model-name-for-a-phone-v2.safetensors',
    'models,model_type:checkpoints',
  );
  await upload(Buffer.from('{"a": 1}'), 'settings.json', 'notes');
  for (let i = 0; i < 12; i++)
    await upload(
      await picture(i),
      `a-long-render-name-to-cut_${i}.png`,
      i % 2 ? 'output,portraits of cats,Landscapes' : 'output',
    );
  // A download that fails (Activity shows its reason and Retry) and one that completes.
  hub.set('refused.safetensors', Buffer.alloc(4096, 1), { getStatus: 404 });
  hub.set('fine.safetensors', Buffer.alloc(4096, 2));
  for (const name of ['refused.safetensors', 'fine.safetensors']) {
    await gql(svc, 'mutation($u: String!) { startDownload(input: {sourceUrl: $u}) { task { id } } }', {
      u: hub.fileUrl(name),
    });
  }
  await waitFor(
    async () => {
      const r = await gql(svc, '{ tasks { items { status } } assets(limit: 100) { items { mimeType thumbnailUrl } } }');
      const done = r.data.tasks.items.every(
        (t: { status: string }) => t.status === 'failed' || t.status === 'completed',
      );
      const thumbs = r.data.assets.items.filter(
        (a: { mimeType: string; thumbnailUrl?: string }) => a.mimeType.startsWith('image/') && !a.thumbnailUrl,
      );
      return done && thumbs.length === 0 ? true : undefined;
    },
    { timeoutMs: 40_000, what: 'the tasks and thumbnails' },
  );
  browser = await chromium.launch(LAUNCH);
}, 80_000);

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
  await hub?.close();
});

describe.each(VIEWPORTS.map((v) => [v.name, v] as const))('at %s', (name, vp) => {
  test('no sideways scroll, every control on screen, nothing serious for axe, in every state', async () => {
    const problems: string[] = [];
    const violations: string[] = [];
    const context = await browser!.newContext({ viewport: vp.viewport, deviceScaleFactor: vp.deviceScaleFactor });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const shot = (state: string) => page.screenshot({ path: path.join(ARTIFACTS, `ui-${name}-${state}.png`) });
    const check = async (state: string, axe = true) => {
      problems.push(...(await layoutProblems(page, state)));
      if (axe) violations.push(...(await axeViolations(page)).map((v) => `${state}: ${v}`));
      await shot(state);
    };
    const narrow = vp.viewport.width < 900;
    try {
      // The key prompt, then the grid.
      await page.goto(`${svc.url}/ui`);
      await page.getByLabel('API key').waitFor();
      await check('key-prompt');
      await page.getByLabel('API key').fill(KEYS.alice);
      await page.getByRole('button', { name: 'Open' }).click();
      await page.locator('.tile img').first().waitFor();
      await waitForImages(page);
      await check('grid');
      expect(await onScreen(page, 'button:has-text("Sign out")')).toBe(true);
      expect(await onScreen(page, 'button:has-text("Upload")')).toBe(true);
      const searchWidth = await page
        .getByLabel('Search by name')
        .evaluate((el: any) => el.getBoundingClientRect().width);
      // Full width on narrow screens (beside the Tags button), and never squeezed.
      expect(searchWidth).toBeGreaterThan(narrow ? vp.viewport.width * 0.6 : 240);
      // Activity is a collapsed line.
      expect(await page.locator('.activity').evaluate((el: any) => el.getBoundingClientRect().height)).toBeLessThan(50);

      // Tags: a drawer on narrow screens (with its close button on screen), a column otherwise.
      if (narrow) {
        await page.getByRole('button', { name: /^Tags/ }).click();
        await page.locator('.facets.open').waitFor();
        expect(await onScreen(page, '.facets-close')).toBe(true);
        await check('tags', false);
        await page.locator('.facet', { hasText: 'Landscapes' }).click();
        await page.getByRole('button', { name: 'Close tags' }).click();
        await waitFor(async () => ((await page.locator('.tile').count()) === 6 ? true : undefined), {
          what: 'the Landscapes tag',
        });
        await page.getByRole('button', { name: /^Tags/ }).click();
        await page.locator('.facets').getByRole('button', { name: 'Clear' }).click();
        await page.getByRole('button', { name: 'Close tags' }).click();
      } else {
        expect(await onScreen(page, '.facets')).toBe(true);
      }
      await waitFor(async () => ((await page.locator('.tile').count()) === 15 ? true : undefined));

      // The details sheet of a picture, its close button on screen.
      await page.locator('.tile:has(img) .tile-main').first().click();
      await page.locator('.drawer').waitFor();
      expect(await onScreen(page, '.drawer .close-button')).toBe(true);
      await check('details');
      // The viewer from it.
      await page.locator('.drawer').getByRole('button', { name: 'View', exact: true }).click();
      // The picture itself (its thumbnail stands in until it has loaded, then goes).
      await page.locator('.viewer img:not(.viewer-thumb)').waitFor();
      expect(await onScreen(page, '.viewer .close-button')).toBe(true);
      await check('viewer');
      await page.keyboard.press('Escape');
      await page.locator('.drawer .close-button').click();
      await page.locator('.drawer').waitFor({ state: 'detached' });

      // Activity, open: the failed download with its reason and Retry.
      await page.getByRole('button', { name: 'Activity' }).click();
      await page
        .locator('[data-status="failed"]')
        .getByRole('button', { name: /^Retry/ })
        .waitFor({ timeout: 15_000 });
      await check('activity');
      await page.getByRole('button', { name: 'Activity' }).click();

      // Everything selected: the selection's actions wrap, none off screen.
      await page.getByRole('button', { name: /^Select all/ }).click();
      await page.getByRole('group', { name: 'Selection' }).getByRole('button', { name: 'Edit tags' }).click();
      await check('selection', false);
      await page.getByRole('button', { name: 'Clear selection' }).click();

      // The model library.
      await page.getByRole('button', { name: 'Models', exact: true }).click();
      await page.locator('.model-card').first().waitFor();
      await check('models');
    } catch (err) {
      await shot('failure').catch(() => undefined);
      throw err;
    } finally {
      await context.close();
    }
    expect(problems).toEqual([]);
    expect(violations).toEqual([]);
    expect(errors).toEqual([]);
  }, 90_000);
});

/** Every thumbnail in view decoded (the screenshots show the page as a person sees it). */
async function waitForImages(page: Page): Promise<void> {
  await waitFor(async () =>
    (await page.evaluate(() =>
      [...document.querySelectorAll('.tile img')].every((i: any) => i.complete && i.naturalWidth > 0),
    ))
      ? true
      : undefined,
  );
}
