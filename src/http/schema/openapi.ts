import type { TSchema } from '@sinclair/typebox';
import { stringify } from 'yaml';
import { AnyHash, MediaType, TreePath } from './fields';
import { REST_BODY_SCHEMAS } from './rest';
import { AssetUploadForm, UploadMetadata } from './forms';

/**
 * openapi.yaml's components emitted from the input schemas (the rest of the document is written by hand):
 * `npm run openapi:emit` rewrites them, test/unit/openapi-components.test.ts fails when they differ.
 */
export const OPENAPI_SCHEMAS: Record<string, TSchema> = {
  MediaType: MediaType(),
  AnyHash: AnyHash(),
  TreePath: TreePath(),
  ...REST_BODY_SCHEMAS,
  AssetUploadForm,
  UploadMetadata,
};

type Json = Record<string, unknown>;

/**
 * A schema as the document holds it: JSON (no TypeBox symbols), `type` first, without the refusal messages, and a
 * field published as a component of its own (`x-component`) as a reference to it (its description kept beside).
 */
export function documented(schema: TSchema): unknown {
  const walk = (node: unknown, root: boolean): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n, false));
    if (node === null || typeof node !== 'object') return node;
    const n = node as Json;
    const component = n['x-component'];
    if (typeof component === 'string' && !root) {
      const own = (OPENAPI_SCHEMAS[component] as Json | undefined)?.description;
      const ref: Json = { $ref: `#/components/schemas/${component}` };
      if (n.description !== undefined && n.description !== own) ref.description = n.description;
      return ref;
    }
    const out: Json = 'type' in n ? { type: n.type } : {};
    for (const [k, v] of Object.entries(n)) {
      if (k === 'type' || k === 'x-message' || k === 'x-component') continue;
      out[k] = walk(v, false);
    }
    return out;
  };
  return walk(JSON.parse(JSON.stringify(schema)), true);
}

const INDENT = '      ';

/** `text` (openapi.yaml) with each emitted component replaced by its schema's YAML; each must be there already. */
export function withEmittedComponents(text: string): string {
  const lines = text.split('\n');
  const start = lines.indexOf('  schemas:');
  if (start < 0) throw new Error('openapi.yaml has no components.schemas');
  for (const [name, schema] of Object.entries(OPENAPI_SCHEMAS)) {
    const at = lines.findIndex((l, i) => i > start && l === `    ${name}:`);
    if (at < 0) throw new Error(`openapi.yaml has no components.schemas.${name} to replace`);
    let end = at + 1;
    while (end < lines.length && (lines[end] === '' || lines[end]!.startsWith(INDENT))) end++;
    // Blank lines before the next component stay where they are.
    while (end > at + 1 && lines[end - 1] === '') end--;
    const body = stringify(documented(schema), { lineWidth: 0 })
      .trimEnd()
      .split('\n')
      .map((l) => INDENT + l);
    lines.splice(at + 1, end - at - 1, ...body);
  }
  return lines.join('\n');
}
