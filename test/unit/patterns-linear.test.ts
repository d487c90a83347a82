/**
 * Every pattern that request data meets runs in time linear in the input: the TypeBox schemas' (REST bodies, GraphQL
 * inputs; openapi.yaml's are checked by `npm run lint`), the domain's media-type and UUID checks. recheck decides; the
 * media-type pattern of before (exponential on runs of blanks between empty parameters) shows the check can fail.
 */
import fc from 'fast-check';
import { isMediaType, MEDIA_TYPE_SOURCE } from '../../src/domain/input';
import { UUID_PATTERN } from '../../src/domain/assets/validation';
import { GRAPHQL_INPUT_SCHEMAS } from '../../src/http/schema/graphql';
import { REST_BODY_SCHEMAS } from '../../src/http/schema/rest';

const { checkPatterns, patternsOf } = require('../../scripts/check-patterns.cjs') as {
  patternsOf(node: unknown): { where: string; pattern: string }[];
  checkPatterns(entries: { where: string; pattern: string }[]): Promise<{ where: string; status: string }[]>;
};

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED = '"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\t \\x21-\\x7e])*"';
/** The media-type pattern as it was until December 2026: the same language, ambiguous (exponential) matching. */
const BEFORE = `${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*(?:${TOKEN}=(?:${TOKEN}|${QUOTED}))?)*`;

test('the TypeBox schemas of REST bodies and GraphQL inputs have linear patterns only', async () => {
  const entries = [
    ...Object.entries(REST_BODY_SCHEMAS).flatMap(([name, s]) =>
      patternsOf(s).map((e) => ({ ...e, where: `${name} ${e.where}` })),
    ),
    ...[...GRAPHQL_INPUT_SCHEMAS.values()].flatMap((s) => patternsOf(s)),
  ];
  expect(entries.length).toBeGreaterThan(5);
  expect(entries.some((e) => e.pattern.includes(MEDIA_TYPE_SOURCE))).toBe(true);
  expect(await checkPatterns(entries)).toEqual([]);
});

test("the domain's own patterns are linear; the media type's of before is not", async () => {
  const own = [`^${MEDIA_TYPE_SOURCE}$`, `^\\s*${MEDIA_TYPE_SOURCE}\\s*$`, UUID_PATTERN];
  expect(await checkPatterns(own.map((pattern) => ({ where: 'domain', pattern })))).toEqual([]);
  expect(await checkPatterns([{ where: 'before', pattern: `^${BEFORE}$` }])).toEqual([
    expect.objectContaining({ status: 'vulnerable' }),
  ]);
});

test('the media type accepts what it accepted before (every trimmed value)', () => {
  const before = new RegExp(`^${BEFORE}$`);
  // Short texts over the characters that matter, where the old pattern is still fast.
  const chars = fc
    .array(fc.constantFrom('a', 'Z', '/', ';', ' ', '\t', '=', '"', '\\', '\u0001', 'é', ','), { maxLength: 14 })
    .map((cs) => cs.join(''));
  // Most random texts fail at the type; half start with one, so that the parameters are what varies.
  const text = fc
    .oneof(
      chars,
      chars.map((t) => `a/b${t}`),
    )
    .map((s) => s.trim());
  fc.assert(
    fc.property(text, (s) => isMediaType(s) === before.test(s)),
    { numRuns: 20_000 },
  );
  for (const s of ['text/plain', 'text/plain; charset=utf-8', 'a/b ;c="x\\"y"; d=e', 'a/b;', 'a/b; ;c=d'])
    expect([s, isMediaType(s)]).toEqual([s, true]);
  for (const s of ['text', 'a/b;c', 'a/b;c=', 'a/b; c="x', 'a/b c', 'a/b;c=d e'])
    expect([s, isMediaType(s)]).toEqual([s, false]);
});
