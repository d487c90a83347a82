/**
 * `null` for every nullable input of every GraphQL operation (issue 31: `assets(filter: null)` answered INTERNAL).
 * The schema is walked, not listed: each argument and input-object field that may be null (and each argument of
 * non-null type with a default, which a nullable variable may feed null) is a site; a run picks operations and sites,
 * sends null there as a literal or through a variable, fills the other inputs with valid values or leaves optional
 * ones out, and expects data or errors whose `extensions.code` is a string other than INTERNAL.
 *
 * FUZZ_RUNS (default 60, times 5 here) sets the runs: `FUZZ_RUNS=10000 npx jest test/integration/graphql-null`.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import {
  buildSchema,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  type GraphQLArgument,
  type GraphQLInputField,
  type GraphQLInputType,
} from 'graphql';
import { gql, gqlUpload, type GqlResult } from '../helpers/graphql';
import { json, startTestService, uploadForm, type TestService } from '../helpers/harness';
import { FUZZ_RUNS, FUZZ_SEED } from '../helpers/hostile';

const schema = buildSchema(fs.readFileSync(path.join(__dirname, '..', '..', 'schema.graphql'), 'utf8'));
/** Closed port: a download started here fails in its job, after the request was answered. */
const HF = 'http://127.0.0.1:9';

let svc: TestService;
let mine: { id: string; asset_hash: string };
beforeAll(async () => {
  svc = await startTestService({ HF_ENDPOINT: HF, CIVITAI_ENDPOINT: 'http://127.0.0.1:9' });
  const res = await svc.fetch('/api/assets', {
    method: 'POST',
    body: uploadForm(`null ${crypto.randomUUID()}`, { tags: 'nulls' }),
  });
  mine = await json(res);
});
afterAll(async () => {
  await svc?.stop();
});

type Input = GraphQLArgument | GraphQLInputField;

/**
 * The places where a client can put null, as dotted paths of argument and field names (`filter.hash`). An argument
 * of non-null type with a default is one too: a nullable variable may bring it null.
 */
function sitesOf(inputs: readonly Input[], at: string[] = [], seen = new Set<string>()): string[] {
  const out: string[] = [];
  for (const input of inputs) {
    const where = [...at, input.name];
    if (!isNonNullType(input.type) || (at.length === 0 && input.defaultValue !== undefined)) out.push(where.join('.'));
    const named = getNamedType(input.type);
    if (isInputObjectType(named) && !seen.has(named.name)) {
      out.push(...sitesOf(Object.values(named.getFields()), where, new Set([...seen, named.name])));
    }
  }
  return out;
}

const operations = [schema.getQueryType()!, schema.getMutationType()!]
  .flatMap((root) => Object.values(root.getFields()).map((field) => ({ root, field, sites: sitesOf(field.args) })))
  .filter((o) => o.sites.length > 0);

/** A valid value of an input, by its type and name (ids and hashes of the test's own asset). */
function validValue(type: GraphQLInputType, name: string): unknown {
  const t = getNullableType(type);
  if (isListType(t)) return [validValue(t.ofType, name)];
  if (isInputObjectType(t)) {
    const o: Record<string, unknown> = {};
    for (const f of Object.values(t.getFields())) if (isNonNullType(f.type)) o[f.name] = validValue(f.type, f.name);
    return o;
  }
  if (isEnumType(t)) return t.getValues()[0]!.value;
  switch (t.name) {
    case 'ID':
      return mine.id;
    case 'Int':
    case 'SafeInt':
      return name === 'offset' ? 0 : 1;
    case 'Boolean':
      return false;
    case 'DateTimeISO':
      return '2024-01-01T00:00:00.000Z';
    case 'JSON':
      return name === 'jobAssetNameFilters' ? { [mine.id]: ['x'] } : { k: 'v' };
    case 'String':
      if (name === 'hash') return mine.asset_hash;
      if (name === 'sourceUrl' || name === 'url') return `${HF}/org/repo/resolve/main/m.safetensors`;
      if (name === 'namingStrategy') return 'preserve';
      if (name === 'mimeType') return 'text/plain';
      if (name === 'after') return '';
      return 'nulls';
    default:
      throw new Error(`no valid value for ${t.name}`);
  }
}

/** The value of an input: null at a chosen site, a valid value or nothing (optional inputs) elsewhere. */
function valueAt(input: Input, at: string[], nulls: Set<string>, keep: (key: string) => boolean): unknown {
  const key = at.join('.');
  if (nulls.has(key)) return null;
  const required = isNonNullType(input.type) && input.defaultValue === undefined;
  const holdsNull = [...nulls].some((n) => n.startsWith(key + '.'));
  if (!required && !holdsNull && !keep(key)) return undefined;
  const t = getNullableType(input.type);
  if (isInputObjectType(t)) {
    const o: Record<string, unknown> = {};
    for (const f of Object.values(t.getFields())) {
      const v = valueAt(f, [...at, f.name], nulls, keep);
      if (v !== undefined) o[f.name] = v;
    }
    return o;
  }
  return validValue(input.type, input.name);
}

