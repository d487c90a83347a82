import { LRUCache } from 'lru-cache';

/**
 * An LRU cache of at most `count` entries whose storage grows with its use. With `max`, lru-cache preallocates arrays
 * of `max` slots up front, and V8 scans every slot of them in each full collection whether a slot holds an entry or
 * not: an idle service's 100,000-entry caches were a quarter of what each Mark-Compact marks, and an upload starts
 * dozens of those per GiB. Bounding by `maxSize` with a size of 1 per entry keeps the same bound and eviction order
 * without the preallocation (lru-cache's documented options).
 */
export function lruByCount<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(
  count: number,
  options: Omit<LRUCache.Options<K, V, unknown>, 'max' | 'maxSize' | 'sizeCalculation'> = {},
): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize: count, sizeCalculation: () => 1 });
}
