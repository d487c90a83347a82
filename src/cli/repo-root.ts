import fs from 'node:fs';
import path from 'node:path';

/** The checkout's root (the folder of package.json above this file): where the emitted contracts are written. */
export function repoRoot(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('package.json not found above ' + __dirname);
    dir = up;
  }
  return dir;
}
