import { checkCopied, ImportReadError } from '../../src/domain/imports/import-read';
import type { FoundFile } from '../../src/domain/imports/import-walk';

/** The import's judgement of a file copied in one piece: the file the walk saw, unchanged while it was read. */
const state = { size: 10n, mtimeNs: 5n, ctimeNs: 6n, ino: 7n, dev: 8n };
const found = { ino: 7n, dev: 8n } as FoundFile;
const code = (f: () => void): string | undefined => {
  try {
    f();
    return undefined;
  } catch (err) {
    return err instanceof ImportReadError ? err.code : 'other';
  }
};

test('unchanged: accepted', () => {
  expect(code(() => checkCopied(found, state, { ...state }, 10))).toBeUndefined();
});

test.each([
  ['replaced since the walk', { ...found, ino: 9n } as FoundFile, state, 10],
  ['written while read (mtime)', found, { ...state, mtimeNs: 9n }, 10],
  ['its metadata changed (ctime)', found, { ...state, ctimeNs: 9n }, 10],
  ['grew', found, { ...state, size: 11n }, 10],
  ['fewer bytes than its size', found, state, 9],
])('%s: FILE_CHANGED', (_what, f, after, bytes) => {
  expect(code(() => checkCopied(f, state, after, bytes))).toBe('FILE_CHANGED');
});
