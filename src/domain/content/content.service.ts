import type { Readable } from 'node:stream';
import type { BlobStore, HashedWrites, LocalFileState, Presigning, TempBlob } from '../../infra/blob-store/blob-store';
import type { RestoreNamed } from '../../infra/blob-store/content-reads';
import type { Logger } from '../../infra/logger';
import type { Transaction } from '../../infra/prisma';
import { DomainError, isDomainError, isOwnStoreFailure, storeErrors } from '../errors';
import { NO_METER, type TransferMeter } from '../transfer-meter';
import type { ContentRecord, ContentRepository } from './content.repository';
import { DualHasher, hashing, type ContentDigest, type ParsedHash } from './hashing';
import { deriveFromHead, METADATA_HEAD_BYTES, type DerivedMetadata } from './derived-metadata';
import { DEFAULT_MIME, detectMime, mimeFromName } from './mime';
import type { InPlaceLocation, InPlaceRepository } from './in-place.repository';

/** Bytes written to a temporary blob and hashed, not yet committed under their hash. */
export interface IngestedContent {
  temp: TempBlob;
  digest: ContentDigest;
  /** MIME type from the first bytes, if recognisable. */
  sniffedMime: string | undefined;
  /** The asset `metadata` fields read from the first bytes while they streamed in (format, image size, ...). */
  derived: DerivedMetadata;
}

/**
 * Stored content: streaming ingest (hash while writing), atomic commit under the content address, lookups by hash,
 * and garbage collection of content no asset refers to.
 */
export class ContentService {
  constructor(
    private readonly repo: ContentRepository,
    private readonly blobs: BlobStore,
    private readonly logger: Logger,
    private readonly opts: {
      maxUploadBytes: number;
      gcGraceSeconds: number;
      /** Days a blob moved aside (no row names it) stays in the quarantine before it is removed for good. */
      orphanRetentionDays: number;
      /** The clock of the sweeps (epoch ms); tests move it forward. */
      now?: () => number;
      /** Runs in the transaction that inserts new content rows (enqueues their thumbnail jobs). */
      onNewContent?: (tx: Transaction, contents: readonly ContentRecord[]) => Promise<void>;
      meter?: TransferMeter;
      /** The rows of in-place contents (contract 6.4): bytes stored for one make it independent of its file. */
      inPlace?: InPlaceRepository;
    },
  ) {
    this.meter = opts.meter ?? NO_METER;
    this.now = opts.now ?? Date.now;
    this.hashedWrites = blobs.capabilities.hashedWrites;
    this.presign = blobs.capabilities.presign;
  }

  private readonly meter: TransferMeter;
  private readonly now: () => number;
  /** The store's capabilities this service uses where the store has them. */
  private readonly hashedWrites: HashedWrites | undefined;
  private readonly presign: Presigning | undefined;
  private readonly countUploaded = (n: number): void => this.meter.add('uploaded', n);

  get maxUploadBytes(): number {
    return this.opts.maxUploadBytes;
  }

  /**
   * Streams `source` into a temporary blob while computing BLAKE3 + SHA-256; nothing remains if it fails. Where the
   * store can, hashing runs on a worker thread.
   */
  async ingest(source: AsyncIterable<Buffer>, opts: { maxBytes?: number } = {}): Promise<IngestedContent> {
    return storeErrors(this.ingestBytes(source, opts));
  }

  private async ingestBytes(source: AsyncIterable<Buffer>, opts: { maxBytes?: number }): Promise<IngestedContent> {
    // The head is looked at once, as soon as it is complete, and dropped: sniffing and metadata need nothing more.
    let facts: HeadFacts = { sniffedMime: undefined, derived: {} };
    const onHead = (h: Buffer) => {
      facts = headFacts(h);
    };
    const meter = {
      maxBytes: opts.maxBytes ?? this.opts.maxUploadBytes,
      onHead,
      headBytes: METADATA_HEAD_BYTES,
      onBytes: this.countUploaded,
    };
    const end = this.meter.begin('upload');
    try {
      if (this.hashedWrites) {
        const { temp, digest } = await this.hashedWrites.writeTempHashed(hashing(source, undefined, meter));
        return { temp, digest, ...facts };
      }
      const hasher = new DualHasher();
      const temp = await this.blobs.writeTemp(hashing(source, hasher, meter));
      return { temp, digest: hasher.digest(), ...facts };
    } finally {
      end();
    }
  }

