/**
 * Validates answers against openapi.yaml with a standard JSON Schema validator (OpenAPI 3.1 schemas are JSON
 * Schema 2020-12), so the document and the answers cannot drift apart: an undocumented status of a documented
 * route, a field the schema does not list (where it closes its objects), or a `null` where the schema does not
 * allow one fails the test that made the request.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { parse } from 'yaml';

type Doc = any;

const DOC_ID = 'https://assets.local/openapi.json';
const doc: Doc = parse(fs.readFileSync(path.join(__dirname, '..', '..', 'openapi.yaml'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);
ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
ajv.addSchema({ ...doc, $id: DOC_ID });

const pointer = (parts: string[]) =>
  parts.map((p) => encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');
const cache = new Map<string, ValidateFunction>();

function compile(parts: string[]): ValidateFunction {
  const ref = `${DOC_ID}#/${pointer(parts)}`;
  let v = cache.get(ref);
  if (!v) {
    v = ajv.compile({ $ref: ref });
    cache.set(ref, v);
  }
  return v;
}

/**
 * The documented path template matching a concrete path, e.g. /api/assets/{id}/tags, when it documents `method`.
 * Literal templates win over templated ones whatever their methods (/api/assets/export is not an /api/assets/{id}):
 * a method a literal path does not document is its 405, checked as an error body.
 */
function templateOf(method: string, pathname: string): string | undefined {
  const m = method.toLowerCase();
  const candidates = Object.keys(doc.paths);
  candidates.sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  const matching = candidates.filter((t) =>
    new RegExp('^' + t.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^/}]+\}/g, '[^/]+') + '$').test(pathname),
  );
  const literal = matching.find((t) => !t.includes('{'));
  if (literal) return doc.paths[literal][m] ? literal : undefined;
  return matching.find((t) => doc.paths[t][m]);
}

/**
 * Throws when `body` (parsed JSON) is not what openapi.yaml documents for this method, path and status. Routes
 * openapi.yaml does not describe (/graphql, unknown paths) are not checked.
 */
export function validateResponse(method: string, pathname: string, status: number, body: unknown): void {
  const template = templateOf(method, pathname);
  if (!template) {
    if (status === 405) validateSchema('Error', body);
    return;
  }
  const m = method.toLowerCase();
  const responses = doc.paths[template][m].responses ?? {};
  const entry = responses[String(status)];
  if (!entry) throw new Error(`${method} ${template}: status ${status} is not documented in openapi.yaml`);
  let parts = ['paths', template, m, 'responses', String(status)];
  let resp = entry;
  if (typeof entry.$ref === 'string') {
    parts = entry.$ref
      .slice(2)
      .split('/')
      .map((p: string) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    resp = parts.reduce((n: Doc, p: string) => n[p], doc);
  }
  const schema = resp.content?.['application/json']?.schema;
  if (!schema) return;
  const validate = compile([...parts, 'content', 'application/json', 'schema']);
  if (!validate(body)) {
    throw new Error(
      `${method} ${pathname} ${status}: the answer does not match openapi.yaml:\n` +
        JSON.stringify(validate.errors, null, 2) +
        '\n' +
        JSON.stringify(body).slice(0, 2000),
    );
  }
}

/** Validates a JSON body against a named component schema (e.g. `Asset`). */
export function validateSchema(name: string, body: unknown): void {
  const validate = compile(['components', 'schemas', name]);
  if (!validate(body)) throw new Error(`${name}: ${JSON.stringify(validate.errors, null, 2)}`);
}

/**
 * A fetch that validates each JSON answer and hands back a Response whose body can still be read: the checked
 * text is put into a fresh Response.
 */
export async function validatedFetch(method: string, url: string, res: Response): Promise<Response> {
  const type = res.headers.get('content-type') ?? '';
  const { pathname } = new URL(url);
  if (!type.startsWith('application/json') || method === 'HEAD') {
    // Every error of a documented route has the {code, message} body (a 416 or a tus protocol error included).
    if (method !== 'HEAD' && res.status >= 400 && (templateOf(method, pathname) || res.status === 405)) {
      throw new Error(
        `${method} ${pathname} ${res.status}: an error answer without the JSON {code, message} body (${type || 'no Content-Type'})`,
      );
    }
    return res;
  }
  const text = await res.text();
  validateResponse(method, pathname, res.status, text === '' ? undefined : JSON.parse(text));
  return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/**
 * The errors openapi.yaml's request body schema of `method` `template` (a documented path) finds in `body`, or
 * undefined when it accepts it: what a client generated from the document would let through.
 */
export function requestBodyErrors(method: string, template: string, body: unknown): unknown[] | undefined {
  const m = method.toLowerCase();
  const content = doc.paths[template]?.[m]?.requestBody?.content;
  if (!content?.['application/json']) throw new Error(`${method} ${template} documents no JSON request body`);
  const validate = annotationsOnly.compile({
    $ref: `${DOC_ID}#/${pointer(['paths', template, m, 'requestBody', 'content', 'application/json', 'schema'])}`,
  });
  return validate(body) ? undefined : (validate.errors ?? []);
}

/**
 * JSON Schema 2020-12 makes `format` an annotation: many generated clients do not check it, so a rule the document
 * means a client to keep must be a `pattern`, `minLength` or the like. Requests are checked as such a client would.
 */
const annotationsOnly = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
annotationsOnly.addSchema({ ...doc, $id: DOC_ID });

/** The documented operation of `method` on the path template, for tests that read the document itself. */
export function operationOf(method: string, template: string): any {
  const op = doc.paths[template]?.[method.toLowerCase()];
  if (!op) throw new Error(`${method} ${template} is not documented`);
  return op;
}

export { templateOf };
