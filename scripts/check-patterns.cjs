// The ReDoS check of the patterns that eslint-plugin-regexp cannot see: the `pattern`s of openapi.yaml (emitted from
// the TypeBox input schemas, which ajv compiles with the `u` flag and runs on request data) and, through
// `checkPatterns`, any other list (test/unit/patterns-linear.test.ts passes every TypeBox schema's). recheck decides
// each one; a pattern it finds vulnerable, or cannot decide, fails `npm run lint`.
const fs = require('node:fs');
const path = require('node:path');

/** Every `pattern` string under `node` (a parsed JSON or YAML document), with where it stands. */
function patternsOf(node, at = '', out = []) {
  if (Array.isArray(node)) node.forEach((v, i) => patternsOf(v, `${at}[${i}]`, out));
  else if (node !== null && typeof node === 'object')
    for (const [k, v] of Object.entries(node)) {
      if (k === 'pattern' && typeof v === 'string') out.push({ where: at || '/', pattern: v });
      else patternsOf(v, at ? `${at}.${k}` : k, out);
    }
  return out;
}

/** The patterns that are not linear: `[{where, pattern, status, attack?}]`; each distinct pattern is checked once. */
async function checkPatterns(entries) {
  const { check } = require('recheck');
  const verdicts = new Map();
  const bad = [];
  for (const { where, pattern } of entries) {
    if (!verdicts.has(pattern)) verdicts.set(pattern, await check(pattern, 'u', { timeout: 10_000 }));
    const v = verdicts.get(pattern);
    if (v.status !== 'safe')
      bad.push({ where, pattern, status: v.status, complexity: v.complexity?.type, attack: v.attack?.pattern });
  }
  return bad;
}

async function main() {
  const YAML = require('yaml');
  const doc = YAML.parse(fs.readFileSync(path.join(__dirname, '..', 'openapi.yaml'), 'utf8'));
  const entries = patternsOf(doc);
  const bad = await checkPatterns(entries);
  for (const b of bad)
    console.error(
      `openapi.yaml ${b.where}: pattern ${JSON.stringify(b.pattern)} is ${b.status}` +
        (b.complexity ? ` (${b.complexity})` : '') +
        (b.attack ? `; attack: ${b.attack}` : ''),
    );
  if (bad.length > 0) process.exit(1);
}

module.exports = { patternsOf, checkPatterns };
if (require.main === module)
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