  /**
   * A local file into a temporary blob, hashed, in one piece on a worker thread where the store can (the import's
   * files): undefined where it cannot, and the caller streams the file through `ingest`. The file's fstat before and
   * after the copy come back for the caller to judge whether it changed meanwhile; a source that cannot be read
   * fails with the code UNREADABLE or NOT_A_FILE. `precommitted`: the copy was also put under its content address
   * (as `precommit` does; false where the worker could not).
   */
  async ingestLocalFile(
    src: string,
  ): Promise<
    { ingested: IngestedContent; precommitted: boolean; before: LocalFileState; after: LocalFileState } | undefined
  > {
    if (!this.hashedWrites) return undefined;
    const end = this.meter.begin('upload');
    try {
      const c = await storeErrors(
        this.hashedWrites.copyFileHashed(src, { headBytes: METADATA_HEAD_BYTES, precommit: true }),
      );
      this.countUploaded(c.digest.size);
      const ingested = { temp: c.temp, digest: c.digest, ...headFacts(c.head) };
      return { ingested, precommitted: c.committed, before: c.before, after: c.after };
    } finally {
      end();
    }
  }

  /** Hashes `source` without keeping it (upload fast path: the content is already stored). */
  async digestOnly(source: AsyncIterable<Buffer>, opts: { maxBytes?: number } = {}): Promise<ContentDigest> {
    const hasher = new DualHasher();
    const end = this.meter.begin('upload');
    try {
      for await (const chunk of hashing(source, hasher, {
        maxBytes: opts.maxBytes ?? this.opts.maxUploadBytes,
        onBytes: this.countUploaded,
      }))
        void chunk;
    } finally {
      end();
    }
    return hasher.digest();
  }

  async discard(ingested: IngestedContent): Promise<void> {
    await this.blobs
      .discard(ingested.temp)
      .catch((err) => this.logger.warn('could not remove a temporary blob', { err }));
  }

  find(hash: ParsedHash, tx?: Transaction): Promise<ContentRecord | undefined> {
    return this.repo.find(hash, tx);
  }

  /**
   * Throws what a read would (409 CONTENT_CHANGED, 503 CONTENT_UNAVAILABLE) when the content is a file of an in-place
   * root that cannot be served now: a HEAD of its content answers as its GET would. A stored content is not looked at.
   */
  async assertServable(blake3: string): Promise<void> {
    if (!(await this.repo.find({ algorithm: 'blake3', hex: blake3 }))?.inPlace) return;
    (await this.blobs.read(blake3, { start: 0, end: 0 })).destroy();
  }

  exists(hash: ParsedHash): Promise<boolean> {
    return this.repo.exists(hash);
  }

  lock(blake3: string, tx: Transaction): Promise<void> {
    return this.repo.lock(blake3, tx);
  }

  /** The content locks of many contents, for one transaction (an import's batch). */
  lockMany(blake3s: readonly string[], tx: Transaction): Promise<void> {
    return this.repo.lockMany(blake3s, tx);
  }

  /** The MIME type of new content: what its first bytes say, else what its (file) name says. */
  mimeOf(ingested: IngestedContent, name: string): string {
    const sniffed = ingested.sniffedMime;
    return sniffed && sniffed !== DEFAULT_MIME ? sniffed : (mimeFromName(name) ?? DEFAULT_MIME);
  }

