import { memberPaths, safeArchivePath } from '../../src/domain/exports/archive-names';

/** Names inside export archives: safe relative paths whatever the asset names, unique. */
describe('safeArchivePath', () => {
  test.each([
    ['../../etc/passwd', 'etc/passwd'],
    ['/abs/model.bin', 'abs/model.bin'],
    ['a\\b.txt', 'a_b.txt'],
    ['..\\..\\win.ini', '.._.._win.ini'],
    ['ctl\u0001name\u007f.bin', 'ctlname.bin'],
    ['new\nline', 'newline'],
    ['./a/./b/../c', 'a/b/c'],
    ['SDXL/base.safetensors', 'SDXL/base.safetensors'],
    ['', 'fallback'],
    ['../..', 'fallback'],
    ['/', 'fallback'],
  ])('%j → %j', (name, expected) => {
    const out = safeArchivePath(name, 'fallback');
    expect(out).toBe(expected);
    expect(out.split('/')).not.toContain('..');
    expect(out.startsWith('/')).toBe(false);
    expect(out).not.toMatch(/[\\\u0000-\u001f\u007f]/);
  });
});

describe('memberPaths', () => {
  const at = new Date('2026-11-22T15:04:05.123Z');
  const job = '11111111-1111-4111-8111-111111111111';
  const a = (id: string, name: string, promptId: string | null = null, createdAt = at) => ({
    id,
    name,
    promptId,
    createdAt,
  });

  test('preserve: duplicates numbered before the extension, case-insensitively', () => {
    expect(
      memberPaths(
        [a('1', 'x.png'), a('2', 'X.png'), a('3', 'x.png'), a('4', 'noext'), a('5', 'noext'), a('6', 'x (2).png')],
        'preserve',
      ),
    ).toEqual(['x.png', 'X (2).png', 'x (3).png', 'noext', 'noext (2)', 'x (2) (2).png']);
  });

  test('asset_id, group_by_job_id, group_by_job_time; assets without a job at the top level', () => {
    const later = new Date(at.getTime() + 60_000);
    const assets = [a('id1', 'dir/out.png', job, later), a('id2', 'out2.png', job, at), a('id3', 'loose.bin')];
    expect(memberPaths(assets, 'asset_id')).toEqual(['id1-dir_out.png', 'id2-out2.png', 'id3-loose.bin']);
    expect(memberPaths(assets, 'group_by_job_id')).toEqual([`${job}/dir/out.png`, `${job}/out2.png`, 'loose.bin']);
    expect(memberPaths(assets, 'group_by_job_time')).toEqual([
      `2026-11-22_15-04-05_${job}/dir/out.png`,
      `2026-11-22_15-04-05_${job}/out2.png`,
      'loose.bin',
    ]);
  });
});

/** Hostile names: the members must extract on Linux, macOS and Windows alike (issue 13's hostile-input pass). */
describe('names that would not extract everywhere', () => {
  test.each([
    ['evil\u202Etxt.exe', 'eviltxt.exe'],
    ['a\u2066b\u2069\u200e\u200f\u061c', 'ab'],
    ['CON', '_CON'],
    ['aux.txt', '_aux.txt'],
    ['dir/Com1.tar.gz', 'dir/_Com1.tar.gz'],
    ['lpt9', '_lpt9'],
    ['nul .txt', '_nul .txt'],
    ['CON.', '_CON'],
    ['console.log', 'console.log'],
    ['...', 'fallback'],
    ['a/.../b', 'a/b'],
    ['trail. ', 'trail'],
    ['dots.../x', 'dots/x'],
    ['win<>:"|?*.txt', 'win_______.txt'],
    ['C:/x', 'C_/x'],
    ['c1\u0085\u009f', 'c1'],
  ])('%j → %j', (name, expected) => {
    expect(safeArchivePath(name, 'fallback')).toBe(expected);
  });

  test('segments are cut to 240 UTF-8 bytes, whole characters, the extension kept', () => {
    for (const name of [
      'x'.repeat(512),
      '🎨'.repeat(128) + '.png',
      'd/' + 'ü'.repeat(300),
      'é'.repeat(200) + '.' + 'e'.repeat(100),
    ]) {
      const out = safeArchivePath(name, 'fallback');
      for (const seg of out.split('/')) expect(Buffer.byteLength(seg)).toBeLessThanOrEqual(240);
      expect(out).not.toContain('\ufffd');
      expect(Buffer.from(out).toString()).toBe(out);
    }
    expect(safeArchivePath('🎨'.repeat(128) + '.png', 'f')).toBe('🎨'.repeat(59) + '.png');
    expect(
      memberPaths(
        [{ id: 'f'.repeat(36), name: 'x'.repeat(512), promptId: null, createdAt: new Date() }],
        'asset_id',
      )[0]!.length,
    ).toBe(240);
  });

  test("a member never takes the path of another member's folder, nor a name equal after NFC", () => {
    const a = (id: string, name: string) => ({ id, name, promptId: null, createdAt: new Date() });
    expect(
      memberPaths(
        [a('1', 'a'), a('2', 'a/b'), a('3', 'A'), a('4', 'é'), a('5', 'e\u0301'), a('6', 'x/y'), a('7', 'X')],
        'preserve',
      ),
    ).toEqual(['a (2)', 'a/b', 'A (3)', 'é', 'e\u0301 (2)', 'x/y', 'X (2)']);
  });

  test('10,000 assets of one name are numbered 1 to 10,000', () => {
    const assets = Array.from({ length: 10_000 }, (_, i) => ({
      id: String(i),
      name: 'same.png',
      promptId: null,
      createdAt: new Date(),
    }));
    const paths = memberPaths(assets, 'preserve');
    expect(new Set(paths).size).toBe(10_000);
    expect(paths[9_999]).toBe('same (10000).png');
  });
});
