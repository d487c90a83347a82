import { PageCache } from '../../src/http/shared/page-cache';

describe('the list-page cache', () => {
  test('keeps a page the second time its key is asked for, under its version', () => {
    const cache = new PageCache();
    expect(cache.set('k', 'v1', '{"a":1}')).toBe('{"a":1}');
    expect(cache.get('k')).toBeUndefined();
    const kept = cache.set('k', 'v1', '{"a":1}');
    expect(Buffer.isBuffer(kept)).toBe(true);
    expect(cache.get('k')).toEqual({ version: 'v1', body: Buffer.from('{"a":1}') });
  });

  test('remembers asked-for keys by their length, not their number', () => {
    const cache = new PageCache(1024 * 1024, 1024, 4096);
    const long = (i: number) => `${i}`.padEnd(1000, 'x');
    cache.set(long(0), 'v', 'page');
    // Four more keys of 1,000 characters push the first out of the 4,096 remembered.
    for (let i = 1; i <= 4; i++) cache.set(long(i), 'v', 'page');
    expect(typeof cache.set(long(0), 'v', 'page')).toBe('string');
    expect(Buffer.isBuffer(cache.set(long(4), 'v', 'page'))).toBe(true);
  });

  test('holds at most its bytes of pages and keys, least recently used going first', () => {
    const cache = new PageCache(3000, 2000, 1 << 20);
    const body = 'b'.repeat(900);
    for (const k of ['a', 'b', 'c', 'd']) {
      cache.set(k, 'v', body);
      cache.set(k, 'v', body);
    }
    expect(cache.get('a')).toBeUndefined();
    for (const k of ['b', 'c', 'd']) expect(cache.get(k)?.body.length).toBe(900);
  });
});