  /**
   * Before the content lock is taken: puts the bytes under their content address while keeping the temporary blob.
   * On S3 this is the slow step (a server-side copy, multipart above 5 GiB, minutes for the largest models); doing it
   * here keeps it out of the transaction that holds the lock and a pooled connection (and out of its timeout).
   * Nothing relies on the copy surviving until `ensureStored`: GC or the orphan sweeper may remove it in between,
   * and `ensureStored` then commits again from the temporary blob, which is kept for exactly that reason.
   */
  async precommit(ingested: IngestedContent): Promise<void> {
    await storeErrors(this.blobs.commit(ingested.temp, ingested.digest.blake3, { keepTemp: true }));
  }

  /**
   * After a create that put (or may have put) the blob of `blake3` in place failed (refused, rolled back, database
   * gone): moves the blob aside unless a content row refers to it, under the content lock (`moveOrphanAside`), so a
   * concurrent upload of the same bytes is never hurt (and a blob that was there before, which a restored database
   * may name, is not lost). When the database cannot be reached now, retries in the
   * background until it can; a crash before that is reconciled by the sweep at the next start.
   */
  async abandon(blake3: string): Promise<void> {
    try {
      await this.moveOrphanAside(blake3);
    } catch (err) {
      this.logger.warn('could not move the blob of a failed create aside yet; retrying', {
        blake3,
        err: (err as Error).message,
      });
      this.retryAbandon(blake3, 1);
    }
  }

  private retryAbandon(blake3: string, attempt: number): void {
    if (attempt > 120 || this.closed) return;
    const timer = setTimeout(() => {
      this.pendingAbandons.delete(timer);
      this.moveOrphanAside(blake3).catch(() => this.retryAbandon(blake3, attempt + 1));
    }, 5_000);
    timer.unref();
    this.pendingAbandons.add(timer);
  }

  private readonly pendingAbandons = new Set<NodeJS.Timeout>();
  private closed = false;

  /** Stops background retries (the next start's sweep takes over). */
  close(): void {
    this.closed = true;
    for (const t of this.pendingAbandons) clearTimeout(t);
    this.pendingAbandons.clear();
  }

  /**
   * Inside a transaction that holds the content lock: makes sure the content row and its blob exist, committing the
   * temporary blob when the content is new and discarding it otherwise. Returns the content row.
   *
   * The invariant it keeps: a content row is only ever visible while its blob exists. Under the lock a row exists
   * only with its blob (GC deletes the row before the blob, and under the same lock); without a row, the blob is
   * checked under the lock (a cheap HEAD after `precommit`) and committed again if it is gone.
   */
  async ensureStored(
    tx: Transaction,
    ingested: IngestedContent,
    meta: { name: string; mimeType: string; fileName?: string },
  ): Promise<ContentRecord> {
    const existing = await this.repo.find({ algorithm: 'blake3', hex: ingested.digest.blake3 }, tx);
    if (existing) {
      if (existing.sha256 !== ingested.digest.sha256) {
        // Same BLAKE3 with another SHA-256 cannot happen for honest bytes; refuse rather than mix them up.
        throw new DomainError('HASH_MISMATCH', 'the content hashes disagree with the stored content');
      }
      await this.repo.clearOrphaned(existing.blake3, tx);
      if (existing.inPlace) return this.storeInPlace(tx, existing, ingested.temp);
      await this.discard(ingested);
      return existing;
    }
    if (await this.blobs.exists(ingested.digest.blake3)) await this.discard(ingested);
    else await storeErrors(this.blobs.commit(ingested.temp, ingested.digest.blake3));
    const rec: ContentRecord = {
      blake3: ingested.digest.blake3,
      sha256: ingested.digest.sha256,
      size: ingested.digest.size,
      mimeType: meta.mimeType,
      firstName: meta.name,
      metadata: withFormat(ingested.derived, meta.fileName ?? meta.name),
    };
    await this.repo.insert(rec, tx);
    await this.opts.onNewContent?.(tx, [rec]);
    return rec;
  }

