import { validateOrReject, type ValidationError } from 'class-validator';
import { ArgumentValidationError, type ValidatorFn } from 'type-graphql';
import { MAX_CURSOR_LENGTH } from '../../domain/assets/cursor';
import { MAX_RAW_FILTER_TAGS } from '../../domain/assets/validation';
import type { AssetFilter, AssetsArgs, TagCountsArgs, TagsArgs } from './inputs/asset.inputs';

/**
 * Argument validation for the query ArgsTypes whose class-validator checks are plain ranges and lengths: a check in
 * code that accepts only what their decorators accept, and class-validator itself for anything else, so every
 * refusal is class-validator's own (the same ArgumentValidationError, the same INVALID_BODY problems). The query
 * arguments of a normal request (a limit, an offset, a few tags) never reach class-validator, a large share of a
 * GraphQL request's CPU (`npm run bench -- graphql`). test/unit/args-check.test.ts holds each check to its class's
 * decorators.
 */
export function validatedBy<T>(plainlyValid: (args: T) => boolean): ValidatorFn {
  return (args: T) => (plainlyValid(args) ? undefined : byClassValidator(args as object));
}

/** What type-graphql's `validate: true` runs (resolvers/validate-arg.js): the same options, the same error. */
export async function byClassValidator(value: object): Promise<void> {
  try {
    await validateOrReject(value, { skipMissingProperties: true, forbidUnknownValues: false });
  } catch (err) {
    throw new ArgumentValidationError(err as ValidationError[]);
  }
}

/** `@Min(min) @Max(max)` (missing properties are skipped). */
const inRange = (v: unknown, min: number, max: number): boolean =>
  v == null || (typeof v === 'number' && v >= min && v <= max);

/**
 * `@MaxLength(max)`: class-validator counts a surrogate pair as one character, so a string no longer than `max` in
 * UTF-16 units passes (longer ones are class-validator's to judge).
 */
const short = (v: unknown, max: number): boolean => v == null || (typeof v === 'string' && v.length <= max);

/** `@ArrayMaxSize(maxItems) @MaxLength(maxLength, { each: true })`. */
const shortList = (v: unknown, maxItems: number, maxLength: number): boolean =>
  v == null ||
  (Array.isArray(v) && v.length <= maxItems && v.every((s) => typeof s === 'string' && s.length <= maxLength));

/** AssetFilter's decorators (`@ValidateNested()` on an args' `filter`). */
function plainFilter(f: AssetFilter | null | undefined): boolean {
  if (f == null) return true;
  return (
    typeof f === 'object' &&
    shortList(f.includeTags, MAX_RAW_FILTER_TAGS, 4096) &&
    shortList(f.excludeTags, MAX_RAW_FILTER_TAGS, 4096) &&
    shortList(f.anyTags, MAX_RAW_FILTER_TAGS, 4096) &&
    shortList(f.tagsAll, MAX_RAW_FILTER_TAGS, 4096) &&
    shortList(f.tagsAny, MAX_RAW_FILTER_TAGS, 4096) &&
    shortList(f.tagsNone, MAX_RAW_FILTER_TAGS, 4096) &&
    short(f.nameContains, 1024) &&
    short(f.hash, 80)
  );
}

export const plainAssetsArgs = (a: AssetsArgs): boolean =>
  inRange(a.limit, 1, 500) &&
  inRange(a.offset, 0, 1_000_000_000) &&
  short(a.after, MAX_CURSOR_LENGTH) &&
  plainFilter(a.filter);

export const plainTagCountsArgs = (a: TagCountsArgs): boolean => inRange(a.limit, 1, 1000) && plainFilter(a.filter);

export const plainTagsArgs = (a: TagsArgs): boolean =>
  short(a.prefix, 1024) && inRange(a.limit, 1, 1000) && inRange(a.offset, 0, 1_000_000_000);
