/**
 * The lane's variable coercion (src/http/graphql/executor.ts `coerceVariables`) gives what graphql-js's
 * `getVariableValues` gives, for any values: the same coerced values (and key order) when graphql-js accepts them, and
 * graphql-js's own errors when it refuses them. Its set-up-once path for built-in scalar variables must never accept
 * what graphql-js refuses, nor coerce differently (an Int given as a float, an ID given as a number, a String given
 * as a boolean ...).
 */
import fc from 'fast-check';
import { buildSchema, getVariableValues, Kind, parse, type OperationDefinitionNode } from 'graphql';
import { coerceVariables } from '../../src/http/graphql/executor';

const schema = buildSchema(`
  enum Order { asc desc }
  input Filter { tags: [String!], name: String }
  type Query { f(id: ID, s: String, i: Int, x: Float, b: Boolean, o: Order, filter: Filter, list: [ID!]): Boolean }
`);

const operation = (text: string): OperationDefinitionNode => {
  const def = parse(text).definitions[0]!;
  if (def.kind !== Kind.OPERATION_DEFINITION) throw new Error('not an operation');
  return def;
};

const OPERATIONS = [
  'query Q($id: ID!) { f(id: $id) }',
  'query Q($id: ID) { f(id: $id) }',
  'query Q($id: ID!, $s: String!, $i: Int!, $x: Float!, $b: Boolean!) { f(id: $id, s: $s, i: $i, x: $x, b: $b) }',
  'query Q($s: String, $i: Int = 3, $b: Boolean) { f(s: $s, i: $i, b: $b) }',
  'query Q($i: Int! = 20) { f(i: $i) }',
  'query Q($o: Order!, $id: ID!) { f(o: $o, id: $id) }',
  'query Q($filter: Filter, $list: [ID!]) { f(filter: $filter, list: $list) }',
  'query Q { f }',
].map(operation);

const value = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('', '12', 'asc', 'true', '1.5', '😀', '00000000-0000-4000-8000-000000000000'),
  fc.integer(),
  fc.constantFrom(0, -0, 1.5, 2 ** 31, -(2 ** 31), 2 ** 31 - 1, 2 ** 53, Number.MAX_VALUE, 1e-7),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer()), { maxLength: 3 }),
  fc.dictionary(
    fc.constantFrom('tags', 'name', 'other'),
    fc.oneof(fc.string({ maxLength: 3 }), fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 })),
  ),
);

const variables = fc.oneof(
  fc.constant(undefined),
  fc.dictionary(fc.constantFrom('id', 's', 'i', 'x', 'b', 'o', 'filter', 'list', 'extra'), value, { maxKeys: 6 }),
);

function byGraphqlJs(op: OperationDefinitionNode, vars: Record<string, unknown> | undefined) {
  const r = getVariableValues(schema, op.variableDefinitions ?? [], vars ?? {}, { maxErrors: 50 });
  if (r.errors) return { errors: r.errors.map((e) => e.message) };
  return { values: Object.entries(r.coerced), hasNull: Object.values(r.coerced).includes(null) };
}

function byLane(op: OperationDefinitionNode, vars: Record<string, unknown> | undefined) {
  const r = coerceVariables(schema, op, vars);
  if ('errors' in r) return { errors: (r.errors ?? []).map((e) => e.message) };
  return { values: Object.entries(r.values), hasNull: r.hasNull };
}

describe('coerceVariables', () => {
  it('gives graphql-js getVariableValues result for any variables of any operation', () => {
    fc.assert(
      fc.property(fc.constantFrom(...OPERATIONS), variables, (op, vars) => {
        expect(byLane(op, vars)).toEqual(byGraphqlJs(op, vars));
      }),
      { numRuns: 20_000 },
    );
  });

  it('coerces the common cases as graphql-js does (values and their types)', () => {
    const all = OPERATIONS[2]!;
    for (const vars of [
      { id: 'a', s: 'b', i: 1, x: 1.5, b: true },
      { id: 12, s: '', i: -(2 ** 31), x: 3, b: false },
      { id: '12', s: 'x', i: 2 ** 31 - 1, x: 0, b: true, extra: [1] },
    ]) {
      expect(byLane(all, vars)).toEqual(byGraphqlJs(all, vars));
      const r = coerceVariables(schema, all, vars);
      expect('values' in r && typeof r.values.id).toBe('string');
      expect('values' in r && Object.getPrototypeOf(r.values)).toBe(null);
    }
    for (const vars of [
      { id: 1.5, s: 'b', i: 1, x: 1, b: true },
      { id: 'a', s: 1, i: 1, x: 1, b: true },
      { id: 'a', s: 's', i: 1.5, x: 1, b: true },
      { id: 'a', s: 's', i: 2 ** 31, x: 1, b: true },
      { id: 'a', s: 's', i: 1, x: '1', b: true },
      { id: 'a', s: 's', i: 1, x: 1, b: 'true' },
    ]) {
      expect(byLane(all, vars)).toEqual(byGraphqlJs(all, vars));
      expect('errors' in coerceVariables(schema, all, vars)).toBe(true);
    }
  });
});