  /**
   * `ensureStored` for many ingested contents in one transaction (an import's batch), with the same invariant, in a
   * few statements: the caller holds the content locks of all of them (`lockMany`). Temporary blobs are left for the
   * caller to discard once the transaction is over. Returns each content's row, in order. `derivedJobs: false`: the
   * new contents' thumbnail jobs are not queued (the caller has the backfill find them later).
   */
  async ensureStoredMany(
    tx: Transaction,
    items: readonly { ingested: IngestedContent; meta: { name: string; mimeType: string; fileName?: string } }[],
    opts: { derivedJobs: boolean },
  ): Promise<ContentRecord[]> {
    const found = await this.repo.findMany(
      items.map((i) => i.ingested.digest.blake3),
      tx,
    );
    const fresh = new Map<string, ContentRecord>();
    for (const { ingested, meta } of items) {
      const { blake3, sha256, size } = ingested.digest;
      const existing = found.get(blake3);
      if (existing && existing.sha256 !== sha256)
        throw new DomainError('HASH_MISMATCH', 'the content hashes disagree with the stored content');
      if (existing?.inPlace) {
        found.set(blake3, await this.storeInPlace(tx, existing, ingested.temp, { keepTemp: true }));
        continue;
      }
      if (existing || fresh.has(blake3)) continue;
      // As in ensureStored: the precommitted blob may have been swept meanwhile; the temporary puts it back.
      if (!(await this.blobs.exists(blake3)))
        await storeErrors(this.blobs.commit(ingested.temp, blake3, { keepTemp: true }));
      const name = meta.name;
      const metadata = withFormat(ingested.derived, meta.fileName ?? name);
      fresh.set(blake3, { blake3, sha256, size, mimeType: meta.mimeType, firstName: name, metadata });
    }
    await this.repo.clearOrphanedMany([...found.keys()], tx);
    await this.repo.insertMany([...fresh.values()], tx);
    if (opts.derivedJobs) await this.opts.onNewContent?.(tx, [...fresh.values()]);
    return items.map((i) => found.get(i.ingested.digest.blake3) ?? fresh.get(i.ingested.digest.blake3)!);
  }

  /**
   * Inside a transaction holding the content lock: the bytes of an in-place content were received (an upload, a
   * download, a copied import), so they are stored as any content's are and the content no longer depends on its
   * file (contract 6.4). Its row stays; its location and the `missing` tag of its assets go.
   */
  private async storeInPlace(
    tx: Transaction,
    existing: ContentRecord,
    temp: TempBlob,
    opts: { keepTemp?: boolean } = {},
  ): Promise<ContentRecord> {
    if (!(await this.blobs.exists(existing.blake3))) await storeErrors(this.blobs.commit(temp, existing.blake3, opts));
    await this.opts.inPlace?.makeStored(existing.blake3, tx);
    const { inPlace: _inPlace, ...stored } = existing;
    void _inPlace;
    return stored;
  }

  /**
   * An in-place import's file, hashed where it is (contract 6.4): its content row (no blob, `in_place`) and location,
   * unless the content exists already. `head`: its first bytes, for the type and the derived metadata.
   */
  async recordInPlace(
    digest: ContentDigest,
    head: Buffer,
    meta: { name: string; fileName: string },
    loc: InPlaceLocation,
  ): Promise<void> {
    if (!this.opts.inPlace) throw new Error('in-place contents are not wired');
    await this.opts.inPlace.insertInPlace(inPlaceRecordOf(digest, head, meta), loc);
  }

