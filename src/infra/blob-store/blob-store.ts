import type { Readable } from 'node:stream';
import type { FetchedBody, HashSession, StoredBody } from './ingest-pool';
import { InfraError, SOCKET_ERROR_CODES, someCause, StoreFullError, StoreUnavailableError } from '../errors';
import { fileStateOf, type FileState } from './copy-hashed';

export { BlobNotFoundError } from '../errors';

/**
 * Content-addressed storage of bytes, keyed by the BLAKE3 hex of the content. Bytes first go to a temporary object
 * (written while they arrive and while they are hashed), and are committed under their hash only once the hash is
 * known. Implementations: fs.ts (local disk), s3.ts (S3-compatible object stores). This is what every store has;
 * what only some have is in `capabilities`, one small interface each, asked for once where it is used.
 */
export interface BlobStore {
  readonly kind: 'fs' | 's3';
  /** What this store offers beyond the methods every store has; each absent where the backend has no such thing. */
  readonly capabilities: BlobStoreCapabilities;
  /** Prepares the store (creates folders, removes temporaries a crash left behind). */
  init(): Promise<void>;
  /**
   * Consumes `source` into a new temporary blob. Resolves once every byte is durable. On any error (including one
   * raised by `source`) the temporary blob is removed and the error rethrown.
   */
  writeTemp(source: AsyncIterable<Buffer>): Promise<TempBlob>;
  /**
   * Opens (or reopens, for resumed downloads and uploads) a named temporary blob for appending, kept across
   * restarts. Returns the bytes already present.
   */
  openPartial(name: string): Promise<PartialBlob>;
  /** The key `openPartial(name)` answers, without touching the store. */
  partialKey(name: string): string;
  /**
   * Moves (copies, with `keepTemp`) a temporary blob to its content address; readers see the blob whole or not at
   * all. Idempotent: an existing blob with that hash is kept.
   */
  commit(temp: TempBlob, blake3Hex: string, opts?: CommitOptions): Promise<void>;
  /** Removes a temporary blob; never throws for one already gone. */
  discard(temp: TempBlob): Promise<void>;
  exists(blake3Hex: string): Promise<boolean>;
  /**
   * Streams the content, or the inclusive byte range [start, end]. BlobNotFoundError when there is no such blob, also
   * when one is in the quarantine: only a caller that holds the content's lock and sees its row may move it back
   * (`ContentReadingStore` does, for the readers of content).
   */
  read(blake3Hex: string, range?: { start: number; end: number }): Promise<Readable>;
  /**
   * Moves the blob and its derived objects aside into the quarantine of `day` (`YYYY-MM-DD`), by a rename on disk or a
   * copy then delete on S3: nothing is removed at once, so a restored database that names the blob again finds it.
   * Nothing to do for a blob that is not stored.
   */
  quarantine(blake3Hex: string, day: string): Promise<void>;
  /** Moves a quarantined blob (the copy of any day) and its derived objects back; whether one was found. */
  restore(blake3Hex: string): Promise<boolean>;
  /** Every blob in the quarantine, with the day it was moved aside (a blob moved aside twice is listed twice). */
  listQuarantined(): AsyncIterable<QuarantinedBlob>;
  /** Removes the quarantined copy of `day` and its derived objects for good; never throws for one already gone. */
  purgeQuarantined(blake3Hex: string, day: string): Promise<void>;
  /**
   * Stores a small object made from a blob (a thumbnail) beside it, under its own key (`<blob key>.<kind>`); written
   * whole and durable, replacing an older one. Never listed by `listBlobs`; moved aside and back with the blob.
   */
  putDerived(blake3Hex: string, kind: DerivedKind, bytes: Buffer): Promise<void>;
  /** The derived object, or undefined when there is none. */
  readDerived(blake3Hex: string, kind: DerivedKind): Promise<Buffer | undefined>;
  /**
   * Removes temporary blobs, partials and (S3) unfinished multipart uploads not written to for `olderThanMs`;
   * returns how many.
   */
  sweepTemps(olderThanMs: number): Promise<number>;
  /** Hashes of the stored blobs last written more than `olderThanMs` before `now` (for the orphan sweeper). */
  listBlobs(olderThanMs: number, now?: number): AsyncIterable<string>;
  /** Every stored blob (not the quarantine's) with its size and when it was last written (verify). */
  listStored(): AsyncIterable<StoredBlob>;
  /**
   * Named objects outside the content store (export archives, `exports/<uuid>.zip`): written from `source`, durable,
   * and visible under the name whole or not at all (a failed write leaves nothing). Resolves with the size.
   */
  writeObject(name: string, source: AsyncIterable<Buffer>): Promise<number>;
  readObject(name: string, range?: { start: number; end: number }): Promise<Readable>;
  /** Size of a named object; undefined when it does not exist. */
  objectSize(name: string): Promise<number | undefined>;
  /** Never throws for an object already gone. */
  deleteObject(name: string): Promise<void>;
  /** Cheap reachability check for /readyz. */
  ping(): Promise<void>;
  /** Releases connections (S3 client sockets); the store is not used afterwards. */
  close(): Promise<void>;
}

