/**
 * The GraphQL IDE: served by the service itself (no internet needed), open without a key, and usable in a real
 * browser: headless Chromium (playwright-core) sets the key header, runs `{ tasks { items { id status } } }` and
 * sees the result. The screenshot is kept in test-artifacts/graphql-ide.png.
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
  const res = await svc.fetch('/graphql', { key: null, headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
  const html = await res.text();
  expect(html).not.toMatch(/https?:\/\//);
  const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  expect(refs.length).toBe(6);
  for (const ref of refs) {
    expect(ref).toMatch(/^\/graphql\/ide\//);
    const file = await svc.fetch(ref, { key: null });
    expect({ ref, status: file.status }).toEqual({ ref, status: 200 });
    expect(file.headers.get('content-type')).toMatch(ref.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
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
  const started = await gql(svc, 'mutation($u: String!) { startDownload(input: {sourceUrl: $u}) { task { id } } }', { u: hub.fileUrl('ide-model.bin') }, { key: KEYS.admin });
  const taskId: string = started.data.startDownload.task.id;
  await waitFor(async () => ((await gql(svc, `{ task(id: "${taskId}") { status } }`, {}, { key: KEYS.admin })).data.task.status === 'completed' ? true : undefined));

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--disable-component-update', '--no-first-run'],
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
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });

  const apiAnswers: number[] = [];
  page.on('response', (r) => {
    if (r.url() === `${svc.url}/graphql` && r.request().method() === 'POST') apiAnswers.push(r.status());
  });

  await page.goto(`${svc.url}/graphql`);
  await page.waitForSelector('.graphiql-container', { timeout: 20_000 });
  // Without a key the IDE's schema request is refused like any other operation.
  await waitFor(async () => (apiAnswers.includes(401) ? true : undefined));

  // Paste the key in the Headers tab (as an admin would), then the query, then run it.
  await page.locator('button[data-name="headers"]').click();
  await page.locator('.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror').click();
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(`{"X-API-Key": "${KEYS.admin}"}`);
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
  expect(apiAnswers[apiAnswers.length - 1]).toBe(200);

  // With the key in place the schema loads too (docs and autocompletion).
  await page.locator('button[aria-label="Re-fetch GraphQL schema"]').click();
  await waitFor(async () => (apiAnswers.filter((s) => s === 200).length >= 2 ? true : undefined));

  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, 'graphql-ide.png') });
  expect(foreign).toEqual([]);
  expect(pageErrors.filter((e) => !/401/.test(e))).toEqual([]);
});
