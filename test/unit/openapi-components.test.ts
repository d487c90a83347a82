/**
 * openapi.yaml's input components are emitted from the schemas the routes check (src/http/schema): when this fails,
 * run `npm run openapi:emit` and commit the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { documented, OPENAPI_SCHEMAS, withEmittedComponents } from '../../src/http/schema/openapi';

const text = fs.readFileSync(path.join(__dirname, '..', '..', 'openapi.yaml'), 'utf8');

test('openapi.yaml holds the emitted components (regenerate: npm run openapi:emit)', () => {
  expect(withEmittedComponents(text)).toBe(text);
});

test('each emitted component is its schema, as JSON', () => {
  const schemas = parse(text).components.schemas;
  for (const [name, schema] of Object.entries(OPENAPI_SCHEMAS))
    expect({ name, schema: schemas[name] }).toEqual({ name, schema: documented(schema) });
});
