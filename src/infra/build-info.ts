import fs from 'node:fs';
import path from 'node:path';

/** What this process runs: `GET /version` and the `assets_build_info` metric. */
export interface BuildInfo {
  /** package.json's `version`. */
  readonly version: string;
  /** The git commit the build came from; undefined when neither the image nor a checkout says. */
  readonly commit: string | undefined;
  readonly nodeVersion: string;
}

const COMMIT = /^[0-9a-f]{7,64}$/;

/**
 * The build's identity: the package's version, and its commit from `GIT_COMMIT` (set when the image is built, where
 * no `.git` is copied in), else from the checkout's `.git` when there is one (`npm start` in a clone).
 */
export function readBuildInfo(commitSetting: string | undefined, root = packageRoot()): BuildInfo {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version?: unknown };
  const fromSetting = commitSetting?.toLowerCase();
  return {
    version: typeof pkg.version === 'string' ? pkg.version : '0.0.0',
    commit: fromSetting && COMMIT.test(fromSetting) ? fromSetting : commitOfCheckout(root),
    nodeVersion: process.versions.node,
  };
}

/** The folder of package.json, from src/ (tests) or dist/src/ (built). */
function packageRoot(): string {
  let dir = __dirname;
  for (let i = 0; i < 5 && !fs.existsSync(path.join(dir, 'package.json')); i++) dir = path.dirname(dir);
  return dir;
}

/**
 * HEAD's commit, read from the files git keeps (no `git` binary needed): `.git` is a folder, or in a worktree a file
 * naming one (`gitdir: …`, whose `commondir` holds the refs); a branch is a loose ref or a line of `packed-refs`.
 */
export function commitOfCheckout(root: string): string | undefined {
  const read = (file: string): string | undefined => {
    try {
      return fs.readFileSync(file, 'utf8').trim();
    } catch {
      return undefined;
    }
  };
  let gitDir = path.join(root, '.git');
  const pointer = read(gitDir);
  if (pointer?.startsWith('gitdir:')) gitDir = path.resolve(root, pointer.slice(7).trim());
  const head = read(path.join(gitDir, 'HEAD'));
  if (head === undefined) return undefined;
  if (COMMIT.test(head)) return head;
  if (!head.startsWith('ref:')) return undefined;
  const ref = head.slice(4).trim();
  const common = read(path.join(gitDir, 'commondir'));
  const commonDir = common === undefined ? gitDir : path.resolve(gitDir, common);
  for (const dir of [gitDir, commonDir]) {
    const loose = read(path.join(dir, ref));
    if (loose !== undefined && COMMIT.test(loose)) return loose;
  }
  for (const line of (read(path.join(commonDir, 'packed-refs')) ?? '').split('\n')) {
    const [sha, name] = line.split(' ');
    if (name === ref && sha !== undefined && COMMIT.test(sha)) return sha;
  }
  return undefined;
}
