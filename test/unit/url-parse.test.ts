import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// settleUrlParseDeprecation (src/http/graphql/url-parse.ts) must settle Node's one-time DEP0169 flag without
// printing it: afterwards a url.parse call outside node_modules, which would print the warning, prints nothing.
// Run in a fresh Node process (the flag is per process) against the built module (npm test builds dist/ first).
const DIST = path.join(__dirname, '..', '..', 'dist', 'src', 'http', 'graphql', 'url-parse.js');

function run(settle: boolean): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-url-'));
  const script = path.join(dir, 'main.js');
  fs.writeFileSync(
    script,
    `${settle ? `require(${JSON.stringify(DIST)}).settleUrlParseDeprecation();\n` : ''}require('node:url').parse('/graphql?x=1');\n`,
  );
  try {
    return spawnSync(process.execPath, [script], { encoding: 'utf8' }).stderr;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('the url.parse deprecation flag is settled silently', () => {
  expect(run(false)).toContain('DEP0169'); // what an unsettled process prints
  expect(run(true)).toBe('');
});
