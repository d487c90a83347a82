import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { noteShortLivedBytes } from '../../src/infra/young-gc';

test('a young-generation GC runs after every 16 MiB of short-lived buffers', async () => {
  const seen: PerformanceEntry[] = [];
  const obs = new PerformanceObserver((list) => seen.push(...list.getEntries()));
  obs.observe({ entryTypes: ['gc'] });
  const minors = () => seen.filter((e) => (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR).length;
  noteShortLivedBytes(16 * 1024 * 1024); // whatever earlier calls left pending, this crosses the threshold
  await new Promise((r) => setTimeout(r, 50));
  const before = minors();
  expect(before).toBeGreaterThanOrEqual(1);
  // Two halves make the next one (V8 may also scavenge on its own in between: at least one more).
  noteShortLivedBytes(8 * 1024 * 1024);
  noteShortLivedBytes(8 * 1024 * 1024);
  await new Promise((r) => setTimeout(r, 50));
  expect(minors()).toBeGreaterThanOrEqual(before + 1);
  obs.disconnect();
});
