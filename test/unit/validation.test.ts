import {
  normalizeTags,
  resolveTagFilter,
  sanitizeFileName,
  validateCreateFields,
  validateUpdateFields,
  validateUserMetadata,
} from '../../src/domain/assets/validation';
import { DomainError } from '../../src/domain/errors';
import { parseHash } from '../../src/domain/content/hashing';
import { detectMime, isActiveContent, sniffMime } from '../../src/domain/content/mime';
import { parseRange } from '../../src/http/rest/content.router';
import { contentDisposition } from '../../src/infra/content-disposition';
import { parseTagsField } from '../../src/http/shared/asset-input';

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as DomainError).code;
  }
  return 'OK';
};

test('tags: trimmed, case kept, empty dropped, exact duplicates removed, first-seen order', () => {
  expect(normalizeTags([' Models', 'loras', 'MODELS', '', '  ', 'b', 'a', 'Models'])).toEqual([
    'Models',
    'loras',
    'MODELS',
    'b',
    'a',
  ]);
  expect(code(() => normalizeTags('a'))).toBe('INVALID_BODY');
  expect(code(() => normalizeTags([1]))).toBe('INVALID_BODY');
  expect(code(() => normalizeTags(Array.from({ length: 65 }, (_, i) => String(i))))).toBe('INVALID_BODY');
  expect(normalizeTags(Array.from({ length: 64 }, (_, i) => String(i)))).toHaveLength(64);
  expect(code(() => normalizeTags(['x'.repeat(129)]))).toBe('INVALID_BODY');
  // Filters (REST include_tags etc., GraphQL's AssetFilter): the same normalisation, no limits (no asset carries a too-long tag).
  const all = (values: string[]) =>
    resolveTagFilter({ all: [{ name: 'tags_all', values, isNew: true }], any: [], none: [] }).includeTags;
  expect(all([' Models', 'loras', 'MODELS', '', '  ', 'x'.repeat(200), 'loras'])).toEqual([
    'Models',
    'loras',
    'MODELS',
    'x'.repeat(200),
  ]);
});

test('user_metadata must be an object of at most 256 KiB', () => {
  expect(validateUserMetadata({ a: [1, { b: null }] })).toEqual({ a: [1, { b: null }] });
  expect(code(() => validateUserMetadata([]))).toBe('INVALID_BODY');
  expect(code(() => validateUserMetadata(null))).toBe('INVALID_BODY');
  expect(code(() => validateUserMetadata({ s: 'x'.repeat(256 * 1024) }))).toBe('PAYLOAD_TOO_LARGE');
  expect(code(() => validateUserMetadata({ s: 'a\u0000b' }))).toBe('INVALID_BODY');
});

test('create and update fields', () => {
  expect(validateCreateFields({ name: ' n ', mimeType: 'Image/PNG', tags: ['A'] })).toEqual({
    name: 'n',
    mimeType: 'image/png',
    tags: ['A'],
  });
  expect(code(() => validateUpdateFields({}))).toBe('INVALID_BODY');
  expect(code(() => validateUpdateFields({ other: 1 } as object))).toBe('INVALID_BODY');
  expect(validateUpdateFields({ previewId: null })).toEqual({ previewId: null });
  expect(code(() => validateCreateFields({ id: 'x' }))).toBe('INVALID_BODY');
});

test('hash parsing', () => {
  expect(parseHash('blake3:' + 'a'.repeat(64))).toEqual({ algorithm: 'blake3', hex: 'a'.repeat(64) });
  expect(parseHash('sha256:' + '0'.repeat(64))).toEqual({ algorithm: 'sha256', hex: '0'.repeat(64) });
  for (const bad of ['blake3:' + 'A'.repeat(64), 'blake3:' + 'a'.repeat(63), 'md5:' + 'a'.repeat(64), 5, undefined])
    expect(parseHash(bad)).toBeUndefined();
});

test('MIME sniffing by magic bytes, then extension', () => {
  expect(sniffMime(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]))).toBe('image/png');
  expect(sniffMime(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBe('image/jpeg');
  expect(sniffMime(Buffer.from('RIFF\0\0\0\0WEBPVP8 '))).toBe('image/webp');
  expect(sniffMime(Buffer.from('\0\0\0\x18ftypisom'))).toBe('video/mp4');
  expect(sniffMime(Buffer.from('GGUF\x03\0\0\0'))).toBe('application/x-gguf');
  const header = Buffer.from('{"__metadata__":{}}');
  const st = Buffer.alloc(8 + header.length);
  st.writeBigUInt64LE(BigInt(header.length));
  header.copy(st, 8);
  expect(sniffMime(st)).toBe('application/x-safetensors');
  expect(detectMime(Buffer.from('plain words'), 'a.txt')).toBe('text/plain');
  expect(detectMime(Buffer.from('plain words'), 'noext')).toBe('application/octet-stream');
  expect(isActiveContent('text/html; charset=utf-8')).toBe(true);
  expect(isActiveContent('image/svg+xml')).toBe(true);
  expect(isActiveContent('image/png')).toBe(false);
});

test('byte ranges', () => {
  expect(parseRange(undefined, 10)).toBeUndefined();
  expect(parseRange('bytes=0-4', 10)).toEqual({ start: 0, end: 4 });
  expect(parseRange('bytes=5-', 10)).toEqual({ start: 5, end: 9 });
  expect(parseRange('bytes=-3', 10)).toEqual({ start: 7, end: 9 });
  expect(parseRange('bytes=-30', 10)).toEqual({ start: 0, end: 9 });
  expect(parseRange('bytes=8-100', 10)).toEqual({ start: 8, end: 9 });
  expect(parseRange('bytes=10-', 10)).toBe('unsatisfiable');
  expect(parseRange('bytes=0-0', 0)).toBe('unsatisfiable');
  expect(parseRange('bytes=5-2', 10)).toBeUndefined();
  expect(parseRange('bytes=0-1,3-4', 10)).toBeUndefined();
  expect(parseRange('items=0-1', 10)).toBeUndefined();
});

test('file names and Content-Disposition', () => {
  expect(sanitizeFileName('C:\\Users\\me\\model.ckpt')).toBe('model.ckpt');
  expect(sanitizeFileName('../../etc/passwd')).toBe('passwd');
  expect(sanitizeFileName('..')).toBeUndefined();
  expect(sanitizeFileName('a\u0001b')).toBe('ab');
  expect(contentDisposition('attachment', 'a"b\r\nc.html')).toBe(
    `attachment; filename="a_b__c.html"; filename*=UTF-8''a%22b%0D%0Ac.html`,
  );
  expect(contentDisposition('inline', "it's (1).png")).toBe(
    `inline; filename="it's (1).png"; filename*=UTF-8''it%27s%20%281%29.png`,
  );
});

test('tags form field encodings', () => {
  expect(parseTagsField(['["a","b"]'])).toEqual(['a', 'b']);
  expect(parseTagsField(['a,b', 'c'])).toEqual(['a', 'b', 'c']);
  expect(parseTagsField(undefined)).toBeUndefined();
  expect(code(() => parseTagsField(['[oops']))).toBe('INVALID_BODY');
  expect(code(() => parseTagsField(['{"a":1}']))).toBe('OK');
});
