import { lruByCount } from '../../src/infra/lru';

describe('lruByCount: an LRU bounded by count, its storage growing with use', () => {
  test('keeps at most `count` entries and drops the least recently used first', () => {
    const c = lruByCount<string, number>(3);
    c.set('a', 1);
    c.set('b', 2);
    c.set('c', 3);
    expect(c.get('a')).toBe(1); // a is now the most recently used
    c.set('d', 4);
    expect(c.has('b')).toBe(false);
    expect([...c.keys()].sort()).toEqual(['a', 'c', 'd']);
    expect(c.size).toBe(3);
    for (let i = 0; i < 100; i++) c.set(`k${i}`, i);
    expect(c.size).toBe(3);
    expect([...c.keys()].sort()).toEqual(['k97', 'k98', 'k99']);
  });

  test('a replaced entry does not count twice, and the options it is given still apply (ttl, dispose)', () => {
    const disposed: string[] = [];
    let t = 1000;
    const c = lruByCount<string, string>(2, {
      ttl: 50,
      ttlResolution: 0,
      perf: { now: () => t },
      dispose: (_v, k, reason) => disposed.push(`${k}:${reason}`),
    });
    c.set('a', 'x');
    c.set('a', 'y');
    c.set('b', 'z');
    expect(c.size).toBe(2);
    expect(c.get('a')).toBe('y');
    t += 51;
    expect(c.get('a')).toBeUndefined();
    expect(disposed).toContain('a:set');
    expect(disposed).toContain('a:expire');
  });

  test('an idle cache of 100,000 entries preallocates nothing: the bound is maxSize, not max', () => {
    // lru-cache preallocates its storage for `max` entries; `max` 0 means its arrays grow with the entries instead.
    const c = lruByCount<string, number>(100_000);
    expect(c.max).toBe(0);
    expect(c.maxSize).toBe(100_000);
    c.set('a', 1);
    expect(c.calculatedSize).toBe(1);
  });
});
