/**
 * `totalFromCounts`: a listing's total from the maintained counts (owner total, tag counts) must be what the counting
 * statement would say (the count stopped at COUNT_LIMIT + 1), or undefined (then the rows are counted). Checked
 * against a brute-force count over random owners whose tag frequencies straddle COUNT_LIMIT.
 */
import { COUNT_LIMIT, totalFromCounts, type OwnerStats } from '../../src/domain/assets/listing-sql';
import type { AssetFilter } from '../../src/domain/assets/asset.types';
import { CountCache } from '../../src/domain/assets/count-cache';

/** A deterministic generator (mulberry32), so a failure replays. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TAGS = ['a', 'b', 'c', 'd'];

test('maintained counts give the stopped count exactly, or nothing, for random tag filters', () => {
  const random = rng(12);
  let decided = 0;
  let undecided = 0;
  for (let owner = 0; owner < 40; owner++) {
    const n = Math.floor(random() * 24_000);
    // Each tag on a fraction of the assets: some nearly all, some few.
    const p = TAGS.map(() => [0.999, 0.97, 0.6, 0.3, 0.01][Math.floor(random() * 5)]!);
    const assets = Array.from({ length: n }, () => new Set(TAGS.filter((_, i) => random() < p[i]!)));
    const count = (t: string) => assets.filter((s) => s.has(t)).length;
    const counts = Object.fromEntries(TAGS.map((t) => [t, count(t)]));
    for (let q = 0; q < 30; q++) {
      const pick = () => TAGS.filter(() => random() < 0.35);
      const f: AssetFilter = { includeTags: pick(), anyTags: pick(), excludeTags: pick() };
      const truth = assets.filter(
        (s) =>
          f.includeTags.every((t) => s.has(t)) &&
          (f.anyTags!.length === 0 || f.anyTags!.some((t) => s.has(t))) &&
          !f.excludeTags.some((t) => s.has(t)),
      ).length;
      const stats: OwnerStats = {
        total: n,
        version: '1',
        include: f.includeTags.map((t) => counts[t]!),
        any: f.anyTags!.map((t) => counts[t]!),
        exclude: f.excludeTags.map((t) => counts[t]!),
      };
      const got = totalFromCounts(stats, f);
      if (got === undefined) undecided++;
      else {
        decided++;
        expect({ f, n, got }).toEqual({ f, n, got: Math.min(truth, COUNT_LIMIT + 1) });
      }
    }
  }
  // Both paths are exercised.
  expect(decided).toBeGreaterThan(50);
  expect(undecided).toBeGreaterThan(50);
});

test('no filter, one include tag, one exclude tag, one tags_any tag: exact; other filters: counted', () => {
  const s = (over: Partial<OwnerStats>): OwnerStats => ({
    total: 500,
    version: '1',
    include: [],
    any: [],
    exclude: [],
    ...over,
  });
  const f = (over: Partial<AssetFilter>): AssetFilter => ({ includeTags: [], excludeTags: [], ...over });
  expect(totalFromCounts(s({}), f({}))).toBe(500);
  expect(totalFromCounts(s({ total: 2_000_000 }), f({}))).toBe(COUNT_LIMIT + 1);
  expect(totalFromCounts(s({ include: [7] }), f({ includeTags: ['x'] }))).toBe(7);
  expect(totalFromCounts(s({ exclude: [7] }), f({ excludeTags: ['x'] }))).toBe(493);
  expect(totalFromCounts(s({ any: [7] }), f({ anyTags: ['x'] }))).toBe(7);
  expect(totalFromCounts(s({ any: [7, 9] }), f({ anyTags: ['x', 'y'] }))).toBeUndefined();
  expect(totalFromCounts(s({ include: [300, 300] }), f({ includeTags: ['x', 'y'] }))).toBeUndefined();
  // The benchmark's case: every asset tagged models, 200,000 of 1,000,000 also loras.
  expect(
    totalFromCounts(s({ total: 1_000_000, include: [1_000_000, 200_000] }), f({ includeTags: ['models', 'loras'] })),
  ).toBe(COUNT_LIMIT + 1);
  expect(totalFromCounts(s({ total: 1_000_000 }), f({ nameContains: 'x' }))).toBeUndefined();
  expect(
    totalFromCounts(s({ total: 1_000_000, include: [1_000_000] }), f({ includeTags: ['m'], metadataFilter: { k: 1 } })),
  ).toBeUndefined();
});

test('CountCache: a value is served only under the version it was stored with; least recently used go first', () => {
  const c = new CountCache<number>(2);
  c.set('a', '1', 10);
  expect(c.get('a', '1')).toBe(10);
  expect(c.get('a', '2')).toBeUndefined();
  // The stale entry is gone, even for its own version.
  expect(c.get('a', '1')).toBeUndefined();
  c.set('a', '1', 10);
  c.set('b', '1', 20);
  c.get('a', '1');
  c.set('c', '1', 30);
  expect([c.get('a', '1'), c.get('b', '1'), c.get('c', '1')]).toEqual([10, undefined, 30]);
});
