import crypto from 'node:crypto';
import type { Transaction, Transactions } from '../../infra/prisma';
import type { AssetRepository, NewAssetRow } from '../assets/asset.repository';
import { PATHS_LIMITS } from '../assets/asset-paths';
import { newAssetRow } from '../assets/new-asset-row';
import { LIMITS } from '../assets/validation';
import type { ContentRecord } from '../content/content.repository';
import type { ContentService, IngestedContent } from '../content/content.service';
import type { ContentDigest } from '../content/hashing';
import type { InPlaceLocation } from '../content/in-place.repository';
import type { QuotaService } from '../quotas/quota.service';

/** A file of an in-place root, hashed where it is (InPlaceImporter.readOne), waiting for its batch. */
export interface InPlaceFile {
  digest: ContentDigest;
  head: Buffer;
  loc: InPlaceLocation;
  file: ReadFile['file'];
}

/** One file of an import, read and hashed, its bytes put under their content address (`ContentService.precommit`). */
export interface ReadFile {
  ingested: IngestedContent;
  file: { name: string; tags: string[]; path: string; fileName: string };
}

/**
 * The assets of many imported files in one transaction: the same rows, locks and invariants as one
 * `AssetService.importFile` per file (new content rows, one asset per owner and content, a second path of a content
 * appended with its tags), in a few statements for the whole batch instead of about a dozen per file; the thumbnail
 * jobs are left to the backfill the import queues when it ends. The import's rate over many small files is bound by statements, not bytes (`npm run bench -- import`).
 */
export class ImportBatches {
  constructor(
    private readonly d: {
      transactions: Transactions;
      assets: AssetRepository;
      content: ContentService;
      quotas: QuotaService;
    },
  ) {}

  /** Makes the assets of `files` for `ownerId`; whether each one made a new asset. Temporary blobs stay. */
  commit(ownerId: string, files: readonly ReadFile[]): Promise<boolean[]> {
    const { content } = this.d;
    return this.assetsOf(
      ownerId,
      files.map((f) => f.ingested.digest.blake3),
      files.map((f) => f.file),
      (tx) =>
        content.ensureStoredMany(
          tx,
          files.map(({ ingested, file }) => ({
            ingested,
            meta: { name: file.name, mimeType: content.mimeOf(ingested, file.fileName), fileName: file.fileName },
          })),
          // Thumbnails wait for the end of the import (ImportService queues the backfill): they are not needed for
          // the files to be stored, and making them beside the import took the CPU the import needs.
          { derivedJobs: false },
        ),
    );
  }

  /**
   * The same for files of an in-place root, hashed where they are: their content rows and locations
   * (`ContentService.recordInPlaceMany`) and assets in one transaction, where one file cost two
   * (`npm run bench -- import --in-place`). As the file-by-file way (InPlaceImporter.commitOne), a file whose content
   * already has an asset of the owner leaves that asset as it is.
   */
  commitInPlace(ownerId: string, files: readonly InPlaceFile[]): Promise<boolean[]> {
    return this.assetsOf(
      ownerId,
      files.map((f) => f.digest.blake3),
      files.map((f) => f.file),
      (tx) =>
        this.d.content.recordInPlaceMany(
          tx,
          files.map((f) => ({
            digest: f.digest,
            head: f.head,
            meta: { name: f.file.name, fileName: f.file.fileName },
            loc: f.loc,
          })),
        ),
      { appendToKnown: false },
    );
  }

  /**
   * The transaction of a batch: the quota and content locks, the contents (`contents`), then the assets; a file whose
   * content has an asset of the owner appends its path and tags to it, unless `appendToKnown` is false.
   */
  private assetsOf(
    ownerId: string,
    hashes: string[],
    files: readonly ReadFile['file'][],
    contents: (tx: Transaction) => Promise<ContentRecord[]>,
    opts: { appendToKnown: boolean } = { appendToKnown: true },
  ): Promise<boolean[]> {
    const { assets, content } = this.d;
    return this.d.transactions.run(
      async (tx) => {
        // As AssetService.createWithContent: the owner's quota row before the content locks.
        const limits = await this.d.quotas.lock(ownerId, tx);
        await content.lockMany(hashes, tx);
        const records = await contents(tx);
        const mine = new Map<string, { id: string; isImmutable: boolean }>(
          await assets.findByContents(ownerId, hashes, tx),
        );
        const rows: NewAssetRow[] = [];
        const again: { id: string; path: string; tags: string[] }[] = [];
        const made = files.map((file, i) => {
          const rec = records[i]!;
          const have = mine.get(rec.blake3);
          if (have) {
            if (opts.appendToKnown)
              again.push({ id: have.id, path: file.path, tags: have.isImmutable ? [] : file.tags });
            return false;
          }
          const id = crypto.randomUUID();
          mine.set(rec.blake3, { id, isImmutable: false });
          rows.push(
            newAssetRow(ownerId, id, file.name, rec, { tags: file.tags, fileName: file.fileName, paths: [file.path] }),
          );
          return true;
        });
        // A batch that would pass a limit fails whole (QUOTA_EXCEEDED); ImportService then makes its files one at a
        // time, so those that fit are kept and the rest are reported as skipped with that code.
        if (limits && rows.length > 0) {
          const bytes = rows.reduce((sum, r) => sum + r.size, 0);
          await this.d.quotas.admit(ownerId, limits, { bytes, assets: rows.length }, tx);
        }
        await assets.insertMany(rows, tx);
        for (const a of again)
          await assets.appendPaths(ownerId, a.id, [a.path], PATHS_LIMITS.perAsset, tx, a.tags, LIMITS.tagCount);
        return made;
      },
      { timeoutMs: 120_000, maxWaitMs: 30_000 },
    );
  }
}

/** Files per transaction: enough that statements stop mattering, few enough that a failing one costs little. */
const BATCH_FILES = 64;

/**
 * Collects read files into batches committed one after the other, while the readers go on reading; a reader that
 * fills a batch waits for its commit, which bounds what waits in memory and on disk to about two batches.
 */
export class BatchCollector<T> {
  private items: T[] = [];
  private committing: Promise<void> = Promise.resolve();

  constructor(private readonly commit: (items: T[]) => Promise<void>) {}

  async add(item: T): Promise<void> {
    this.items.push(item);
    if (this.items.length >= BATCH_FILES) await this.flush();
  }

  /** Commits what is collected, after the batches before it. */
  flush(): Promise<void> {
    const items = this.items.splice(0);
    this.committing = this.committing.then(
      () => (items.length > 0 ? this.commit(items) : undefined),
      (err: unknown) => {
        // An earlier batch failed: these were never committed, and are left for `drop`.
        this.items.push(...items);
        throw err;
      },
    );
    return this.committing;
  }

  /** After a failure: what was collected and not committed is dropped. */
  async drop(dropOne: (item: T) => Promise<void>): Promise<void> {
    await this.committing.catch(() => undefined);
    await Promise.all(this.items.splice(0).map((i) => dropOne(i).catch(() => undefined)));
  }
}
