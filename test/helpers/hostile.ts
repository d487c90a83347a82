import fc from 'fast-check';

/**
 * fast-check arbitraries of hostile input (for properties that must hold for any input): text with NUL, unpaired
 * surrogates, control characters and separators, sometimes very long; JSON values deep, wide and with odd keys; numbers
 * and dates out of every range. Shared by the unit properties of the validators and the HTTP properties.
 */

/** Runs per property: a bounded number in CI, more with FUZZ_RUNS (e.g. FUZZ_RUNS=10000). */
export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS) > 0 ? Number(process.env.FUZZ_RUNS) : 60;
/** FUZZ_SEED replays the runs of a failure's `seed` (fast-check prints it). */
export const FUZZ_SEED: { seed?: number } = Number(process.env.FUZZ_SEED)
  ? { seed: Number(process.env.FUZZ_SEED) }
  : {};

/** What PostgreSQL or a header cannot take, weighted up; then separators, escapes and other odd characters. */
const special = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '\u0001',
      '\u001f',
      '\u007f',
      '\u0085',
      '\u2028',
      '\ufeff',
      '\ufffd',
      ',',
      ';',
      '%',
      '"',
      "'",
      '\\',
      '/',
      '{',
      '}',
      '[',
      ']',
      '\r\n',
      '\t',
      ' ',
      '..',
      '%00',
      '\\u0000',
      '😀',
      'é',
    ),
  },
);

/** One UTF-16 code unit of any value (lone surrogates included), a special one, or a grapheme. */
const unit = fc.oneof(
  { weight: 3, arbitrary: special },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)) },
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
);

const plain = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-_. '), maxLength: 16 });

/**
 * Ordinary-looking text with 0–2 hostile units inserted: it passes every other check, so what reaches the database
 * or a header is exactly the hostile unit (fully random text is mostly refused for some other reason first).
 */
export const plausibleText: fc.Arbitrary<string> = fc
  .tuple(plain, fc.array(fc.tuple(fc.nat(), special), { maxLength: 2 }))
  .map(([text, inserts]) =>
    inserts.reduce((t, [at, u]) => t.slice(0, at % (t.length + 1)) + u + t.slice(at % (t.length + 1)), text),
  );

export const hostileText: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: plausibleText },
  { weight: 4, arbitrary: fc.string({ unit, maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit, minLength: 600, maxLength: 3000 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'models', 'a,b', 'image/png', 'text/plain; charset=utf-8') },
);

/** Usually a valid value, sometimes a hostile one of the same type, rarely any JSON at all. */
export const mostly = <T>(
  valid: fc.Arbitrary<T>,
  hostile: fc.Arbitrary<unknown> = hostileText,
): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 5, arbitrary: valid }, { weight: 4, arbitrary: hostile }, { weight: 1, arbitrary: hostileJson });

/** JSON text nested `depth` levels, as text (JSON.stringify would recurse). */
export const deepJsonText = (depth: number, open = '{"a":', close = '}') =>
  open.repeat(depth) + '1' + close.repeat(depth);

export const hostileNumber: fc.Arbitrary<number | string> = fc.oneof(
  fc.integer({ min: 0, max: 100 }),
  fc.integer(),
  fc.double(),
  fc.constantFrom(-1, 0, 1, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308),
  fc.constantFrom('1e400', '-0', '0x10', '1.5', '', ' 1', '+1', '01', '9'.repeat(40), 'NaN', 'Infinity'),
);

const EDGE_DATES = [
  '-271821-04-20T00:00:00Z',
  '+275760-09-13T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '+010000-01-01T00:00:00Z',
  '2024-02-30',
  'yesterday',
];
export const hostileDate: fc.Arbitrary<string> = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom(...EDGE_DATES),
  hostileText,
);

/** Any JSON value with hostile strings and keys, up to a few levels; `hostileJsonText` adds very deep ones. */
export const hostileJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileText,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 6 }),
    fc.dictionary(hostileText, tie('value'), { maxKeys: 6 }),
  ),
})).value;

export const hostileObject: fc.Arbitrary<Record<string, unknown>> = fc.dictionary(hostileText, hostileJson, {
  maxKeys: 6,
});

/** JSON text: a hostile value, an object, or one nested 1–12,000 levels (objects or arrays). */
export const hostileJsonText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: hostileObject.map((v) => JSON.stringify(v)) },
  { weight: 2, arbitrary: hostileJson.map((v) => JSON.stringify(v) ?? 'null') },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 12_000 }).map((n) => deepJsonText(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 60, max: 70 }).map((n) => deepJsonText(n, '[', ']')) },
  { weight: 1, arbitrary: hostileText },
);

/** Raw bytes percent-encoded: NUL, invalid UTF-8 (encoded surrogates), anything a query string can carry. */
export const percentEncodedBytes: fc.Arbitrary<string> = fc
  .uint8Array({ maxLength: 24 })
  .map((bytes) => [...bytes].map((b) => '%' + b.toString(16).padStart(2, '0')).join(''));
