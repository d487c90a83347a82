import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import { buildGraphQLSchema, schemaFileText } from '../http/graphql/schema';

/** `npm run schema:emit`: writes schema.graphql at the repository root from the code. */
async function main(): Promise<void> {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('package.json not found above ' + __dirname);
    dir = up;
  }
  const file = path.join(dir, 'schema.graphql');
  fs.writeFileSync(file, schemaFileText(await buildGraphQLSchema()));
  process.stdout.write(`wrote ${file}\n`);
}

main().catch((err) => {
  process.stderr.write(`schema:emit failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
