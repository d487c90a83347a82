import type { IncomingHttpHeaders } from 'node:http';
import { Kind } from 'graphql';
import Negotiator from 'negotiator';
import MIMEType from 'whatwg-mimetype';
import { badRequest } from './errors';

/**
 * What a GraphQL request asks for, read from its HTTP request as the GraphQL-over-HTTP convention Apollo Server 5
 * implemented: the CSRF check, the methods, a POST's JSON body or a GET's query string, the answer's content type.
 * Each refusal is Apollo's, message and status (test/integration/graphql-wire.test.ts).
 */
export interface GraphQLRequest {
  query?: string;
  operationName?: string;
  variables?: Record<string, unknown>;
  extensions?: Record<string, unknown>;
}

export const JSON_TYPE = 'application/json; charset=utf-8';
const ANSWER_TYPES = [JSON_TYPE, 'application/graphql-response+json; charset=utf-8'];
const NEGOTIATED_TYPES = [...ANSWER_TYPES, 'application/json; callbackSpec=1.0; charset=utf-8'];

/** A few distinct Accept and Content-Type values are sent again and again: each is worked out once. */
const MEMO_SIZE = 256;
function memo<T>(compute: (key: string) => T): (key: string) => T {
  const known = new Map<string, T>();
  return (key) => {
    let v = known.get(key);
    if (v === undefined && !known.has(key)) {
      if (known.size >= MEMO_SIZE) known.clear();
      known.set(key, (v = compute(key)));
    }
    return v as T;
  };
}

const essenceOf = memo((type) => MIMEType.parse(type)?.essence ?? null);

/** The answer's content type by the Accept header, or null when it accepts none of them (406). */
export const contentTypeFor = (accept: string | undefined): string | null => (accept ? negotiated(accept) : JSON_TYPE);
const negotiated = memo((accept) => new Negotiator({ headers: { accept } }).mediaType(NEGOTIATED_TYPES) ?? null);

const SIMPLE_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'];
const PREFLIGHT_HEADERS = ['x-apollo-operation-name', 'apollo-require-preflight'];

/**
 * CSRF prevention: a request a browser sends cross-site without a preflight (no content type, or a form's or plain
 * text's) must carry a header such a request cannot set.
 */
export function preventCsrf(headers: IncomingHttpHeaders): void {
  const type = headers['content-type'];
  if (type !== undefined) {
    const essence = essenceOf(type);
    if (essence === null || !SIMPLE_TYPES.includes(essence)) return;
  }
  if (PREFLIGHT_HEADERS.some((h) => (headers[h]?.length ?? 0) > 0)) return;
  throw badRequest(
    `This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). Please either specify a ` +
      `'content-type' header (with a type that is not one of ${SIMPLE_TYPES.join(', ')}) or provide a non-empty ` +
      `value for one of the following headers: ${PREFLIGHT_HEADERS.join(', ')}\n`,
  );
}

/** The operation a request asks for: a POST's body (an object), a GET's query string, no other method. */
export function readRequest(method: string, headers: IncomingHttpHeaders, body: unknown, search: string) {
  if (method === 'POST') return fromBody(body);
  if (method === 'GET') {
    const type = headers['content-type'];
    if (type !== undefined && essenceOf(type) !== 'application/json') {
      throw badRequest('GET requests may not have a content-type header other than application/json.', {
        status: 415,
        headers: new Map(),
      });
    }
    return fromSearch(new URLSearchParams(search));
  }
  throw badRequest('Apollo Server supports only GET/POST requests.', {
    status: 405,
    headers: new Map([['allow', 'GET, POST']]),
  });
}

const isRecord = (o: unknown): o is Record<string, unknown> =>
  !!o && typeof o === 'object' && !Buffer.isBuffer(o) && !Array.isArray(o);
const stringOrUndefined = (v: unknown) => (typeof v === 'string' ? v : undefined);

function fromBody(body: unknown): GraphQLRequest {
  if (Array.isArray(body)) throw badRequest('Operation batching disabled.');
  if (!isRecord(body) || Object.keys(body).length === 0)
    throw badRequest('POST body missing, invalid Content-Type, or JSON object has no keys.');
  const { query, variables, extensions, operationName } = body;
  if (query && typeof query !== 'string') {
    throw badRequest(
      (query as { kind?: unknown }).kind === Kind.DOCUMENT
        ? "GraphQL queries must be strings. It looks like you're sending the internal graphql-js representation " +
            'of a parsed query in your request instead of a request in the GraphQL query language. You can convert ' +
            'an AST to a string using the `print` function from `graphql`, or use a client like `apollo-client` ' +
            'which converts the internal representation to a string for you.'
        : 'GraphQL queries must be strings.',
    );
  }
  for (const [name, value] of [
    ['variables', variables],
    ['extensions', extensions],
  ] as const) {
    if (typeof value === 'string')
      throw badRequest(
        `\`${name}\` in a POST body should be provided as an object, not a recursively JSON-encoded string.`,
      );
  }
  if ('extensions' in body && extensions !== null && !isRecord(extensions))
    throw badRequest('`extensions` in a POST body must be an object if provided.');
  if ('variables' in body && variables !== null && !isRecord(variables))
    throw badRequest('`variables` in a POST body must be an object if provided.');
  if ('operationName' in body && operationName !== null && typeof operationName !== 'string')
    throw badRequest('`operationName` in a POST body must be a string if provided.');
  return {
    query: stringOrUndefined(query),
    operationName: stringOrUndefined(operationName),
    variables: isRecord(variables) ? variables : undefined,
    extensions: isRecord(extensions) ? extensions : undefined,
  };
}

function fromSearch(params: URLSearchParams): GraphQLRequest {
  return {
    query: once(params, 'query'),
    operationName: once(params, 'operationName'),
    variables: jsonRecord(params, 'variables'),
    extensions: jsonRecord(params, 'extensions'),
  };
}

function once(params: URLSearchParams, name: string): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) throw badRequest(`The '${name}' search parameter may only be specified once.`);
  return values[0];
}

function jsonRecord(params: URLSearchParams, name: string): Record<string, unknown> | undefined {
  const text = once(params, name);
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest(`The ${name} search parameter contains invalid JSON.`);
  }
  if (!isRecord(value)) throw badRequest(`The ${name} search parameter should contain a JSON-encoded object.`);
  return value;
}

/**
 * The query string of a request target, `?` included ('' for none), as `url.parse(target).search` gives it but for
 * the characters url.parse escapes, which decode to the same parameters.
 */
export function searchOf(target: string): string {
  const hash = target.indexOf('#');
  const q = target.indexOf('?');
  if (q < 0 || (hash >= 0 && hash < q)) return '';
  return hash < 0 ? target.slice(q) : target.slice(q, hash);
}
