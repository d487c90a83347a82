import fs from 'node:fs';
import path from 'node:path';
import { withEmittedComponents } from '../http/schema/openapi';

/** `npm run openapi:emit`: rewrites openapi.yaml's input components from the schemas (src/http/schema). */
function main(): void {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('package.json not found above ' + __dirname);
    dir = up;
  }
  const file = path.join(dir, 'openapi.yaml');
  fs.writeFileSync(file, withEmittedComponents(fs.readFileSync(file, 'utf8')));
  process.stdout.write(`wrote ${file}\n`);
}

main();
