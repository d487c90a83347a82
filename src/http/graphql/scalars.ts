import { GraphQLError, GraphQLScalarType, Kind, type ValueNode } from 'graphql';
import { GraphQLISODateTime } from 'type-graphql';

/**
 * Byte sizes need more than GraphQL's 32-bit `Int`. `SafeInt` is an integer in ±(2^53 − 1), sent as a JSON number:
 * exact in every JSON client (JavaScript included) and enough for 8 PiB, far above MAX_UPLOAD_BYTES.
 */
export const SafeIntScalar = new GraphQLScalarType<number, number>({
  name: 'SafeInt',
  description: 'An integer from -(2^53-1) to 2^53-1, sent as a JSON number (byte sizes: GraphQL Int is only 32-bit).',
  serialize: (v) => toSafeInt(typeof v === 'bigint' ? Number(v) : v),
  parseValue: (v) => toSafeInt(v),
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.INT) throw new GraphQLError('SafeInt must be an integer');
    return toSafeInt(Number(ast.value));
  },
});

function toSafeInt(v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v))
    throw new GraphQLError(`SafeInt cannot represent ${String(v)}`);
  return v;
}

/** Any JSON value (`userMetadata`, `metadataFilter`); the domain decides which shapes a field accepts. */
export const JSONScalar = new GraphQLScalarType<unknown, unknown>({
  name: 'JSON',
  description: 'Any JSON value; userMetadata must be a JSON object.',
  serialize: (v) => v,
  parseValue: (v) => v,
  parseLiteral: (ast, variables) => literalValue(ast, variables ?? undefined),
});

function literalValue(ast: ValueNode, variables: Record<string, unknown> | undefined): unknown {
  switch (ast.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return ast.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(ast.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return ast.values.map((v) => literalValue(v, variables));
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, literalValue(f.value, variables)]));
    case Kind.VARIABLE:
      return variables?.[ast.name.value];
    default:
      throw new GraphQLError(`JSON cannot represent ${ast.kind}`);
  }
}

/**
 * `Date.prototype.toISOString` for the years 1000–9999, built from the UTC fields: faster than V8's
 * (`node bench/figures/iso-date.cjs`), and a page of 50 assets and their previews formats 150 dates. Other years (and
 * invalid dates, which throw the same RangeError) go to toISOString itself; the unit test compares the two over
 * 0001–9999.
 */
export function isoDateTime(d: Date): string {
  const y = d.getUTCFullYear();
  if (!(y >= 1000 && y <= 9999)) return d.toISOString();
  const ms = d.getUTCMilliseconds();
  return (
    y +
    '-' +
    pad2(d.getUTCMonth() + 1) +
    '-' +
    pad2(d.getUTCDate()) +
    'T' +
    pad2(d.getUTCHours()) +
    ':' +
    pad2(d.getUTCMinutes()) +
    ':' +
    pad2(d.getUTCSeconds()) +
    '.' +
    (ms < 10 ? '00' : ms < 100 ? '0' : '') +
    ms +
    'Z'
  );
}

const pad2 = (n: number): string => (n < 10 ? '0' + n : '' + n);

/**
 * type-graphql's `Date` scalar (graphql-scalars' DateTimeISO: the same name, description, parsing and errors) with a
 * faster serialize for valid dates (isoDateTime); anything else goes to its own serialize.
 */
const iso = GraphQLISODateTime.toConfig();
export const DateTimeISOScalar = new GraphQLScalarType<Date, string>({
  ...iso,
  serialize: (v) => (v instanceof Date && v.getTime() === v.getTime() ? isoDateTime(v) : (iso.serialize(v) as string)),
});
