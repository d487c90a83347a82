import fs from 'node:fs';
import path from 'node:path';
import { withEmittedComponents } from '../http/schema/openapi';
import { repoRoot } from './repo-root';

/** `npm run openapi:emit`: rewrites openapi.yaml's input components from the schemas (src/http/schema). */
const file = path.join(repoRoot(), 'openapi.yaml');
fs.writeFileSync(file, withEmittedComponents(fs.readFileSync(file, 'utf8')));
process.stdout.write(`wrote ${file}\n`);
