import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Every figure in bench/figures/ with smoke sizes runs once through bench/run.cjs (--smoke) against the built service
 * (dist/, which `npm test` builds), so the scripts cannot rot. Only that each exits 0 and prints its result line is checked: timings on a
 * shared CI machine mean nothing.
 */
const ROOT = path.join(__dirname, '..', '..');
const RUNNER = path.join(ROOT, 'bench', 'run.cjs');
const BENCHES = [
  'upload',
  'hashing',
  'concurrent',
  'metadata',
  'listing',
  'download',
  'content',
  'graphql',
  'startup',
  's3-vs-fs-upload',
  's3',
  'thumbnails',
  'grid',
  'grid-thumbs',
  'tus-upload',
  'export',
  'zip-writer',
  'cli',
  'memory',
];

jest.setTimeout(180_000);

beforeAll(() => {
  if (!fs.existsSync(path.join(ROOT, 'dist', 'src', 'main.js')))
    throw new Error('dist/ is missing: run npm run build first (npm test does)');
});

test.each(BENCHES)('npm run bench -- %s --smoke', async (name) => {
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve) => {
      const child = spawn(process.execPath, [RUNNER, name, '--smoke'], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('close', (c) => resolve({ code: c, stdout: out, stderr: err }));
    },
  );
  expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
  const line = stdout.split('\n').find((l) => l.startsWith(`RESULT ${name} `));
  expect(line).toBeDefined();
  expect(typeof JSON.parse(line!.slice(`RESULT ${name} `.length))).toBe('object');
});
