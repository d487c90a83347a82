import type { Readable } from 'node:stream';
import { BlobNotFoundError } from '../errors';
import type {
  BlobStore,
  BlobStoreCapabilities,
  CommitOptions,
  DerivedKind,
  PartialBlob,
  QuarantinedBlob,
  StoredBlob,
  TempBlob,
} from './blob-store';

/**
 * The bytes of contents that have no blob because they are files of an in-place import root (contract 6.4), as the
 * domain finds and checks them (domain/content/in-place.ts): undefined for a content that is not in place.
 */
export interface InPlaceFiles {
  open(blake3Hex: string, range?: { start: number; end: number }): Promise<Readable | undefined>;
  localPath(blake3Hex: string): Promise<string | undefined>;
}

/**
 * Moves a quarantined blob back if, under the content's lock, a row names it and no blob is stored (a database
 * restored from after the blob was moved aside); whether it did.
 */
export type RestoreNamed = (blake3Hex: string) => Promise<boolean>;

/**
 * A blob store as the readers of content see it: the one seam every reader of content bytes goes through (the content
 * route, thumbnails, exports, the metadata backfill). A stored blob is read as before, at no extra cost; only a blob
 * the store does not have is looked up, first as an in-place file (contract 6.4), then in the quarantine, whence it
 * comes back only through `restoreNamed`: a reader that found the row before garbage collection took it must not put
 * back a blob that no row names any more. Everything else is the store's own: no write, move, sweep or quarantine
 * ever reaches an in-place file, because none of them is in the store.
 */
export class ContentReadingStore implements BlobStore {
  readonly kind: 'fs' | 's3';
  readonly capabilities: BlobStoreCapabilities;

  constructor(
    private readonly inner: BlobStore,
    private readonly files: InPlaceFiles,
    private readonly restoreNamed: RestoreNamed,
  ) {
    this.kind = inner.kind;
    const local = inner.capabilities.localFiles;
    this.capabilities = {
      ...inner.capabilities,
      ...(local
        ? {
            localFiles: {
              localPath: (hex: string) =>
                this.missing(
                  hex,
                  () => local.localPath(hex),
                  () => this.files.localPath(hex),
                ),
            },
          }
        : {}),
    };
  }

  read(blake3Hex: string, range?: { start: number; end: number }): Promise<Readable> {
    return this.missing(
      blake3Hex,
      () => this.inner.read(blake3Hex, range),
      () => this.files.open(blake3Hex, range),
    );
  }

  /** `get` from the store; where it has no such blob, `inPlace`, else `get` again once a named blob is restored. */
  private async missing<T>(hex: string, get: () => Promise<T>, inPlace: () => Promise<T | undefined>): Promise<T> {
    try {
      return await get();
    } catch (err) {
      if (!(err instanceof BlobNotFoundError)) throw err;
      const file = await inPlace();
      if (file !== undefined) return file;
      // Read again even when this call restored nothing: a concurrent one (another reader, the start-up) may have.
      await this.restoreNamed(hex);
      return get();
    }
  }

  init(): Promise<void> {
    return this.inner.init();
  }
  writeTemp(source: AsyncIterable<Buffer>): Promise<TempBlob> {
    return this.inner.writeTemp(source);
  }
  openPartial(name: string): Promise<PartialBlob> {
    return this.inner.openPartial(name);
  }
  partialKey(name: string): string {
    return this.inner.partialKey(name);
  }
  commit(temp: TempBlob, blake3Hex: string, opts?: CommitOptions): Promise<void> {
    return this.inner.commit(temp, blake3Hex, opts);
  }
  discard(temp: TempBlob): Promise<void> {
    return this.inner.discard(temp);
  }
  exists(blake3Hex: string): Promise<boolean> {
    return this.inner.exists(blake3Hex);
  }
  quarantine(blake3Hex: string, day: string): Promise<void> {
    return this.inner.quarantine(blake3Hex, day);
  }
  restore(blake3Hex: string): Promise<boolean> {
    return this.inner.restore(blake3Hex);
  }
  listQuarantined(): AsyncIterable<QuarantinedBlob> {
    return this.inner.listQuarantined();
  }
  purgeQuarantined(blake3Hex: string, day: string): Promise<void> {
    return this.inner.purgeQuarantined(blake3Hex, day);
  }
  putDerived(blake3Hex: string, kind: DerivedKind, bytes: Buffer): Promise<void> {
    return this.inner.putDerived(blake3Hex, kind, bytes);
  }
  readDerived(blake3Hex: string, kind: DerivedKind): Promise<Buffer | undefined> {
    return this.inner.readDerived(blake3Hex, kind);
  }
  sweepTemps(olderThanMs: number): Promise<number> {
    return this.inner.sweepTemps(olderThanMs);
  }
  listBlobs(olderThanMs: number, now?: number): AsyncIterable<string> {
    return this.inner.listBlobs(olderThanMs, now);
  }
  listStored(): AsyncIterable<StoredBlob> {
    return this.inner.listStored();
  }
  writeObject(name: string, source: AsyncIterable<Buffer>): Promise<number> {
    return this.inner.writeObject(name, source);
  }
  readObject(name: string, range?: { start: number; end: number }): Promise<Readable> {
    return this.inner.readObject(name, range);
  }
  objectSize(name: string): Promise<number | undefined> {
    return this.inner.objectSize(name);
  }
  deleteObject(name: string): Promise<void> {
    return this.inner.deleteObject(name);
  }
  ping(): Promise<void> {
    return this.inner.ping();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
