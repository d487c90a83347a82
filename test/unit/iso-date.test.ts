import { GraphQLISODateTime } from 'type-graphql';
import { DateTimeISOScalar, isoDateTime } from '../../src/http/graphql/scalars';

// isoDateTime must be Date.prototype.toISOString, character for character, and the Date scalar the library's.
describe('isoDateTime', () => {
  const MIN = Date.UTC(1, 0, 1) - 86_400_000 * 366; // before 0001-01-01
  const MAX = Date.UTC(10_000, 11, 31); // after 9999-12-31

  it('formats every date as toISOString does (random instants of the years 0000–10000, and the edges)', () => {
    const edges = [
      0,
      -1,
      1,
      999,
      Date.UTC(999, 11, 31, 23, 59, 59, 999),
      Date.UTC(1000, 0, 1),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
      Date.UTC(10_000, 0, 1),
    ];
    const dates = edges.map((t) => new Date(t));
    for (let i = 0; i < 200_000; i++) dates.push(new Date(MIN + Math.floor(Math.random() * (MAX - MIN))));
    for (let ms = 0; ms < 1000; ms++) dates.push(new Date(Date.UTC(2026, 10, 22, 9, 5, 7, ms)));
    const wrong = dates.filter((d) => isoDateTime(d) !== d.toISOString());
    expect(wrong).toEqual([]);
  });

  it('throws toISOString’s RangeError for an invalid date', () => {
    expect(() => isoDateTime(new Date(NaN))).toThrow(RangeError);
  });
});

describe('DateTimeISOScalar', () => {
  it('is type-graphql’s Date scalar: same name, description, and answers for every kind of value', () => {
    expect(DateTimeISOScalar.name).toBe(GraphQLISODateTime.name);
    expect(DateTimeISOScalar.description).toBe(GraphQLISODateTime.description);
    expect(DateTimeISOScalar.specifiedByURL).toBe(GraphQLISODateTime.specifiedByURL);
    const values: unknown[] = [
      new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)),
      new Date(-62_135_596_800_000),
      '2026-01-02T03:04:05.006Z',
      1_700_000_000_000,
      new Date(NaN),
      'nope',
      true,
      null,
      {},
    ];
    for (const v of values) {
      let mine: unknown;
      let theirs: unknown;
      try {
        mine = DateTimeISOScalar.serialize(v);
      } catch (e) {
        mine = `error: ${(e as Error).message}`;
      }
      try {
        theirs = GraphQLISODateTime.serialize(v);
      } catch (e) {
        theirs = `error: ${(e as Error).message}`;
      }
      expect(mine).toEqual(theirs);
    }
    expect(DateTimeISOScalar.parseValue('2026-01-02T03:04:05.006Z')).toEqual(
      GraphQLISODateTime.parseValue('2026-01-02T03:04:05.006Z'),
    );
  });
});
