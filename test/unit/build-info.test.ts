import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { commitOfCheckout, readBuildInfo } from '../../src/infra/build-info';

// The commit of a checkout is read from git's own files (no git binary in the image): each layout git writes.

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-info-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
const write = (rel: string, content: string) => {
  fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
  fs.writeFileSync(path.join(dir, rel), content);
};

test('no .git: no commit (never an empty or made-up one)', () => {
  expect(commitOfCheckout(dir)).toBeUndefined();
});

test('a detached HEAD, a loose branch ref, a packed one', () => {
  write('.git/HEAD', `${A}\n`);
  expect(commitOfCheckout(dir)).toBe(A);
  write('.git/HEAD', 'ref: refs/heads/main\n');
  write('.git/packed-refs', `# pack-refs with: peeled fully-peeled sorted\n${B} refs/heads/main\n`);
  expect(commitOfCheckout(dir)).toBe(B);
  write('.git/refs/heads/main', `${A}\n`);
  expect(commitOfCheckout(dir)).toBe(A);
});

test("a worktree: .git names its folder, whose commondir holds the branch's ref", () => {
  write('repo/.git/refs/heads/deploy', `${B}\n`);
  write('repo/.git/worktrees/wt/HEAD', 'ref: refs/heads/deploy\n');
  write('repo/.git/worktrees/wt/commondir', '../..\n');
  write('wt/.git', `gitdir: ${path.join(dir, 'repo/.git/worktrees/wt')}\n`);
  expect(commitOfCheckout(path.join(dir, 'wt'))).toBe(B);
});

test('the setting wins; the version is the package.json one', () => {
  write('package.json', JSON.stringify({ version: '9.8.7' }));
  write('.git/HEAD', `${A}\n`);
  expect(readBuildInfo(undefined, dir)).toEqual({ version: '9.8.7', commit: A, nodeVersion: process.versions.node });
  expect(readBuildInfo(B, dir).commit).toBe(B);
});
