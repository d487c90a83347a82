import { buildSchema, GraphQLError } from 'graphql';
import { Documents } from '../../src/http/graphql/http/documents';

// The document cache of GraphQL over HTTP (src/http/graphql/http/documents.ts): one parse and validation per text,
// valid documents only, bounded by the length of the texts it keeps.
const schema = buildSchema('type Query { a: Int, b: String }');

test('a text is parsed once: the same document object again, until it is pushed out', () => {
  const docs = new Documents(schema, [], 40);
  const first = docs.load('{ a }');
  expect(docs.load('{ a }')).toBe(first);
  expect(docs.has('{ a }')).toBe(true);
  // 5 + 4 × 10 characters: more than 40, so the least recently used ('{ a }') goes.
  for (let i = 0; i < 4; i++) docs.load(`{ x${i}: b }  `);
  expect(docs.has('{ a }')).toBe(false);
  expect(docs.load('{ a }')).not.toBe(first);
});

test('a text used again is kept over older ones', () => {
  const docs = new Documents(schema, [], 12);
  docs.load('{ a }');
  docs.load('{ b }');
  docs.load('{ a }');
  docs.load('{ a b }');
  expect([docs.has('{ a }'), docs.has('{ b }'), docs.has('{ a b }')]).toEqual([true, false, true]);
});

test('invalid documents are answered with their coded errors and not kept', () => {
  const docs = new Documents(schema, []);
  const parse = docs.load('{ a');
  const invalid = docs.load('{ c }');
  expect(Array.isArray(parse) && parse.map((e: GraphQLError) => e.extensions.code)).toEqual(['GRAPHQL_PARSE_FAILED']);
  expect(Array.isArray(invalid) && invalid[0]!.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
  expect([docs.has('{ a'), docs.has('{ c }')]).toEqual([false, false]);
});