  /**
   * `recordInPlace` for an import's batch, inside its transaction, which holds the contents' locks (`lockMany`) and
   * makes their assets: a content not yet known gets its row (in place, not orphaned: its asset comes in the same
   * transaction) and location; a known one stays as it is (stored, or in place elsewhere: the seed's drift check
   * moves a stale location). Returns each file's content.
   */
  async recordInPlaceMany(
    tx: Transaction,
    items: readonly {
      digest: ContentDigest;
      head: Buffer;
      meta: { name: string; fileName: string };
      loc: InPlaceLocation;
    }[],
  ): Promise<ContentRecord[]> {
    if (!this.opts.inPlace) throw new Error('in-place contents are not wired');
    const found = await this.repo.findMany(
      items.map((i) => i.digest.blake3),
      tx,
    );
    const fresh = new Map<string, { rec: ContentRecord; loc: InPlaceLocation }>();
    for (const { digest, head, meta, loc } of items) {
      const existing = found.get(digest.blake3);
      if (existing && existing.sha256 !== digest.sha256)
        throw new DomainError('HASH_MISMATCH', 'the content hashes disagree with the stored content');
      if (existing || fresh.has(digest.blake3)) continue;
      fresh.set(digest.blake3, { rec: inPlaceRecordOf(digest, head, meta), loc });
    }
    await this.repo.clearOrphanedMany([...found.keys()], tx);
    await this.repo.insertMany(
      [...fresh.values()].map((f) => f.rec),
      tx,
    );
    await this.opts.inPlace.insertLocations(
      [...fresh.values()].map((f) => ({ blake3: f.rec.blake3, loc: f.loc })),
      tx,
    );
    return items.map((i) => found.get(i.digest.blake3) ?? fresh.get(i.digest.blake3)!.rec);
  }

  /** Inside a transaction holding the content lock: a referenced content is no longer a GC candidate. */
  async reference(tx: Transaction, blake3: string): Promise<void> {
    await this.repo.clearOrphaned(blake3, tx);
  }

  /** Inside a transaction holding the content lock, after an asset was deleted. */
  async releaseIfUnused(tx: Transaction, blake3: string): Promise<boolean> {
    return this.repo.markOrphanedIfUnused(blake3, tx);
  }

  async read(blake3: string, range?: { start: number; end: number }): Promise<Readable> {
    return this.blobs.read(blake3, range);
  }

  presignedUrl(
    blake3: string,
    opts: { fileName: string; contentType: string; expiresInSeconds: number; disposition?: 'inline' | 'attachment' },
  ): Promise<string | undefined> {
    return this.presign ? this.presign.presignedUrl(blake3, opts) : Promise.resolve(undefined);
  }

  /**
   * Removes one content if it is still unreferenced and its grace period is over, and moves its blob into the
   * quarantine (removed for good `orphanRetentionDays` later, so a database restored from before the delete finds it).
   *
   * Why this cannot lose data that a concurrent request on any instance is about to reference: every path that
   * references content (upload commit, from-hash, download completion) takes the transaction-level advisory lock of
   * the hash, and the asset insert needs the content row (foreign key). GC holds the same key as a session lock from
   * before the row delete until after the blob is gone. So either GC runs first (row and blob both gone; the
   * referencing request then finds no row and stores the content anew from its temporary blob, or answers
   * CONTENT_NOT_FOUND), or the reference commits first (GC then sees the asset, or the cleared orphaned_at, and
   * deletes nothing). The row is deleted (and committed) before the blob, never after: a failure in between leaves an
   * unreferenced blob (a leak the orphan sweeper removes), never a row without its blob.
   *
   * On S3 the copy to the content key happens before the lock (`precommit`), so a blob may exist briefly without a
   * row and without anyone holding the lock; `ensureStored` re-checks it under the lock, so deleting it here or in
   * `sweepOrphanBlobs` is harmless.
   */
  async collect(blake3: string): Promise<boolean> {
    return this.repo.withSessionLock(blake3, async (locked) => {
      if (!(await locked.deleteIfCollectable(this.opts.gcGraceSeconds))) return false;
      await this.blobs.quarantine(blake3, this.today());
      this.logger.info('removed unreferenced content', { blake3 });
      return true;
    });
  }

