import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import { buildGraphQLSchema, schemaFileText } from '../http/graphql/schema';
import { repoRoot } from './repo-root';

/** `npm run schema:emit`: writes schema.graphql at the repository root from the code. */
async function main(): Promise<void> {
  const file = path.join(repoRoot(), 'schema.graphql');
  fs.writeFileSync(file, schemaFileText(await buildGraphQLSchema()));
  process.stdout.write(`wrote ${file}\n`);
}

main().catch((err) => {
  process.stderr.write(`schema:emit failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
