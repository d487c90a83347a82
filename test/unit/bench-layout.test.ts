import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

// bench/ holds the two entry points (run.cjs, ab.cjs), the figures in bench/figures/ (each reachable by name from
// `npm run bench`), the profiles and experiments in bench/profiles/ and shared code in bench/lib/.

const BENCH = path.join(__dirname, '..', '..', 'bench');

function listedByRunner(): string[] {
  const r = spawnSync(process.execPath, [path.join(BENCH, 'run.cjs'), 'list'], { encoding: 'utf8' });
  expect(r.status).toBe(0);
  return [...r.stderr.matchAll(/^ {2}(\S+) {2,}/gm)].map((m) => m[1]!);
}

test('every figure in bench/figures/ is reachable from bench/run.cjs, and each name it lists has its script', () => {
  const figures = fs
    .readdirSync(path.join(BENCH, 'figures'))
    .filter((f) => f.endsWith('.cjs'))
    .map((f) => f.slice(0, -'.cjs'.length));
  const listed = listedByRunner();
  const problems = [
    ...figures
      .filter((f) => !listed.includes(f))
      .map((f) => `bench/figures/${f}.cjs is not listed by bench/run.cjs: add it to BENCHES (or SCRIPTS)`),
    ...listed
      .filter((n) => !figures.includes(n))
      .map((n) => `bench/run.cjs lists ${n}, but bench/figures/${n}.cjs does not exist`),
  ];
  expect(problems).toEqual([]);
});

test('bench/ itself holds only run.cjs and ab.cjs besides figures/, profiles/ and lib/', () => {
  const stray = fs
    .readdirSync(BENCH)
    .filter((f) => !['run.cjs', 'ab.cjs', 'figures', 'profiles', 'lib'].includes(f))
    .map((f) => `bench/${f}: a figure goes to bench/figures/ (and bench/run.cjs), a profile to bench/profiles/`);
  expect(stray).toEqual([]);
});
