import type { RefObject } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/**
 * Infinite scroll for the grid and the list: `onMore` when `sentinel` (an element after the last item) comes within
 * a screen of `scrollRoot`'s view, while there is more to load. Returns the ref to put on the sentinel.
 */
export function useInfiniteScroll(
  onMore: () => void,
  hasMore: boolean,
  count: number,
  scrollRoot: RefObject<HTMLElement | null>,
): RefObject<HTMLDivElement | null> {
  const sentinel = useRef<HTMLDivElement>(null);
  const more = useRef(onMore);
  more.current = onMore;
  useEffect(() => {
    if (!sentinel.current || !hasMore) return;
    const io = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && more.current(), {
      root: scrollRoot.current,
      rootMargin: '0px 0px 400px 0px',
    });
    io.observe(sentinel.current);
    return () => io.disconnect();
  }, [hasMore, count]);
  return sentinel;
}
