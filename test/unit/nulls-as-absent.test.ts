/**
 * GraphQL `null` as absent (src/http/graphql/input-check.ts `nullsAsAbsent`), on a schema with every shape the
 * service's could take: nested input objects, JSON values, lists of nullable items, a type that keeps its nulls.
 */
import { buildSchema, GraphQLInputObjectType } from 'graphql';
import { DomainError } from '../../src/domain/errors';
import { NULL_IS_A_VALUE, nullsAsAbsent } from '../../src/http/graphql/input-check';

const schema = buildSchema(`
  scalar JSON
  input Inner { a: String, b: [String] }
  input Filter { name: String, inner: Inner, json: JSON, list: [Inner!] }
  input Update { name: String, previewId: ID }
  type Query { f(filter: Filter, after: String, limit: Int! = 20, update: Update, ids: [ID]): Boolean }
`);
(schema.getType('Update') as GraphQLInputObjectType).extensions = NULL_IS_A_VALUE;
const args = schema.getQueryType()!.getFields().f!.args;

test('null arguments and input fields are absent, at any depth; JSON values are kept as they are', () => {
  expect(nullsAsAbsent({ filter: null, after: null, limit: 3 }, args)).toEqual({ limit: 3 });
  expect(
    nullsAsAbsent(
      { filter: { name: null, inner: { a: null, b: ['x'] }, json: { k: null }, list: [{ a: null }] }, limit: 20 },
      args,
    ),
  ).toEqual({ filter: { inner: { b: ['x'] }, json: { k: null }, list: [{}] }, limit: 20 });
});

test('nothing to remove: the same objects, not copies', () => {
  const given = { filter: { name: 'n', inner: { a: 'a' } }, limit: 20 };
  const out = nullsAsAbsent(given, args);
  expect(out).toBe(given);
  expect(out.filter).toBe(given.filter);
});

test('what was given is not changed (the copies hold the change)', () => {
  const given = { filter: { name: null, inner: { a: null } }, limit: 20 };
  nullsAsAbsent(given, args);
  expect(given).toEqual({ filter: { name: null, inner: { a: null } }, limit: 20 });
});

test('a type marked NULL_IS_A_VALUE keeps its fields’ nulls; a null item of a list is INVALID_BODY', () => {
  expect(nullsAsAbsent({ update: { previewId: null, name: null }, limit: 20 }, args)).toEqual({
    update: { previewId: null, name: null },
    limit: 20,
  });
  expect(() => nullsAsAbsent({ ids: ['a', null], limit: 20 }, args)).toThrow(DomainError);
  expect(() => nullsAsAbsent({ filter: { inner: { b: [null] } }, limit: 20 }, args)).toThrow(
    expect.objectContaining({ code: 'INVALID_BODY' }),
  );
});