  /**
   * Collects up to `batch` contents whose grace period is over, in one statement (`ContentRepository.deleteExpired`):
   * rows claimed by no other instance and whose content lock no one holds, re-checked for references, deleted.
   * The blobs are moved aside after the commit, never before: a failure in between leaves an unreferenced blob that
   * the orphan sweep moves aside, never a row without its blob. A referencing request that comes after the commit
   * finds no row and stores the content anew from its temporary blob, exactly as with `collect`; to make that safe
   * against our move, each blob is moved under the content's session lock (as `moveOrphanAside` does) and only if
   * still no row names it. Returns how many contents were removed.
   */
  async collectExpired(batch = 1_000): Promise<number> {
    let removed: string[];
    try {
      removed = await this.repo.deleteExpired(this.opts.gcGraceSeconds, batch);
    } catch (err) {
      if (isDomainError(err) || isOwnStoreFailure(err)) throw err; // the database is unavailable: the job is retried
      // One content the batch cannot delete must not hold back the others: collect them one by one this time.
      this.logger.warn('batch collection failed; collecting one by one', { err: (err as Error).message });
      return this.collectOneByOne(batch);
    }
    await this.moveAllAside(removed);
    if (removed.length > 0) this.logger.info('removed unreferenced content', { count: removed.length });
    return removed.length;
  }

  /**
   * `moveOrphanAside` for each hash, a few at once: each waits on its own lock round trips and two directory fsyncs
   * (a batch of 2,000 took about 8 s one by one, `faults.test.ts`). Every move is tried; the first failure is thrown.
   */
  private async moveAllAside(hexes: readonly string[]): Promise<void> {
    let next = 0;
    let failure: unknown;
    const mover = async () => {
      while (next < hexes.length) {
        const hex = hexes[next++]!;
        await this.moveOrphanAside(hex).catch((err: unknown) => void (failure ??= err));
      }
    };
    await Promise.all(Array.from({ length: Math.min(MOVES_AT_ONCE, hexes.length) }, mover));
    if (failure !== undefined) throw failure;
  }

  private async collectOneByOne(batch: number): Promise<number> {
    let removed = 0;
    for (const hash of await this.repo.findExpiredOrphans(this.opts.gcGraceSeconds, batch)) {
      const ok = await this.collect(hash).catch((err: unknown) => {
        this.logger.warn('could not collect a content', { blake3: hash, err: (err as Error).message });
        return false;
      });
      if (ok) removed++;
    }
    return removed;
  }

  /**
   * At start: blobs without a content row (a crash between putting a blob in place and committing its row, a
   * failed cleanup, a database restored from an older backup) are moved aside, and quarantined blobs that a row names
   * again (a database restored from a newer backup) are moved back, each under its content lock, so instances
   * starting together or serving uploads meanwhile are safe. Nothing is removed for good here. Runs in the
   * background; returns how many blobs were moved aside.
   */
  async reconcileAtStart(): Promise<number> {
    const restored = await this.restoreNamed();
    const n = await this.sweepOrphanBlobs(0);
    this.logger.info('start-up reconciliation finished', { quarantined_blobs: n, restored_blobs: restored });
    return n;
  }

  /**
   * Moves aside blobs that have no content row and were last written more than `olderThanMs` ago: leftovers of a
   * transaction that rolled back after its commit, of a crash, of a GC whose blob move failed after the row delete,
   * or blobs a restored older database does not know. Each candidate is re-checked under the content lock (the same
   * protocol as `collect`), so a concurrent upload of the same bytes either sees its row or commits the blob again.
   * The listing costs one LIST request per 1,000 blobs on S3 (a directory walk on disk), so it runs daily. Returns
   * how many were moved aside.
   */
  async sweepOrphanBlobs(olderThanMs: number): Promise<number> {
    let moved = 0;
    await this.inBatches(this.blobs.listBlobs(olderThanMs, this.now()), async (hex, named) => {
      if (!named && (await this.moveOrphanAside(hex))) moved++;
    });
    return moved;
  }

