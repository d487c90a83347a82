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
  const a = (id: string, name: string, promptId: string | null = null, createdAt = at) => ({ id, name, promptId, createdAt });

  test('preserve: duplicates numbered before the extension, case-insensitively', () => {
    expect(memberPaths([a('1', 'x.png'), a('2', 'X.png'), a('3', 'x.png'), a('4', 'noext'), a('5', 'noext'), a('6', 'x (2).png')], 'preserve')).toEqual([
      'x.png',
      'X (2).png',
      'x (3).png',
      'noext',
      'noext (2)',
      'x (2) (2).png',
    ]);
  });

  test('asset_id, group_by_job_id, group_by_job_time; assets without a job at the top level', () => {
    const later = new Date(at.getTime() + 60_000);
    const assets = [a('id1', 'dir/out.png', job, later), a('id2', 'out2.png', job, at), a('id3', 'loose.bin')];
    expect(memberPaths(assets, 'asset_id')).toEqual(['id1-dir_out.png', 'id2-out2.png', 'id3-loose.bin']);
    expect(memberPaths(assets, 'group_by_job_id')).toEqual([`${job}/dir/out.png`, `${job}/out2.png`, 'loose.bin']);
    expect(memberPaths(assets, 'group_by_job_time')).toEqual([`2026-11-22_15-04-05_${job}/dir/out.png`, `2026-11-22_15-04-05_${job}/out2.png`, 'loose.bin']);
  });
});