/** The optional parts of a store, each a small interface of its own (see BlobStore.capabilities). */
export interface BlobStoreCapabilities {
  /** Bytes hashed and written off the request thread (fs: the ingest pool's worker threads). */
  readonly hashedWrites?: HashedWrites;
  /** Short-lived URLs for direct downloads (S3 presigned URLs). */
  readonly presign?: Presigning;
  /** Blobs as files of this machine (fs), for readers that open files themselves. */
  readonly localFiles?: LocalFiles;
  /** Free space, where the backend can tell (local disk); /readyz compares it with a floor. */
  readonly space?: SpaceReport;
}

/** What `HashedWrites.copyFileHashed` made. */
export interface CopiedLocalFile {
  temp: TempBlob;
  digest: { blake3: string; sha256: string; size: number };
  head: Buffer;
  committed: boolean;
  before: LocalFileState;
  after: LocalFileState;
}

/** A local file's fstat, as much of it as tells whether the file changed (copy-hashed.ts, which the worker loads). */
export type LocalFileState = FileState;
export { fileStateOf };

export interface HashedWrites {
  /** `writeTemp` that also returns the BLAKE3 and SHA-256 of the bytes, hashed off the request thread. */
  writeTempHashed(
    source: AsyncIterable<Buffer>,
  ): Promise<{ temp: TempBlob; digest: { blake3: string; sha256: string; size: number } }>;
  /**
   * A local file of this machine (the import's) into a temporary blob, hashed, read and written on a worker thread
   * in one piece. The file's state before and after the copy is returned for the caller to judge; errors carry a
   * `code` (UNREADABLE, NOT_A_FILE, or an errno). `precommit`: also put under the content address as `commit` with
   * `keepTemp` does, where the store can there (`committed`).
   */
  copyFileHashed(src: string, opts: { headBytes: number; precommit?: boolean }): Promise<CopiedLocalFile>;
  /**
   * PartialBlob.append (of a partial this store opened) with the bytes also fed to `hash` (which must have hashed
   * exactly the bytes already stored), both the hashing and the writing on the session's worker thread. What arrived
   * before a failure of `source` is kept, durably, and counted in `hash`.
   */
  appendHashed(partial: PartialBlob, source: AsyncIterable<Buffer>, hash: HashSession): Promise<TempBlob>;
  /**
   * appendHashed for a download's body that its session's worker fetched (HashSession.fetch): the body never comes to
   * this thread. Resolves also when the body broke or went past `limit` (`stored` says), with what came before kept.
   */
  appendFetched(
    partial: PartialBlob,
    body: FetchedBody,
    hash: HashSession,
    o: { limit: number; headBytes: number; onProgress?: (bytes: number) => void },
  ): Promise<{ temp: TempBlob; stored: StoredBody }>;
}

export interface Presigning {
  /** A short-lived URL of a blob for direct download, or undefined where none can be made now. */
  presignedUrl(
    blake3Hex: string,
    opts: { fileName: string; contentType: string; expiresInSeconds: number; disposition?: 'inline' | 'attachment' },
  ): Promise<string | undefined>;
  /** A short-lived URL of a named object. */
  presignedObjectUrl(
    name: string,
    opts: { fileName: string; contentType: string; expiresInSeconds: number },
  ): Promise<string>;
}

export interface LocalFiles {
  /**
   * The blob's path on this machine's disk (libvips reads a path in place, without its bytes passing through the
   * JavaScript heap). BlobNotFoundError when there is no such blob.
   */
  localPath(blake3Hex: string): Promise<string>;
}

export interface SpaceReport {
  /** Bytes still free for new blobs. */
  freeBytes(): Promise<number>;
}

/** The kinds of derived objects a blob can have. */
/** What a partial blob's name may be (`openPartial`, `partialKey`): it becomes a file or key name as is. */
export const PARTIAL_NAME = /^[\w.-]{1,200}$/;

export const DERIVED_KINDS = ['thumbnail.webp'] as const;
export type DerivedKind = (typeof DERIVED_KINDS)[number];

export interface StoredBlob {
  readonly blake3: string;
  readonly size: number;
  /** Epoch milliseconds of the last write (mtime, S3 LastModified). */
  readonly lastModified: number;
}

export interface QuarantinedBlob {
  readonly blake3: string;
  /** The UTC day it was moved aside, `YYYY-MM-DD`. */
  readonly day: string;
  readonly size: number;
}

/** What a quarantine day may be: the folder or key segment it names. */
export const QUARANTINE_DAY = /^\d{4}-\d{2}-\d{2}$/;

