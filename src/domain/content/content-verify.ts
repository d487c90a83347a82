import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import type { BlobStore } from '../../infra/blob-store/blob-store';
import { blake3 } from '../../infra/blake3';
import type { ContentRepository } from './content.repository';

/** Hashes listed per finding in a report; the counts are always whole. */
export const LISTED_PER_FINDING = 1_000;

/** A blob without row younger than this may be an upload between its copy and its commit: not a finding. */
const ORPHAN_MIN_AGE_MS = 3600 * 1000;

export interface VerifyOptions {
  /** Rows whose blob is re-read and hashed: a random sample of this many, or every one. */
  sample: number | 'all';
  now?: () => number;
}

/** What `verifyContent` found: counts, and up to LISTED_PER_FINDING hashes of each finding. */
export interface VerifyReport {
  rows: number;
  storedBlobs: number;
  quarantinedBlobs: number;
  /** Rows whose blob is neither in its place nor in the quarantine: bytes lost. */
  missing: Finding<string>;
  /** Rows whose blob is only in the quarantine: put back by the first read or the next sweep. */
  toRestore: Finding<string>;
  /** Stored blobs no row names, older than an hour: the daily sweep moves them aside. */
  orphans: Finding<string>;
  /** Stored blobs whose size differs from their row's. */
  wrongSize: Finding<{ blake3: string; expected: number; stored: number }>;
  /** Blobs re-read, and those whose BLAKE3 or size differed from their row. */
  reread: number;
  corrupt: Finding<{ blake3: string; problem: string }>;
  consistent: boolean;
}

export interface Finding<T> {
  count: number;
  items: T[];
}

/**
 * Compares the content rows with the blob store, and re-reads a sample of blobs (BLAKE3 and size), changing nothing:
 * it reads the store itself (whose reads never touch the quarantine) and the database is only read. The store's listing is
 * held in memory (about 100 bytes per blob); the rows are walked in key order, a page at a time.
 */
export async function verifyContent(
  repo: ContentRepository,
  blobs: BlobStore,
  opts: VerifyOptions,
): Promise<VerifyReport> {
  const now = (opts.now ?? Date.now)();
  const stored = new Map<string, { size: number; lastModified: number }>();
  for await (const b of blobs.listStored()) stored.set(b.blake3, { size: b.size, lastModified: b.lastModified });
  const quarantined = new Set<string>();
  let quarantinedBlobs = 0;
  for await (const q of blobs.listQuarantined()) {
    quarantined.add(q.blake3);
    quarantinedBlobs++;
  }
  const report: VerifyReport = {
    rows: 0,
    storedBlobs: stored.size,
    quarantinedBlobs,
    missing: finding(),
    toRestore: finding(),
    orphans: finding(),
    wrongSize: finding(),
    reread: 0,
    corrupt: finding(),
    consistent: false,
  };
  const sample = new Reservoir<{ blake3: string; size: number }>(opts.sample);
  for (let after = ''; ;) {
    const page = await repo.page(after, 1_000);
    if (page.length === 0) break;
    after = page[page.length - 1]!.blake3;
    for (const row of page) {
      report.rows++;
      const blob = stored.get(row.blake3);
      if (blob) {
        stored.delete(row.blake3); // what is left once every row was seen: the blobs no row names
        if (blob.size !== row.size)
          add(report.wrongSize, { blake3: row.blake3, expected: row.size, stored: blob.size });
        else sample.offer(row);
      } else if (quarantined.has(row.blake3)) add(report.toRestore, row.blake3);
      else add(report.missing, row.blake3);
    }
  }
  for (const [hex, blob] of stored) if (blob.lastModified < now - ORPHAN_MIN_AGE_MS) add(report.orphans, hex);
  for (const row of sample.items()) {
    const problem = await reread(blobs, row);
    report.reread++;
    if (problem) add(report.corrupt, { blake3: row.blake3, problem });
  }
  report.consistent = [report.missing, report.toRestore, report.orphans, report.wrongSize, report.corrupt].every(
    (f) => f.count === 0,
  );
  return report;
}

/** What is wrong with the stored bytes of `row`, or undefined when their BLAKE3 and size are the row's. */
async function reread(blobs: BlobStore, row: { blake3: string; size: number }): Promise<string | undefined> {
  let stream: Readable;
  try {
    stream = await blobs.read(row.blake3);
  } catch (err) {
    return `unreadable: ${(err as Error).message}`;
  }
  const hasher = blake3().create();
  let size = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      hasher.update(chunk);
      size += chunk.length;
    }
  } catch (err) {
    return `read failed: ${(err as Error).message}`;
  }
  if (size !== row.size) return `${size} bytes, the row says ${row.size}`;
  const hex = hasher.hex();
  return hex === row.blake3 ? undefined : `BLAKE3 of the bytes is ${hex}`;
}

const finding = <T>(): Finding<T> => ({ count: 0, items: [] });
function add<T>(f: Finding<T>, item: T): void {
  f.count++;
  if (f.items.length < LISTED_PER_FINDING) f.items.push(item);
}

/** A uniform random sample of at most `size` of the items offered (Algorithm R), or all of them. */
class Reservoir<T> {
  private readonly kept: T[] = [];
  private seen = 0;
  constructor(private readonly size: number | 'all') {}

  offer(item: T): void {
    this.seen++;
    if (this.size === 'all' || this.kept.length < this.size) this.kept.push(item);
    else {
      const i = crypto.randomInt(this.seen);
      if (i < this.size) this.kept[i] = item;
    }
  }

  items(): readonly T[] {
    return this.kept;
  }
}