  /**
   * The quarantine's review (the daily sweep, after `sweepOrphanBlobs`): a blob a row names again is moved back; one
   * no row names whose retention is over (`orphanRetentionDays` whole days after the day it was moved aside) is
   * removed for good, under its content lock and only if still no row names it. A copy whose blob is stored again
   * anyway (uploaded anew) is a duplicate and goes once its retention is over too.
   */
  async reviewQuarantine(): Promise<{ restored: number; removed: number }> {
    let restored = 0;
    let removed = 0;
    const entries = this.blobs.listQuarantined();
    const days = new Map<string, string[]>();
    await this.inBatches(
      mapAsync(entries, (q) => {
        days.set(q.blake3, [...(days.get(q.blake3) ?? []), q.day]);
        return q.blake3;
      }),
      async (hex, named) => {
        const copies = days.get(hex);
        if (!copies) return; // listed twice (two days): handled with its first listing
        days.delete(hex);
        if (named && !(await this.blobs.exists(hex))) {
          if (await this.restoreIfNamed(hex)) restored++;
          return;
        }
        for (const day of copies) if (this.retentionOver(day) && (await this.purge(hex, day))) removed++;
      },
    );
    if (restored > 0 || removed > 0) this.logger.info('reviewed the blob quarantine', { restored, removed });
    return { restored, removed };
  }

  /** The restoring half of `reviewQuarantine` (at start, where nothing is removed for good). */
  private async restoreNamed(): Promise<number> {
    let restored = 0;
    await this.inBatches(
      mapAsync(this.blobs.listQuarantined(), (q) => q.blake3),
      async (hex, named) => {
        if (named && !(await this.blobs.exists(hex)) && (await this.restoreIfNamed(hex))) restored++;
      },
    );
    return restored;
  }

  /** Calls `fn` for each hash of `hashes` with whether a content row names it, asking the database 500 at a time. */
  private async inBatches(
    hashes: AsyncIterable<string>,
    fn: (hex: string, named: boolean) => Promise<void>,
  ): Promise<void> {
    let batch: string[] = [];
    const flush = async () => {
      const rows = await this.repo.existing(batch);
      for (const hex of batch) await fn(hex, rows.has(hex));
      batch = [];
    };
    for await (const hex of hashes) {
      batch.push(hex);
      if (batch.length >= 500) await flush();
    }
    if (batch.length > 0) await flush();
  }

  /** Whether a blob moved aside on `day` has been kept `orphanRetentionDays` whole days (counted from the day's end). */
  private retentionOver(day: string): boolean {
    const end = Date.parse(`${day}T00:00:00Z`) + DAY_MS;
    return this.now() >= end + this.opts.orphanRetentionDays * DAY_MS;
  }

  /** Today (UTC) as the quarantine names its days. */
  private today(): string {
    return new Date(this.now()).toISOString().slice(0, 10);
  }

  /** The named row is re-read under the lock: GC may have taken it since the batch asked (`restoreNamedBlob`). */
  private restoreIfNamed(blake3: string): Promise<boolean> {
    return restoreNamedBlob(this.repo, this.blobs)(blake3);
  }

  private async moveOrphanAside(blake3: string): Promise<boolean> {
    return this.repo.withSessionLock(blake3, async (locked) => {
      if (await locked.hasRow()) return false;
      if (!(await this.blobs.exists(blake3))) return false;
      await this.blobs.quarantine(blake3, this.today());
      this.logger.debug('moved a blob without content row aside', { blake3 });
      return true;
    });
  }

  /** Removes a quarantined copy for good, unless a row names it and it is the only copy left. */
  private async purge(blake3: string, day: string): Promise<boolean> {
    return this.repo.withSessionLock(blake3, async (locked) => {
      if ((await locked.hasRow()) && !(await this.blobs.exists(blake3))) return false;
      await this.blobs.purgeQuarantined(blake3, day);
      this.logger.debug('removed a quarantined blob', { blake3, day });
      return true;
    });
  }

