import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config';

// The settings table of docs/operations.md is checked against what src/config.ts reads, so the documentation can
// neither miss a setting nor list one twice. A new setting fails here until it has its row.

const root = path.join(__dirname, '..', '..');
const CONFIG = 'src/config.ts';
const DOC = 'docs/operations.md';
const SECTION = '## Settings';

/** Every environment variable config.ts reads: by its source (any branch) and by running it (names built otherwise). */
function variablesOfConfig(): Set<string> {
  const src = fs.readFileSync(path.join(root, CONFIG), 'utf8');
  const names = new Set<string>();
  for (const m of src.matchAll(/\b[A-Za-z_]\w*\(\s*['"]([A-Z][A-Z0-9_]*)['"]/g)) names.add(m[1]!);
  const envRead = /\benv(?:\.([A-Z][A-Z0-9_]*)|\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\])/g;
  for (const m of src.matchAll(envRead)) names.add((m[1] ?? m[2])!);
  for (const backend of ['fs', 's3']) {
    const seen = new Proxy({} as Record<string, string | undefined>, {
      get(_t, key) {
        if (typeof key === 'string') names.add(key);
        if (key === 'STORAGE_BACKEND') return backend;
        if (key === 'S3_BUCKET') return 'bucket';
        return undefined;
      },
    });
    try {
      loadConfig(seen);
    } catch {
      // Only the names read matter here; config.test.ts checks the parsing.
    }
  }
  return names;
}

interface Row {
  line: number;
  names: string[];
}

/** The variables named in the first cell of each row of a Markdown table under `heading` (up to the next `## `). */
function tableRows(file: string, heading: string): Row[] {
  const lines = fs.readFileSync(path.join(root, file), 'utf8').split('\n');
  const start = lines.findIndex((l) => l.trim() === heading);
  if (start < 0) throw new Error(`${file} has no section "${heading}"`);
  const rows: Row[] = [];
  for (let i = start + 1; i < lines.length && !lines[i]!.startsWith('## '); i++) {
    const l = lines[i]!;
    // A table row (`| NAME | …`), or a list item (`- NAME (default …): …`) as the README names its few.
    const item = l.startsWith('- ');
    if (!item && (!l.startsWith('|') || /^\|\s*-/.test(l) || /^\|\s*variable\s*\|/.test(l))) continue;
    const first = item ? l.slice(2, l.indexOf(' (default')) : (l.split('|')[1] ?? '');
    rows.push({ line: i + 1, names: [...first.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!) });
  }
  return rows;
}

describe('the settings table', () => {
  const read = variablesOfConfig();

  it(`of ${DOC} lists every variable ${CONFIG} reads, each in exactly one row, and no other`, () => {
    const rows = tableRows(DOC, SECTION);
    const where = new Map<string, number[]>();
    for (const row of rows) for (const n of row.names) where.set(n, [...(where.get(n) ?? []), row.line]);
    const problems: string[] = [];
    for (const name of [...read].sort()) {
      const at = where.get(name);
      if (!at) {
        problems.push(
          `${name} is read by ${CONFIG} but has no row in ${DOC}, section "${SECTION}": ` +
            `add one row there: | \`${name}\` | <default> | <what it does> |`,
        );
      } else if (at.length > 1) {
        const lines = at.join(', ');
        problems.push(`${name} has ${at.length} rows in ${DOC} (lines ${lines}): keep one row and merge what they say`);
      }
    }
    for (const [name, at] of where) {
      if (!read.has(name)) {
        const lines = at.join(', ');
        problems.push(`${name} has a row in ${DOC} (line ${lines}) but ${CONFIG} does not read it: remove that row`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('of the README names only variables config.ts reads', () => {
    const stale = tableRows('README.md', '## The settings people change')
      .flatMap((row) => row.names.map((n) => ({ n, line: row.line })))
      .filter(({ n }) => !read.has(n))
      .map(({ n, line }) => `README.md line ${line}: ${n} is not read by ${CONFIG}`);
    expect(stale).toEqual([]);
  });
});
