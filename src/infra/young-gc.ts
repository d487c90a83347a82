import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * A cheap young-generation GC after every so many bytes of short-lived I/O buffers.
 *
 * Streams hand over their data as one new ArrayBuffer per chunk (a download's socket reads, 64 KiB each). V8 counts
 * those as external memory, and since the few JavaScript objects per chunk barely fill the young generation, it does
 * not scavenge: it frees them with full mark-compacts of the whole heap once external memory has grown by ~64 MB.
 * Measured on a 1 GiB download (BENCHMARKS.md, change 6): ~0.65 s of the request thread plus ~1.7 s of V8's helper
 * threads per GiB. A scavenge (well under 1 ms with this heap) every 16 MiB frees the chunks that died in between,
 * so the full collections are not needed: the same download went from ~330 to ~510 MB/s. Serving content (the
 * disk store's 256 KiB reads, GET /api/assets/{id}/content) has the same pattern: ~780 → ~1800 MiB/s (change 9).
 *
 * `gc` is V8's test hook, exposed here at run time; where that is refused this does nothing.
 */
const EVERY = 16 << 20;

type Gc = (opts: { type: 'minor' }) => void;

let pending = 0;
let collect: Gc | null | undefined;
let runs = 0;

function gcHook(): Gc | null {
  if (collect !== undefined) return collect;
  collect = null;
  if (process.env.ASSET_SERVICE_YOUNG_GC === '0') return collect;
  try {
    const exposed = (globalThis as { gc?: unknown }).gc;
    if (typeof exposed === 'function') return (collect = exposed as Gc);
    v8.setFlagsFromString('--expose-gc');
    const fn = vm.runInNewContext('gc') as unknown;
    if (typeof fn === 'function') collect = fn as Gc;
  } catch {
    collect = null;
  }
  return collect;
}

/** Records `bytes` of chunk buffers that are garbage once written; runs a young-generation GC every 16 MiB of them. */
export function noteShortLivedBytes(bytes: number): void {
  pending += bytes;
  if (pending < EVERY) return;
  pending = 0;
  const gc = gcHook();
  if (!gc) return;
  gc({ type: 'minor' });
  runs++;
}

/** How many young-generation GCs this module has run (for tests and diagnostics). */
export function youngGcRuns(): number {
  return runs;
}
