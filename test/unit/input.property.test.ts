/**
 * Properties of the input rules (src/domain/input.ts) and the field validators built on them: for any input they
 * either return or throw a DomainError with a 400-class code (never anything else), and they accept exactly what the
 * contract allows. FUZZ_RUNS scales the runs (default 60; e.g. FUZZ_RUNS=10000).
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import fc from 'fast-check';
import { parse } from 'yaml';
import {
  normalizeTags,
  validateCreateFields,
  validateMimeType,
  validateName,
  validateUpdateFields,
  validateUserMetadata,
} from '../../src/domain/assets/validation';
import { DomainError } from '../../src/domain/errors';
import {
  assertJsonInput,
  assertQueryDate,
  isMediaType,
  isStorableText,
  MAX_JSON_DEPTH,
  servableMediaType,
} from '../../src/domain/input';
import { checkDocumentText } from '../../src/http/graphql/limits';
import { FUZZ_RUNS, FUZZ_SEED, hostileJson, hostileObject, hostileText } from '../helpers/hostile';

const OPTS = { numRuns: FUZZ_RUNS, ...FUZZ_SEED };

/** The reference: what the contract forbids in text. */
const wellFormed = (s: string) => (s as unknown as { isWellFormed(): boolean }).isWellFormed();
const storable = (s: string) => !s.includes('\u0000') && wellFormed(s);

/** Depth by the obvious recursion (fine for the small values fast-check makes). */
function depthOf(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  const children = Array.isArray(v) ? v : Object.values(v);
  return 1 + Math.max(0, ...children.map(depthOf));
}
function allText(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (v === null || typeof v !== 'object') return [];
  if (Array.isArray(v)) return v.flatMap(allText);
  return Object.entries(v).flatMap(([k, x]) => [k, ...allText(x)]);
}

/** Runs `fn`; returns 'ok', or the DomainError's code (any other throw fails the property). */
function outcome(fn: () => unknown): string {
  try {
    fn();
    return 'ok';
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return err.code;
  }
}

test('isStorableText: exactly no NUL and no unpaired surrogate', () => {
  fc.assert(
    fc.property(hostileText, (s) => isStorableText(s) === storable(s)),
    OPTS,
  );
  expect(isStorableText('😀 é')).toBe(true);
  expect(isStorableText('\ud83d')).toBe(false);
  expect(isStorableText('\ude00x')).toBe(false);
});

test('assertJsonInput: refuses exactly too deep or unstorable text, keys included', () => {
  fc.assert(
    fc.property(hostileJson, fc.integer({ min: 1, max: 5 }), (v, max) => {
      const expected = depthOf(v) <= max && allText(v).every(storable) ? 'ok' : 'INVALID_BODY';
      return outcome(() => assertJsonInput(v, 'x', 'INVALID_BODY', max)) === expected;
    }),
    OPTS,
  );
});

test('assertJsonInput: 100,000 levels are refused fast, without recursion', () => {
  let deep: unknown = 1;
  for (let i = 0; i < 100_000; i++) deep = i % 2 ? { a: deep } : [deep];
  const started = Date.now();
  expect(outcome(() => assertJsonInput(deep, 'x', 'INVALID_QUERY'))).toBe('INVALID_QUERY');
  expect(Date.now() - started).toBeLessThan(1_000);
  let ok: unknown = 'leaf';
  for (let i = 0; i < MAX_JSON_DEPTH; i++) ok = { a: ok };
  expect(outcome(() => assertJsonInput(ok, 'x'))).toBe('ok');
  expect(outcome(() => assertJsonInput({ a: ok }, 'x'))).toBe('INVALID_BODY');
});