/** A GraphQL literal of a value of `type` (JSON values as GraphQL object and list literals). */
function literal(value: unknown, type: GraphQLInputType | undefined): string {
  if (value === null) return 'null';
  const t = type && getNullableType(type);
  if (t && isEnumType(t)) return String(value);
  if (Array.isArray(value))
    return `[${value.map((v) => literal(v, t && isListType(t) ? t.ofType : undefined)).join(', ')}]`;
  if (typeof value === 'object') {
    const fields = t && isInputObjectType(t) ? t.getFields() : undefined;
    return `{${Object.entries(value as object)
      .map(([k, v]) => `${JSON.stringify(k).slice(1, -1)}: ${literal(v, fields?.[k]?.type)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value);
}

/** A run: the operation (`Query.assets`), the sites given null, how the inputs travel, which optional ones are sent. */
interface Case {
  operation: string;
  nulls: string[];
  byVariables: boolean;
  keep: (key: string) => boolean;
}

/** The request of a case: its document, variables and whether it is a multipart upload. */
function requestOf(c: Case): { query: string; variables: Record<string, unknown>; upload: boolean } {
  const { root, field } = operations.find((o) => `${o.root.name}.${o.field.name}` === c.operation)!;
  const nulls = new Set(c.nulls);
  const variables: Record<string, unknown> = {};
  const defs: string[] = [];
  const args: string[] = [];
  let upload = false;
  for (const arg of field.args) {
    if (getNamedType(arg.type).name === 'Upload') {
      upload = true;
      defs.push(`$${arg.name}: Upload!`);
      args.push(`${arg.name}: $${arg.name}`);
      continue;
    }
    const value = valueAt(arg, [arg.name], nulls, c.keep);
    if (value === undefined) continue;
    // A nullable variable may stand for an argument of non-null type that has a default; literal null may not.
    const viaVariable = c.byVariables || (value === null && isNonNullType(arg.type));
    if (viaVariable) {
      const declared = value === null && isNonNullType(arg.type) ? String(arg.type.ofType) : String(arg.type);
      defs.push(`$${arg.name}: ${declared}`);
      args.push(`${arg.name}: $${arg.name}`);
      variables[arg.name] = value;
    } else {
      args.push(`${arg.name}: ${literal(value, arg.type)}`);
    }
  }
  const op = root === schema.getMutationType() ? 'mutation' : 'query';
  const query = `${op} Nulls${defs.length ? `(${defs.join(', ')})` : ''} { ${field.name}${args.length ? `(${args.join(', ')})` : ''} { __typename } }`;
  return { query, variables, upload };
}

const caseArb: fc.Arbitrary<Case> = fc.constantFrom(...operations).chain(({ root, field, sites }) =>
  fc.record({
    operation: fc.constant(`${root.name}.${field.name}`),
    nulls: fc.subarray(sites, { minLength: 1, maxLength: Math.min(3, sites.length) }),
    byVariables: fc.boolean(),
    keep: fc.func(fc.boolean()),
  }),
);

function noInternal(r: GqlResult, sent: unknown): void {
  const fail = (why: string) =>
    new Error(`${why}: ${r.status} ${JSON.stringify(r.body).slice(0, 400)} for ${JSON.stringify(sent)}`);
  if (r.status >= 500) throw fail('a 5xx');
  if (r.errors === undefined && r.data == null) throw fail('neither data nor errors');
  for (const e of r.errors ?? []) {
    if (typeof e.extensions?.code !== 'string' || e.extensions.code === 'INTERNAL')
      throw fail('an INTERNAL or code-less error');
  }
}

test('the schema has null sites on queries and mutations alike (the walk finds them)', () => {
  const names = operations.map((o) => o.field.name);
  expect(names).toEqual(
    expect.arrayContaining(['assets', 'tagCounts', 'tasks', 'updateAsset', 'startExport', 'uploadAsset']),
  );
  const assets = operations.find((o) => o.field.name === 'assets')!;
  expect(assets.sites).toEqual(expect.arrayContaining(['filter', 'filter.metadataFilter', 'after', 'limit']));
});

test('the cases of the issue: filter null, literal or variable, on assets and tagCounts', async () => {
  for (const [query, variables] of [
    ['{ assets(filter: null) { total } }', {}],
    ['query($f: AssetFilter) { assets(filter: $f) { total } }', { f: null }],
    ['{ tagCounts(filter: null) { name } }', {}],
    ['query($f: AssetFilter) { tagCounts(filter: $f) { name } }', { f: null }],
  ] as const) {
    const r = await gql(svc, query, variables);
    expect({ query, errors: r.errors }).toEqual({ query, errors: undefined });
  }
});

test(
  'null for any nullable argument or input field of any operation: data, or an error coded other than INTERNAL',
  async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const { query, variables, upload } = requestOf(c);
        const r = upload ? await gqlUpload(svc, query, variables, 'null fuzz') : await gql(svc, query, variables);
        noInternal(r, { query, variables });
      }),
      // Few hundred cases in CI; more with FUZZ_RUNS.
      { numRuns: FUZZ_RUNS * 5, endOnFailure: true, ...FUZZ_SEED },
    );
    expect((await gql(svc, '{ assets(limit: 1) { total } }')).errors).toBeUndefined();
  },
  Math.max(120_000, FUZZ_RUNS * 5 * 400),
);