  /**
   * Content whose metadata was never derived (stored before it existed) among the next rows: the backfill's work list.
   */
  findWithoutMetadata(
    afterBlake3: string,
    limit: number,
  ): Promise<{ rows: ContentRecord[]; last: string | undefined }> {
    return this.repo.findWithoutMetadata(afterBlake3, limit);
  }

  /**
   * Backfill: derives the metadata of stored content from its first bytes (read once, bounded), stores it on the
   * content and merges it under the metadata of its assets.
   */
  async backfillMetadata(rec: ContentRecord): Promise<void> {
    let head = Buffer.alloc(0);
    if (rec.size > 0) {
      const chunks: Buffer[] = [];
      let n = 0;
      const stream = await this.blobs.read(rec.blake3, { start: 0, end: Math.min(rec.size, METADATA_HEAD_BYTES) - 1 });
      for await (const c of stream as AsyncIterable<Buffer>) {
        chunks.push(c);
        n += c.length;
        if (n >= METADATA_HEAD_BYTES) break;
      }
      stream.destroy();
      head = Buffer.concat(chunks).subarray(0, METADATA_HEAD_BYTES);
    }
    const derived = withFormat(headFacts(head, rec.firstName).derived, rec.firstName);
    await this.repo.saveMetadata(rec.blake3, derived);
  }

  get gcGraceSeconds(): number {
    return this.opts.gcGraceSeconds;
  }
}

/**
 * Moves a quarantined blob back only if, under the content's session lock (the protocol of `collect`), a row names it
 * and the store holds no blob: a reader or a sweep that saw the row before GC took it leaves the quarantine alone.
 */
export function restoreNamedBlob(repo: ContentRepository, blobs: BlobStore): RestoreNamed {
  return (blake3) =>
    repo.withSessionLock(
      blake3,
      async (locked) => (await locked.hasRow()) && !(await blobs.exists(blake3)) && blobs.restore(blake3),
    );
}

const DAY_MS = 24 * 3600 * 1000;
/** Blobs of one collected batch moved aside at once (each holds a pooled connection for its lock meanwhile). */
const MOVES_AT_ONCE = 4;

async function* mapAsync<T, U>(source: AsyncIterable<T>, fn: (t: T) => U): AsyncIterable<U> {
  for await (const t of source) yield fn(t);
}

/** `format` from the file name's extension when the bytes did not tell it. */
function withFormat(derived: DerivedMetadata, name: string): DerivedMetadata {
  if (derived.format) return derived;
  const ext = /\.([a-z0-9]{1,12})$/i.exec(name)?.[1]?.toLowerCase();
  return ext ? { ...derived, format: ext } : derived;
}

type HeadFacts = Pick<IngestedContent, 'sniffedMime' | 'derived'>;

/** What a content's first bytes say: its MIME type where they show one, and the derived `metadata` fields. */
function headFacts(head: Buffer, name?: string): HeadFacts {
  const sniffedMime = head.length > 0 ? detectMime(head, undefined) : undefined;
  return { sniffedMime, derived: deriveFromHead(head, sniffedMime, name) };
}

/** The content row of a freshly hashed in-place file: its type sniffed from its first bytes, else from its name. */
function inPlaceRecordOf(digest: ContentDigest, head: Buffer, meta: { name: string; fileName: string }): ContentRecord {
  const facts = headFacts(head, meta.fileName);
  const sniffed = facts.sniffedMime;
  const mimeType = sniffed && sniffed !== DEFAULT_MIME ? sniffed : (mimeFromName(meta.fileName) ?? DEFAULT_MIME);
  return {
    blake3: digest.blake3,
    sha256: digest.sha256,
    size: digest.size,
    mimeType,
    firstName: meta.name,
    metadata: withFormat(facts.derived, meta.fileName),
    inPlace: true,
  };
}
