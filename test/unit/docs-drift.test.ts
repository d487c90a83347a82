import fs from 'node:fs';
import path from 'node:path';
import { CORS_EXPOSED_HEADERS } from '../../src/http/cors';

// Statements in the docs that the code can make false without touching them: the Node.js version the README asks
// for (package.json `engines` decides it), and what docs/api.md says of CORS on the resumable uploads.

const root = path.join(__dirname, '..', '..');
const read = (f: string) => fs.readFileSync(path.join(root, f), 'utf8');

test("the README's Node.js version is package.json's engines.node", () => {
  const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
  const wanted = /^>=\s*(\d+(?:\.\d+)*)$/.exec(engines)?.[1];
  expect(wanted).toBeDefined();
  const named = [...read('README.md').matchAll(/Node(?:\.js)? ≥ (\d+(?:\.\d+)*)/g)].map((m) => m[1]);
  expect(named.length).toBeGreaterThan(0);
  expect(named).toEqual(named.map(() => wanted));
});

test('docs/api.md does not say tus answers lack CORS headers, and names the tus headers exposed', () => {
  const api = read('docs/api.md');
  expect(api).not.toMatch(/tus answers carry no [`']?Access-Control/i);
  expect(api).not.toMatch(/no cross-origin requests/i);
  const section = api.slice(api.indexOf('**Cross-origin uploads**'));
  expect(section.length).toBeLessThan(api.length);
  for (const h of CORS_EXPOSED_HEADERS.filter((h) => /^(Upload|Asset|Tus-Resumable|Location)/.test(h)))
    expect([h, section.slice(0, 800).includes(`\`${h}\``)]).toEqual([h, true]);
});