test('isMediaType: anything accepted can be sent as a Content-Type header, and agrees with openapi.yaml', () => {
  const doc = parse(fs.readFileSync(path.join(__dirname, '..', '..', 'openapi.yaml'), 'utf8'));
  const documented = new RegExp(doc.components.schemas.MediaType.pattern);
  const mediaLike = fc.oneof(
    hostileText,
    fc
      .tuple(hostileText, hostileText, fc.array(fc.tuple(hostileText, hostileText), { maxLength: 3 }))
      .map(([t, s, ps]) => `${t}/${s}${ps.map(([k, v]) => `; ${k}=${v}`).join('')}`),
    fc.constantFrom(
      'text/plain; charset="utf-8"',
      'a/b;',
      'a/b; c="\\"q\\""',
      'text/plain; charset=\u0001',
      'image/png\r\nx: y',
    ),
  );
  fc.assert(
    fc.property(mediaLike, (s) => {
      expect(isMediaType(s)).toBe(documented.test(s));
      if (isMediaType(s)) {
        expect(() => http.validateHeaderValue('content-type', s)).not.toThrow();
        expect(s).not.toMatch(/[^\x09\x20-\x7e]/);
      }
      expect(() => http.validateHeaderValue('content-type', servableMediaType(s))).not.toThrow();
    }),
    OPTS,
  );
});

test('assertQueryDate: exactly the years 0001–9999', () => {
  fc.assert(
    fc.property(fc.date(), (d) => {
      const valid =
        !Number.isNaN(d.getTime()) && /^\d{4}-/.test(d.toISOString()) && !d.toISOString().startsWith('0000');
      return outcome(() => assertQueryDate(d, 'd')) === (valid ? 'ok' : 'INVALID_QUERY');
    }),
    OPTS,
  );
});

test('the field validators return or throw a 400/413-class DomainError for any input', () => {
  const codes = new Set(['ok', 'INVALID_BODY', 'PAYLOAD_TOO_LARGE']);
  const anything = fc.oneof(hostileText, hostileJson, hostileObject);
  fc.assert(
    fc.property(anything, (v) => {
      for (const fn of [validateName, normalizeTags, validateMimeType, validateUserMetadata])
        expect(codes).toContain(outcome(() => fn(v)));
    }),
    OPTS,
  );
  fc.assert(
    fc.property(
      fc.dictionary(
        fc.constantFrom('id', 'name', 'mimeType', 'tags', 'userMetadata', 'previewId', 'promptId', 'other'),
        anything,
      ),
      (body) => {
        expect(codes).toContain(outcome(() => validateCreateFields(body)));
        expect(codes).toContain(outcome(() => validateUpdateFields(body)));
      },
    ),
    OPTS,
  );
});

test('names and tags that pass hold only storable text', () => {
  fc.assert(
    fc.property(hostileText, fc.array(hostileText, { maxLength: 10 }), (name, tags) => {
      if (outcome(() => validateName(name)) === 'ok') expect(storable(validateName(name))).toBe(true);
      if (outcome(() => normalizeTags(tags)) === 'ok') expect(normalizeTags(tags).every(storable)).toBe(true);
    }),
    OPTS,
  );
});

test('checkDocumentText: never throws, refuses large or deeply nested documents quickly', () => {
  fc.assert(
    fc.property(hostileText, (s) => {
      const r = checkDocumentText(s);
      return r === undefined || r instanceof DomainError;
    }),
    OPTS,
  );
  const started = Date.now();
  expect(checkDocumentText('{ ' + 'a: __typename '.repeat(150_000) + '}')?.code).toBe('PAYLOAD_TOO_LARGE');
  expect(checkDocumentText('{ a(x: ' + '['.repeat(10_000) + ']'.repeat(10_000) + ') }')?.code).toBe('INVALID_BODY');
  expect(checkDocumentText('{ a(x: "' + '['.repeat(10_000) + '") }')).toBeUndefined();
  expect(checkDocumentText('{ a(x: """' + '{'.repeat(10_000) + '""") } # ' + '('.repeat(500))).toBeUndefined();
  expect(Date.now() - started).toBeLessThan(1_000);
});
