/**
 * schema.graphql is the published GraphQL contract: it must be exactly what the code builds. When this fails, run
 * `npm run schema:emit` and commit the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildGraphQLSchema, schemaFileText } from '../../src/http/graphql/schema';

test('schema.graphql is up to date with the code (regenerate: npm run schema:emit)', async () => {
  const expected = schemaFileText(await buildGraphQLSchema());
  const file = path.join(__dirname, '..', '..', 'schema.graphql');
  const actual = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  expect(actual).toBe(expected);
});

test('the schema has the asset, task, export and key operations', async () => {
  const schema = await buildGraphQLSchema();
  expect(Object.keys(schema.getQueryType()!.getFields()).sort()).toEqual([
    'apiKeys',
    'asset',
    'assets',
    'auditEvents',
    'baseModels',
    'contentExists',
    'jobAssets',
    'remoteMetadata',
    'tagCounts',
    'tags',
    'task',
    'tasks',
    'usage',
    'viewer',
  ]);
  expect(Object.keys(schema.getMutationType()!.getFields()).sort()).toEqual([
    'addAssetPaths',
    'addAssetTags',
    'cancelTask',
    'createApiKey',
    'createAssetFromHash',
    'deleteAsset',
    'removeAssetTags',
    'revokeApiKey',
    'setAssetImmutable',
    'setOwnerQuota',
    'startDownload',
    'startExport',
    'updateAsset',
    'uploadAsset',
  ]);
});
