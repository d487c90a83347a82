/**
 * The query arguments' checks in code (src/http/graphql/args-check.ts) accept only what class-validator accepts
 * (anything they do not accept goes to class-validator, so refusals stay class-validator's): for any arguments near
 * the decorators' bounds, `plain` ⇒ class-validator passes. Values are built as type-graphql builds them (instances
 * of the ArgsType with an AssetFilter instance inside).
 */
import fc from 'fast-check';
import {
  byClassValidator,
  plainAssetsArgs,
  plainTagCountsArgs,
  plainTagsArgs,
  validatedBy,
} from '../../src/http/graphql/args-check';
import { AssetFilter, AssetsArgs, TagCountsArgs, TagsArgs } from '../../src/http/graphql/inputs/asset.inputs';

const RUNS = { numRuns: 3000 };

const passes = async (v: object) =>
  byClassValidator(v).then(
    () => true,
    () => false,
  );

/** Strings around a length bound, some with surrogate pairs (which class-validator counts as one character). */
const text = (max: number) =>
  fc.oneof(
    fc.constant(null),
    fc.constant(undefined),
    fc.integer({ min: Math.max(0, max - 3), max: max + 3 }).map((n) => 'x'.repeat(n)),
    fc.integer({ min: Math.max(0, max - 3), max: max + 3 }).map((n) => '😀'.repeat(Math.ceil(n / 2)).slice(0, n)),
    fc.string({ maxLength: 8 }),
  );
const list = (maxItems: number, max: number) =>
  fc.oneof(
    fc.constant(null),
    fc.constant(undefined),
    fc.array(fc.oneof(text(max), fc.string({ maxLength: 4 })), { maxLength: 3 }),
    fc.integer({ min: maxItems - 1, max: maxItems + 1 }).map((n) => Array.from({ length: n }, () => 'tag')),
  );
const int = (min: number, max: number) =>
  fc.oneof(
    fc.integer({ min: min - 2, max: min + 2 }),
    fc.integer({ min: max - 2, max: max + 2 }),
    fc.integer(),
    fc.constant(null),
  );
const filter = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc
    .record({
      includeTags: list(1000, 4096),
      excludeTags: list(1000, 4096),
      anyTags: list(1000, 4096),
      tagsAll: list(1000, 4096),
      tagsAny: list(1000, 4096),
      tagsNone: list(1000, 4096),
      nameContains: text(1024),
      hash: text(80),
      metadataFilter: fc.jsonValue(),
    })
    .map((f) => Object.assign(new AssetFilter(), f)),
);

describe('query argument checks in code', () => {
  it('AssetsArgs: accepted in code ⇒ accepted by class-validator', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ filter, limit: int(1, 500), offset: int(0, 1_000_000_000), after: text(2048) }),
        async (a) => {
          const args = Object.assign(new AssetsArgs(), a);
          if (plainAssetsArgs(args)) expect(await passes(args)).toBe(true);
        },
      ),
      RUNS,
    );
  });

  it('TagCountsArgs and TagsArgs: accepted in code ⇒ accepted by class-validator', async () => {
    await fc.assert(
      fc.asyncProperty(fc.record({ filter, limit: int(1, 1000) }), async (a) => {
        const args = Object.assign(new TagCountsArgs(), a);
        if (plainTagCountsArgs(args)) expect(await passes(args)).toBe(true);
      }),
      RUNS,
    );
    await fc.assert(
      fc.asyncProperty(
        fc.record({ prefix: text(1024), limit: int(1, 1000), offset: int(0, 1_000_000_000) }),
        async (a) => {
          const args = Object.assign(new TagsArgs(), a);
          if (plainTagsArgs(args)) expect(await passes(args)).toBe(true);
        },
      ),
      RUNS,
    );
  });

  it('the usual arguments are accepted in code; anything else gets class-validator’s own refusal', async () => {
    expect(plainAssetsArgs(Object.assign(new AssetsArgs(), { limit: 50, offset: 0 }))).toBe(true);
    const filtered = Object.assign(new AssetsArgs(), {
      limit: 60,
      offset: 0,
      filter: Object.assign(new AssetFilter(), { includeTags: ['models', 'loras'], nameContains: 'x' }),
    });
    expect(plainAssetsArgs(filtered)).toBe(true);
    const bad = Object.assign(new AssetsArgs(), { limit: 501, offset: 0 });
    expect(plainAssetsArgs(bad)).toBe(false);
    const check = validatedBy(plainAssetsArgs) as (v: unknown) => Promise<void> | void;
    const err = await Promise.resolve()
      .then(() => check(bad))
      .then(
        () => undefined,
        (e: unknown) =>
          e as {
            name: string;
            extensions: {
              code: string;
              validationErrors: Array<{ property: string; constraints: Record<string, string> }>;
            };
          },
      );
    expect(err?.extensions.code).toBe('BAD_USER_INPUT');
    expect(err?.extensions.validationErrors.map((e) => [e.property, e.constraints])).toEqual([
      ['limit', { max: 'limit must not be greater than 500' }],
    ]);
  });
});
