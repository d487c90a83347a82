/**
 * The GraphQL IDE: served by the service itself (no internet needed), open without a key, and usable in a real
 * browser: headless Chromium (playwright-core) meets the key prompt first (nothing is asked of the API before a key,
 * so nothing is refused), gives the key, finds the docs loaded without a manual re-fetch, runs
 * `{ tasks { items { id status } } }` and sees the result. Screenshots: test-artifacts/graphql-ide*.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { KEYS, startTestService, waitFor, type TestService } from '../helpers/harness';
import { startFakeHub, type FakeHub } from '../helpers/fake-hub';
import { gql } from '../helpers/graphql';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts');

let svc: TestService;
let hub: FakeHub;
let browser: Browser | undefined;
beforeAll(async () => {
  hub = await startFakeHub();
  svc = await startTestService({ HF_ENDPOINT: hub.url });
});
afterAll(async () => {
  await browser?.close();
  await svc?.stop();
  await hub?.close();
});

test('GET /graphql from a browser: the IDE page, without a key, loading only files the service serves', async () => {
  const res = await svc.fetch('/graphql', {
    key: null,
    headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
  const html = await res.text();
  expect(html).not.toMatch(/https?:\/\//);
  const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  expect(refs.length).toBe(7);
  for (const ref of refs) {
    expect(ref).toMatch(/^\/graphql\/ide\//);
    const file = await svc.fetch(ref, { key: null });
    expect({ ref, status: file.status }).toEqual({ ref, status: 200 });
    const type = ref.endsWith('.css') ? /^text\/css/ : ref.endsWith('.svg') ? /^image\/svg\+xml/ : /^text\/javascript/;
    expect(file.headers.get('content-type')).toMatch(type);
    expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(40);
  }
  expect((await svc.fetch('/graphql/ide/../package.json', { key: null })).status).toBe(404);
  // A GraphQL client asking for JSON still reaches the API (and needs a key).
  const api = await svc.fetch(`/graphql?query=${encodeURIComponent('{ tasks { total } }')}`, {
    key: null,
    headers: { accept: 'application/json', 'apollo-require-preflight': 'true' },
  });
  expect(api.status).toBe(401);
});

test('browser: paste the key in the Headers tab, run { tasks { items { id status } } }, see the result', async () => {
  hub.set('ide-model.bin', Buffer.from('bytes of a model for the IDE test'));
  const started = await gql(
    svc,
    'mutation($u: String!) { startDownload(input: {sourceUrl: $u}) { task { id } } }',
    { u: hub.fileUrl('ide-model.bin') },
    { key: KEYS.admin },
  );
  const taskId: string = started.data.startDownload.task.id;
  await waitFor(async () =>
    (await gql(svc, `{ task(id: "${taskId}") { status } }`, {}, { key: KEYS.admin })).data.task.status === 'completed'
      ? true
      : undefined,
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
  const page = await browser.newPage({ viewport: { width: 1400, height: 850 } });
  const foreign: string[] = [];
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(svc.url) || url.startsWith('data:')) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text());
  });

  const apiAnswers: number[] = [];
  page.on('response', (r) => {
    if (r.url() === `${svc.url}/graphql` && r.request().method() === 'POST') apiAnswers.push(r.status());
  });

  await page.goto(`${svc.url}/graphql`);
  // The key prompt first: nothing asked of the API yet, so no UNAUTHORIZED.
  await page.getByLabel('API key').waitFor();
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, 'graphql-ide-key.png') });
  expect(apiAnswers).toEqual([]);
  await page.getByLabel('API key').fill('not-a-key');
  await page.getByRole('button', { name: 'Open the IDE' }).click();
  await page.getByRole('alert').filter({ hasText: '401' }).waitFor();
  await page.getByLabel('API key').fill(KEYS.admin);
  await page.getByRole('button', { name: 'Open the IDE' }).click();
  await page.waitForSelector('.graphiql-container', { timeout: 20_000 });

  // The schema comes with the key: the docs show the root types without a re-fetch.
  await page.locator('button[aria-label="Show Documentation Explorer"]').click();
  await page.locator('.graphiql-doc-explorer').getByText('Query', { exact: true }).first().waitFor({ timeout: 20_000 });
  // The key is in the Headers tab (editable there).
  expect(await page.locator('.graphiql-editor-tool').innerText()).toContain('X-API-Key');

  await page.locator('.graphiql-query-editor .CodeMirror').click();
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText('{ tasks { items { id status } } }');
  await page.locator('.graphiql-execute-button').click();

  const response = page.locator('.graphiql-response');
  await response.getByText(taskId).waitFor({ timeout: 20_000 });
  const shown = await response.innerText();
  expect(shown).toContain('"tasks"');
  expect(shown).toContain(taskId);
  expect(shown).toContain('"completed"');
  // The wrong key's check, then only answers with the key: the schema's and the query's.
  expect(apiAnswers[0]).toBe(401);
  expect(apiAnswers.slice(1).every((s) => s === 200)).toBe(true);
  expect(apiAnswers.length).toBeGreaterThanOrEqual(3);

  // A reload in the same tab opens the IDE at once with the key it has.
  await page.reload();
  await page.waitForSelector('.graphiql-container', { timeout: 20_000 });
  expect(await page.getByLabel('API key').count()).toBe(0);

  await page.screenshot({ path: path.join(ARTIFACTS, 'graphql-ide.png') });
  expect(foreign).toEqual([]);
  expect(pageErrors.filter((e) => !/401/.test(e))).toEqual([]);
});