export interface CommitOptions {
  /** Leave the temporary blob in place (the caller discards it later); see ContentService.precommit. */
  keepTemp?: boolean;
}

export interface TempBlob {
  readonly key: string;
  readonly size: number;
}

export interface PartialBlob {
  readonly key: string;
  /** Bytes already written by an earlier attempt. */
  readonly size: number;
  /** Reads what is already there (to rebuild hash state). */
  readExisting(): AsyncIterable<Buffer>;
  /** Appends from `source`, makes it durable, and returns the finished temporary blob. */
  append(source: AsyncIterable<Buffer>, opts?: { truncate?: boolean }): Promise<TempBlob>;
  /**
   * Cuts the stored bytes back to `size` (durably): bytes a crash left after the last acknowledged offset of a
   * resumable upload.
   */
  truncate(size: number): Promise<void>;
  discard(): Promise<void>;
  /**
   * A temporary blob with the part's bytes as they are now, the caller's to commit or discard, while the part itself
   * stays (on disk a second name of the same file: no copy, no fsync; on S3 a name for its segments that commit reads
   * and discard leaves alone). A resumable upload makes its asset from it, so a failed commit (the database away)
   * leaves the part to try again.
   */
  snapshot(): Promise<TempBlob>;
}

/** Names of named objects: one folder level, safe characters only. */
export function checkObjectName(name: string): string {
  if (!/^[\w-]{1,64}\/[\w-][\w.-]{0,199}$/.test(name)) throw new Error(`invalid object name ${name}`);
  return name;
}

/** S3's answers for a bucket or user over its quota (RGW: 403 QuotaExceeded) or a store out of space (507). */
const FULL_NAMES = new Set(['QuotaExceeded', 'InsufficientCapacity', 'InsufficientStorage']);

/** ENOSPC / EDQUOT (disk full, quota exceeded), or S3's equivalents, wherever they surface in a chain of causes. */
export function isStorageFull(err: unknown): boolean {
  return (
    someCause(err, 5, (o) => {
      if (o.code === 'ENOSPC' || o.code === 'EDQUOT') return true;
      if ((typeof o.name === 'string' && FULL_NAMES.has(o.name)) || o.$metadata?.httpStatusCode === 507) return true;
      const m = o.message;
      if (typeof m === 'string' && /\b(ENOSPC|EDQUOT)\b|no space left on device|quota exceeded/i.test(m)) return true;
      return undefined;
    }) ?? false
  );
}

// InternalError: also what S3 puts in the body of a 200 to CopyObject / CompleteMultipartUpload that failed after all.
const UNREACHABLE_NAMES = new Set([
  'TimeoutError',
  'ServiceUnavailable',
  'SlowDown',
  'RequestTimeout',
  'InternalError',
]);
const UNREACHABLE_MESSAGE =
  /^AWS SDK error wrapper for .*(\bE(CONNREFUSED|CONNRESET|TIMEDOUT|PIPE|HOSTUNREACH|NETUNREACH|NOTFOUND|AI_AGAIN)\b|TimeoutError|socket hang up)/;

/**
 * A store that cannot be reached (a connection refused, reset or timed out; a name that does not resolve) or that fails
 * on its side (any 5xx after the SDK's retries but 501/505: S3's 500 InternalError, 503 SlowDown, a gateway's 502 or
 * 504 in front of MinIO), wherever it surfaces in a chain of causes. The failure is the store's, not the request's.
 */
export function isStoreUnreachable(err: unknown): boolean {
  return (
    someCause(err, 5, (o) => {
      if (typeof o.code === 'string' && SOCKET_ERROR_CODES.has(o.code)) return true;
      if (typeof o.name === 'string' && UNREACHABLE_NAMES.has(o.name)) return true;
      const status = o.$metadata?.httpStatusCode ?? 0;
      // 501 / 505: a feature or protocol the store lacks, which no retry will change.
      if (status >= 500 && status !== 501 && status !== 505) return true;
      // What the SDK's retry step made of a failure that was not an Error of this realm ("AWS SDK error wrapper …").
      if (typeof o.message === 'string' && UNREACHABLE_MESSAGE.test(o.message)) return true;
      return undefined;
    }) ?? false
  );
}

/**
 * The one place where blob store failures become infra's errors (as `translateDbError` for the database): full
 * (ENOSPC, a quota) is StoreFullError, unreachable (a connection refused, reset or timed out; S3's 503) is
 * StoreUnavailableError; the transports' error table answers them. Anything else is returned unchanged.
 */
export function translateStoreError(err: unknown): unknown {
  if (err instanceof InfraError) return err;
  if (isStorageFull(err)) return new StoreFullError('blob store', { cause: err });
  if (isStoreUnreachable(err)) return new StoreUnavailableError('blob store', { cause: err });
  return err;
}

export { blobPath } from './blob-path';
