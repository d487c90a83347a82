import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { noteShortLivedBytes, youngGcRuns } from '../../src/infra/young-gc';

/** GC entries reach an observer two event-loop turns after the GC; on a loaded machine a fixed sleep can miss them. */
async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('a young-generation GC runs after every 16 MiB of short-lived buffers', async () => {
  const seen: PerformanceEntry[] = [];
  const obs = new PerformanceObserver((list) => seen.push(...list.getEntries()));
  obs.observe({ entryTypes: ['gc'] });
  try {
    const minors = () =>
      seen.filter((e) => (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR).length;
    noteShortLivedBytes(16 * 1024 * 1024); // crosses the threshold whatever was pending
    expect(youngGcRuns()).toBe(1);
    await until(() => minors() >= 1); // and V8 really ran a scavenge
    // Below the threshold nothing runs; the second half crosses it.
    noteShortLivedBytes(8 * 1024 * 1024);
    expect(youngGcRuns()).toBe(1);
    noteShortLivedBytes(8 * 1024 * 1024);
    expect(youngGcRuns()).toBe(2);
  } finally {
    obs.disconnect();
  }
});
