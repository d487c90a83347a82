import crypto from 'node:crypto';
import http from 'node:http';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCopyCommand,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { StorageConfig } from '../../config';
import { StoreFullError } from '../errors';
import { contentDisposition } from '../content-disposition';
import {
  BlobNotFoundError,
  blobPath,
  translateStoreError,
  checkObjectName,
  DERIVED_KINDS,
  PARTIAL_NAME,
  QUARANTINE_DAY,
  type BlobStore,
  type BlobStoreCapabilities,
  type CommitOptions,
  type DerivedKind,
  type PartialBlob,
  type Presigning,
  type QuarantinedBlob,
  type StoredBlob,
  type TempBlob,
} from './blob-store';
import { StreamUpload } from './s3-upload';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** Connecting to the store; then from a request's start to its answer's head (sending a part or a copy included). */
const CONNECT_TIMEOUT_MS = 5_000;
const ANSWER_TIMEOUT_MS = 120_000;
/** A connection silent half-way through a body, either way (S3_TIMEOUT_MS unless configured). */
const SILENCE_TIMEOUT_MS = 120_000;

export interface S3BlobStoreOptions {
  /** Multipart upload part size; memory per upload is about (queueSize + 1) × partSize. */
  partSize?: number;
  /** Parts uploaded in parallel per upload. */
  queueSize?: number;
  /** Largest object copied with one CopyObject (S3's limit is 5 GiB); larger ones use UploadPartCopy. */
  maxSingleCopyBytes?: number;
  /** Part size of a multipart copy. */
  copyPartSize?: number;
  copyConcurrency?: number;
  /** Size of the objects a resumable partial is made of; a crash loses at most the segment in flight. */
  segmentSize?: number;
  /** Extra client settings (tests pass credentials). */
  client?: Partial<S3ClientConfig>;
}

type S3Config = Extract<StorageConfig, { backend: 's3' }>;
interface Source {
  key: string;
  size: number;
}

/** The key suffix of a partial's snapshot (PartialBlob.snapshot): not an object, never a segment's name (16 digits). */
const SNAPSHOT = 'snapshot';

/**
 * S3-compatible blob store (AWS S3, MinIO, R2, Ceph RGW). Layout under `S3_PREFIX`:
 * - `ab/cd/<hex>`: content, written once by a server-side copy after the hash is known;
 * - `.tmp/<uuid>`: uploads in progress, streamed with a multipart upload (bounded memory: queueSize × partSize);
 * - `.partial/<name>/<offset>`: resumable downloads as a run of segment objects (S3 objects cannot be appended to,
 *   and the parts of an unfinished multipart upload cannot be read back), so any instance can resume them;
 * - `.orphans/<day>/ab/cd/<hex>`: blobs moved aside (copied there, then deleted; S3 has no rename), removed for good
 *   only by `purgeQuarantined` once their retention is over.
 *
 * Checksums: the client only adds request checksums where an operation requires them and does not validate response
 * checksums unless asked (`WHEN_REQUIRED`); several S3-compatible stores (Ceph RGW 16 among them) reject the
 * aws-chunked CRC trailers the SDK otherwise sends by default. Integrity is ours: every byte is hashed (BLAKE3 and
 * SHA-256) on the way in.
 */
export class S3BlobStore implements BlobStore, Presigning {
  readonly kind = 's3' as const;
  /** Presigned URLs; blobs are read through `read` (no local paths), hashed on the request thread. */
  readonly capabilities: BlobStoreCapabilities = { presign: this };
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly base: string;
  private readonly o: Required<Omit<S3BlobStoreOptions, 'client'>>;
  /**
   * Multipart uploads whose abort failed (the store went away mid-upload): aborted again once it answers (ping, the
   * next upload), so an outage leaves no incomplete upload behind; the sweeper remains the last resort after a crash.
   */
  private readonly unaborted = new Map<string, { key: string; uploadId: string }>();
  /** A write was refused for lack of space (a bucket quota, a full store) and none has succeeded since: ping probes. */
  private full = false;

  constructor(config: S3Config, options: S3BlobStoreOptions = {}) {
    this.bucket = config.bucket;
    this.base = config.prefix ? `${config.prefix}/` : '';
    this.o = {
      partSize: options.partSize ?? 8 * MiB,
      queueSize: options.queueSize ?? 4,
      maxSingleCopyBytes: options.maxSingleCopyBytes ?? 5 * GiB,
      copyPartSize: options.copyPartSize ?? 512 * MiB,
      copyConcurrency: options.copyConcurrency ?? 4,
      segmentSize: options.segmentSize ?? 32 * MiB,
    };
    this.client = new S3Client({
      region: config.region,
      ...(config.endpoint ? { endpoint: config.endpoint } : {}),
      forcePathStyle: config.forcePathStyle,
      ...(config.credentials ? { credentials: config.credentials } : {}),
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // A store that cannot be reached fails within seconds; one that does not answer a request within two minutes
      // (its body sent), or stops sending or taking a body half-way for S3_TIMEOUT_MS, fails rather than holding the
      // request (and the client's socket) for ever. A client that stops reading content pauses our reads from the
      // store too; SEND_IDLE_TIMEOUT_MS (shorter by default) cuts that client first.
      requestHandler: {
        connectionTimeout: CONNECT_TIMEOUT_MS,
        requestTimeout: ANSWER_TIMEOUT_MS,
        throwOnRequestTimeout: true,
        socketTimeout: config.timeoutMs ?? SILENCE_TIMEOUT_MS,
        // The SDK's default agent's settings (keep-alive, 50 sockets).
        httpAgent: new http.Agent({ keepAlive: true, maxSockets: 50 }),
      },
      ...options.client,
    });
    // Every operation, after the SDK's own retries: a store that cannot be reached is the client's 503 (as a database
    // that cannot be), not an internal error.
    this.client.middlewareStack.add(
      (next) => async (args) => {
        try {
          return await next(args);
        } catch (err) {
          const translated = translateStoreError(err);
          if (translated instanceof StoreFullError) this.full = true;
          throw translated;
        }
      },
      { step: 'initialize', name: 'storeUnavailable', priority: 'high' },
    );
    // Bodies go unsigned (`UNSIGNED-PAYLOAD`, as AWS's own tools do over TLS): SigV4 would otherwise hash every part
    // with SHA-256 once more on the event loop, a second pass over the bytes the upload already hashed.
    this.client.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { body?: unknown; headers?: Record<string, string> };
        if (
          request.headers &&
          request.body !== undefined &&
          ArrayBuffer.isView(request.body) &&
          request.body.byteLength > 0
        ) {
          request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
        }
        return next(args);
      },
      { step: 'build', name: 'unsignedPayload' },
    );
  }

  async init(): Promise<void> {
    // Nothing to prepare: leftovers of crashed instances are the sweeper's (sweepTemps), as any instance may own them.
  }

  async writeTemp(source: AsyncIterable<Buffer>): Promise<TempBlob> {
    const key = `${this.base}.tmp/${crypto.randomUUID()}`;
    const size = await this.uploadObject(key, source, this.o.queueSize);
    return { key, size };
  }

  partialKey(name: string): string {
    if (!PARTIAL_NAME.test(name)) throw new Error(`invalid partial name ${name}`);
    return `${this.base}.partial/${name}/`;
  }

  async openPartial(name: string): Promise<PartialBlob> {
    const dir = this.partialKey(name);
    const segments = await this.segmentsOf(dir);
    return {
      key: dir,
      size: total(segments),
      readExisting: () => this.readSources(segments),
      append: (source, opts) => this.appendPartial(dir, source, opts?.truncate ?? false),
      truncate: (size) => this.truncatePartial(dir, size),
      discard: () => this.removePartial(dir),
      // A name for the part's segments as they are (objects are not appended to, and the caller holds the upload's
      // lease): commit reads them, discard leaves them to the part's own discard.
      snapshot: async () => ({ key: `${dir}${SNAPSHOT}`, size: total(segments) }),
    };
  }

  async commit(temp: TempBlob, blake3Hex: string, opts: CommitOptions = {}): Promise<void> {
    const dest = this.contentKey(blake3Hex);
    // Content-addressed: an existing object under this key holds the same bytes (objects appear whole on S3).
    if (!(await this.exists(blake3Hex))) {
      const sources = this.isPartialKey(temp.key)
        ? await this.segmentsOf(temp.key)
        : this.isSnapshotKey(temp.key)
          ? await this.segmentsOf(temp.key.slice(0, -SNAPSHOT.length))
          : [{ key: this.tempKey(temp.key), size: temp.size }];
      await this.copyInto(sources, dest);
    }
    if (!opts.keepTemp) await this.discard(temp);
  }

  async discard(temp: TempBlob): Promise<void> {
    if (this.isSnapshotKey(temp.key)) return; // the part's, which stays (PartialBlob.snapshot)
    if (this.isPartialKey(temp.key)) {
      await this.removePartial(temp.key);
      return;
    }
    await this.deleteKey(this.tempKey(temp.key));
  }

  async exists(blake3Hex: string): Promise<boolean> {
    return (await this.headSize(this.contentKey(blake3Hex))) !== undefined;
  }

  async read(blake3Hex: string, range?: { start: number; end: number }): Promise<Readable> {
    try {
      const res = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: this.contentKey(blake3Hex),
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      return res.Body as Readable;
    } catch (err) {
      if (isNotFound(err)) throw new BlobNotFoundError(blake3Hex);
      throw err;
    }
  }

  async quarantine(blake3Hex: string, day: string): Promise<void> {
    const key = this.contentKey(blake3Hex);
    if (await this.moveWithDerived(key, this.quarantineKey(blake3Hex, day))) return;
    // No blob (an in-place content, contract 6.4): its derived objects go, as FsBlobStore.quarantine says.
    for (const kind of DERIVED_KINDS) await this.deleteKey(`${key}.${kind}`);
  }

  async restore(blake3Hex: string): Promise<boolean> {
    const dest = this.contentKey(blake3Hex);
    for (const day of (await this.quarantineDays()).reverse()) {
      if (await this.moveWithDerived(this.quarantineKey(blake3Hex, day), dest)) return true;
    }
    return false;
  }

  async *listQuarantined(): AsyncIterable<QuarantinedBlob> {
    const prefix = `${this.base}.orphans/`;
    const re = /^(\d{4}-\d{2}-\d{2})\/[0-9a-f]{2}\/[0-9a-f]{2}\/([0-9a-f]{64})$/;
    for await (const obj of this.list(prefix)) {
      const m = re.exec(obj.key.slice(prefix.length));
      if (m) yield { blake3: m[2]!, day: m[1]!, size: obj.size };
    }
  }

  async purgeQuarantined(blake3Hex: string, day: string): Promise<void> {
    const key = this.quarantineKey(blake3Hex, day);
    for (const kind of DERIVED_KINDS) await this.deleteKey(`${key}.${kind}`);
    await this.deleteKey(key);
  }

  /**
   * Copies the blob at `from` and its derived objects to `to`, then deletes the originals, the blob's copy last among
   * the copies and its original last among the deletes: until the blob's own delete, `from` is still whole; after a
   * crash in between both names hold the same bytes. Whether there was a blob at `from`.
   */
  private async moveWithDerived(from: string, to: string): Promise<boolean> {
    const size = await this.headSize(from);
    if (size === undefined) return false;
    for (const kind of DERIVED_KINDS) {
      const derivedSize = await this.headSize(`${from}.${kind}`);
      if (derivedSize !== undefined)
        await this.copyInto([{ key: `${from}.${kind}`, size: derivedSize }], `${to}.${kind}`);
    }
    await this.copyInto([{ key: from, size }], to);
    for (const kind of DERIVED_KINDS) await this.deleteKey(`${from}.${kind}`);
    await this.deleteKey(from);
    return true;
  }

  /** The days of the quarantine, oldest first (one LIST with a delimiter: the day prefixes only). */
  private async quarantineDays(): Promise<string[]> {
    const prefix = `${this.base}.orphans/`;
    const days: string[] = [];
    let token: string | undefined;
    do {
      const res = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, Delimiter: '/', ContinuationToken: token }),
      );
      for (const p of res.CommonPrefixes ?? []) {
        const day = p.Prefix?.slice(prefix.length, -1);
        if (day && QUARANTINE_DAY.test(day)) days.push(day);
      }
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
    return days.sort();
  }

  private quarantineKey(blake3Hex: string, day: string): string {
    if (!QUARANTINE_DAY.test(day)) throw new Error(`invalid quarantine day ${day}`);
    return `${this.base}.orphans/${day}/${this.contentKey(blake3Hex).slice(this.base.length)}`;
  }

  async putDerived(blake3Hex: string, kind: DerivedKind, bytes: Buffer): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: `${this.contentKey(blake3Hex)}.${kind}`, Body: bytes }),
    );
  }

  async readDerived(blake3Hex: string, kind: DerivedKind): Promise<Buffer | undefined> {
    try {
      const res = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: `${this.contentKey(blake3Hex)}.${kind}` }),
      );
      return Buffer.from(await res.Body!.transformToByteArray());
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async sweepTemps(olderThanMs: number): Promise<number> {
    const cutoff = Date.now() - olderThanMs;
    let removed = 0;
    for await (const obj of this.list(`${this.base}.tmp/`)) {
      if (obj.lastModified < cutoff) {
        await this.deleteKey(obj.key);
        removed++;
      }
    }
    // A partial is stale when its newest segment is: an active download keeps adding segments.
    const partials = new Map<string, { newest: number; keys: string[] }>();
    for await (const obj of this.list(`${this.base}.partial/`)) {
      const dir = obj.key.slice(0, obj.key.lastIndexOf('/') + 1);
      const p = partials.get(dir) ?? { newest: 0, keys: [] };
      p.newest = Math.max(p.newest, obj.lastModified);
      p.keys.push(obj.key);
      partials.set(dir, p);
    }
    for (const p of partials.values()) {
      if (p.newest >= cutoff) continue;
      for (const key of p.keys) await this.deleteKey(key);
      removed++;
    }
    for (const u of await this.multipartUploads(this.base)) {
      if (u.initiated < cutoff) {
        await this.abortUpload(u.key, u.uploadId);
        removed++;
      }
    }
    return removed;
  }

  async *listBlobs(olderThanMs: number, now = Date.now()): AsyncIterable<string> {
    const cutoff = now - olderThanMs;
    for await (const b of this.listStored()) if (b.lastModified < cutoff) yield b.blake3;
  }

  async *listStored(): AsyncIterable<StoredBlob> {
    const re = /^[0-9a-f]{2}\/[0-9a-f]{2}\/([0-9a-f]{64})$/;
    for await (const obj of this.list(this.base)) {
      const m = re.exec(obj.key.slice(this.base.length));
      if (m) yield { blake3: m[1]!, size: obj.size, lastModified: obj.lastModified };
    }
  }

  async presignedUrl(
    blake3Hex: string,
    opts: { fileName: string; contentType: string; expiresInSeconds: number; disposition?: 'inline' | 'attachment' },
  ): Promise<string> {
    const cmd = new GetObjectCommand({
      Bucket: this.bucket,
      Key: this.contentKey(blake3Hex),
      ResponseContentType: opts.contentType,
      ResponseContentDisposition: contentDisposition(opts.disposition ?? 'attachment', opts.fileName),
    });
    return getSignedUrl(this.client, cmd, { expiresIn: opts.expiresInSeconds });
  }

  async writeObject(name: string, source: AsyncIterable<Buffer>): Promise<number> {
    // Objects appear whole on S3 (a multipart upload is visible once completed); a failure aborts and removes it.
    return this.uploadObject(this.objectKey(name), source, this.o.queueSize);
  }

  async readObject(name: string, range?: { start: number; end: number }): Promise<Readable> {
    const res = await this.client.send(
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: this.objectKey(name),
        ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
      }),
    );
    return res.Body as Readable;
  }

  objectSize(name: string): Promise<number | undefined> {
    return this.headSize(this.objectKey(name));
  }

  async deleteObject(name: string): Promise<void> {
    await this.deleteKey(this.objectKey(name));
  }

  async presignedObjectUrl(
    name: string,
    opts: { fileName: string; contentType: string; expiresInSeconds: number },
  ): Promise<string> {
    const cmd = new GetObjectCommand({
      Bucket: this.bucket,
      Key: this.objectKey(name),
      ResponseContentType: opts.contentType,
      ResponseContentDisposition: contentDisposition('attachment', opts.fileName),
    });
    return getSignedUrl(this.client, cmd, { expiresIn: opts.expiresInSeconds });
  }

  private objectKey(name: string): string {
    return `${this.base}.objects/${checkObjectName(name)}`;
  }

  async ping(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    if (this.full) await this.probeSpace();
    await this.retryAborts();
  }

  /**
   * Whether the store takes a write at all (one byte, removed at once): throws StoreFullError while it refuses
   * for lack of space, so /readyz names `storage` until space is freed, and then clears the flag by itself.
   */
  private async probeSpace(): Promise<void> {
    const key = `${this.base}.tmp/space-probe-${crypto.randomUUID()}`;
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: Buffer.alloc(1) }));
    this.full = false;
    await this.deleteKey(key);
  }

  /** Aborts the uploads whose abort failed earlier; one that fails again stays for the next time. */
  private async retryAborts(): Promise<void> {
    for (const [id, u] of this.unaborted) {
      this.unaborted.delete(id);
      await this.abortUpload(u.key, u.uploadId);
    }
  }

  /** Object key of a blob (tests and the orphan sweeper). */
  contentKey(blake3Hex: string): string {
    if (!/^[a-f0-9]{64}$/.test(blake3Hex)) throw new Error(`invalid blake3 hex ${blake3Hex}`);
    return this.base + blobPath(blake3Hex);
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  // ---- uploads and copies ----

  /**
   * Streams `body` to `key` (multipart above one part) and resolves with its size; on failure aborts the upload and
   * removes the key.
   */
  private async uploadObject(key: string, body: AsyncIterable<Buffer>, queueSize: number): Promise<number> {
    const upload = new StreamUpload(this.client, this.bucket, key, { partSize: this.o.partSize, queueSize });
    if (this.unaborted.size > 0) void this.retryAborts();
    try {
      await upload.run(body);
      this.full = false;
      return upload.size;
    } catch (err) {
      // An abort that fails is retried (retryAborts), and the sweeper is the last resort.
      if (upload.uploadId) await this.abortUpload(key, upload.uploadId);
      await this.deleteKey(key).catch(() => undefined);
      // A store that refuses a body for lack of space (RGW's 403 QuotaExceeded) answers before reading it and closes:
      // the client mostly sees the connection cut (EPIPE) instead of that answer, so a cut asks the store once more.
      if (isCut(err) && (await this.refusesWrites())) throw new StoreFullError('blob store', { cause: err });
      throw err;
    }
  }

  /** Server-side copy of the concatenation of `sources` to `dest`; atomic: `dest` appears whole or not at all. */
  private async copyInto(sources: Source[], dest: string): Promise<void> {
    const nonEmpty = sources.filter((s) => s.size > 0);
    if (nonEmpty.length === 0) {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: dest, Body: Buffer.alloc(0) }));
      return;
    }
    if (nonEmpty.length === 1 && nonEmpty[0]!.size <= this.o.maxSingleCopyBytes) {
      await this.client.send(
        new CopyObjectCommand({ Bucket: this.bucket, Key: dest, CopySource: this.copySource(nonEmpty[0]!.key) }),
      );
      return;
    }
    // Multipart copy: every part but the last must be >= 5 MiB (segments are, by construction); at most 10,000 parts.
    const sum = total(nonEmpty);
    const partSize = Math.max(this.o.copyPartSize, Math.ceil(sum / 9_000));
    const parts: { source: Source; start: number; end: number; n: number }[] = [];
    for (const source of nonEmpty) {
      for (let start = 0; start < source.size; start += partSize) {
        parts.push({ source, start, end: Math.min(source.size, start + partSize) - 1, n: parts.length + 1 });
      }
    }
    if (parts.length > 10_000) throw new Error(`cannot copy ${parts.length} parts in one multipart upload`);
    const { UploadId } = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: dest }));
    try {
      const etags: string[] = [];
      let next = 0;
      const worker = async () => {
        while (next < parts.length) {
          const p = parts[next++]!;
          const res = await this.client.send(
            new UploadPartCopyCommand({
              Bucket: this.bucket,
              Key: dest,
              UploadId,
              PartNumber: p.n,
              CopySource: this.copySource(p.source.key),
              CopySourceRange: `bytes=${p.start}-${p.end}`,
            }),
          );
          etags[p.n - 1] = res.CopyPartResult!.ETag!;
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.o.copyConcurrency, parts.length) }, worker));
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: dest,
          UploadId,
          MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        }),
      );
    } catch (err) {
      await this.abortUpload(dest, UploadId!);
      throw err;
    }
  }

  /** Whether a one-byte write is refused for lack of space (any other outcome: no). */
  private async refusesWrites(): Promise<boolean> {
    try {
      await this.probeSpace();
      return false;
    } catch (err) {
      return err instanceof StoreFullError;
    }
  }

  private copySource(key: string): string {
    return `${this.bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
  }

  // ---- partials (resumable downloads) ----

  /** The contiguous run of segments from offset 0; anything after a gap is ignored (and replaced on append). */
  private async segmentsOf(dir: string): Promise<Source[]> {
    const found: { offset: number; key: string; size: number }[] = [];
    for await (const obj of this.list(dir)) {
      const name = obj.key.slice(dir.length);
      if (/^\d{16}$/.test(name)) found.push({ offset: Number(name), key: obj.key, size: obj.size });
    }
    found.sort((a, b) => a.offset - b.offset);
    const out: Source[] = [];
    let at = 0;
    for (const s of found) {
      if (s.offset !== at || s.size === 0) break;
      out.push({ key: s.key, size: s.size });
      at += s.size;
    }
    return out;
  }

  private async appendPartial(dir: string, source: AsyncIterable<Buffer>, truncate: boolean): Promise<TempBlob> {
    if (truncate) await this.removePartial(dir);
    const segments = truncate ? [] : await this.segmentsOf(dir);
    let offset = total(segments);
    let input = source;
    // Only the last segment may be short (multipart copy needs >= 5 MiB parts): a short one is rewritten with the new
    // bytes after it, under the same key, which S3 replaces atomically when the new object completes.
    const last = segments.at(-1);
    if (last && last.size < this.o.segmentSize) {
      offset -= last.size;
      input = concat(this.readSources([last]), source);
    }
    // Segments past a gap (another writer's leftovers) would be misread later; they go before new ones are written.
    for await (const obj of this.list(dir)) {
      const name = obj.key.slice(dir.length);
      if (!/^\d{16}$/.test(name) || Number(name) > offset) await this.deleteKey(obj.key);
    }
    const reader = new ByteReader(input);
    for (;;) {
      const first = await reader.read(this.o.segmentSize);
      if (!first) break;
      const segmentSize = this.o.segmentSize;
      let written = 0;
      const body = async function* () {
        written = first.length;
        yield first;
        while (written < segmentSize) {
          const b = await reader.read(segmentSize - written);
          if (!b) return;
          written += b.length;
          yield b;
        }
      };
      // Kept at queue size 2: downloads are network-bound, and many may run at once.
      await this.uploadObject(`${dir}${String(offset).padStart(16, '0')}`, body(), 2);
      offset += written;
    }
    return { key: dir, size: offset };
  }

  /** Segments wholly past `size` are deleted; the one that straddles it is rewritten with its first bytes only. */
  private async truncatePartial(dir: string, size: number): Promise<void> {
    let at = 0;
    for (const s of await this.segmentsOf(dir)) {
      const start = at;
      at += s.size;
      if (start >= size) await this.deleteKey(s.key);
      else if (at > size) {
        const res = await this.client.send(
          new GetObjectCommand({ Bucket: this.bucket, Key: s.key, Range: `bytes=0-${size - start - 1}` }),
        );
        const head = Buffer.from(await res.Body!.transformToByteArray());
        await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: s.key, Body: head }));
      }
    }
  }

  private async removePartial(dir: string): Promise<void> {
    for await (const obj of this.list(dir)) await this.deleteKey(obj.key);
    for (const u of await this.multipartUploads(dir)) await this.abortUpload(u.key, u.uploadId);
  }

  private async *readSources(sources: Source[]): AsyncIterable<Buffer> {
    for (const s of sources) {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: s.key }));
      for await (const chunk of res.Body as Readable) yield chunk as Buffer;
    }
  }

  // ---- small helpers ----

  private isPartialKey(key: string): boolean {
    return key.startsWith(`${this.base}.partial/`) && key.endsWith('/') && !key.includes('..');
  }

  private isSnapshotKey(key: string): boolean {
    return key.startsWith(`${this.base}.partial/`) && key.endsWith(`/${SNAPSHOT}`) && !key.includes('..');
  }

  private tempKey(key: string): string {
    if (!key.startsWith(`${this.base}.tmp/`) || key.includes('..')) throw new Error(`not a temporary blob: ${key}`);
    return key;
  }

  private async headSize(key: string): Promise<number | undefined> {
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return res.ContentLength ?? 0;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async deleteKey(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  private async abortUpload(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }));
    } catch (err) {
      if (!isNotFound(err)) this.unaborted.set(uploadId, { key, uploadId });
    }
  }

  private async *list(prefix: string): AsyncIterable<{ key: string; size: number; lastModified: number }> {
    let token: string | undefined;
    do {
      const res = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const o of res.Contents ?? []) {
        if (o.Key) yield { key: o.Key, size: o.Size ?? 0, lastModified: o.LastModified?.getTime() ?? 0 };
      }
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
  }

  private async multipartUploads(prefix: string): Promise<{ key: string; uploadId: string; initiated: number }[]> {
    const out: { key: string; uploadId: string; initiated: number }[] = [];
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      const res = await this.client.send(
        new ListMultipartUploadsCommand({
          Bucket: this.bucket,
          Prefix: prefix,
          KeyMarker: keyMarker,
          UploadIdMarker: uploadIdMarker,
        }),
      );
      for (const u of res.Uploads ?? []) {
        if (u.Key && u.UploadId) out.push({ key: u.Key, uploadId: u.UploadId, initiated: u.Initiated?.getTime() ?? 0 });
      }
      keyMarker = res.IsTruncated ? res.NextKeyMarker : undefined;
      uploadIdMarker = res.IsTruncated ? res.NextUploadIdMarker : undefined;
    } while (keyMarker);
    return out;
  }
}

/** Reads an async iterable in pieces of at most `max` bytes, keeping the rest of a chunk for the next read. */
class ByteReader {
  private readonly it: AsyncIterator<Buffer>;
  private rest: Buffer | undefined;

  constructor(source: AsyncIterable<Buffer>) {
    this.it = source[Symbol.asyncIterator]();
  }

  async read(max: number): Promise<Buffer | undefined> {
    for (;;) {
      let buf = this.rest;
      this.rest = undefined;
      if (!buf) {
        const r = await this.it.next();
        if (r.done) return undefined;
        buf = r.value;
      }
      if (buf.length === 0) continue;
      if (buf.length > max) {
        this.rest = buf.subarray(max);
        return buf.subarray(0, max);
      }
      return buf;
    }
  }
}

async function* concat(...sources: AsyncIterable<Buffer>[]): AsyncIterable<Buffer> {
  for (const s of sources) yield* s;
}

const total = (sources: Source[]): number => sources.reduce((n, s) => n + s.size, 0);

/** A connection cut while the request was written (EPIPE, ECONNRESET), wherever it surfaces in a chain of causes. */
function isCut(err: unknown): boolean {
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    const o = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (o.code === 'EPIPE' || o.code === 'ECONNRESET') return true;
    if (typeof o.message === 'string' && /\b(EPIPE|ECONNRESET)\b/.test(o.message)) return true;
    e = o.cause;
  }
  return false;
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return (
    e?.name === 'NotFound' ||
    e?.name === 'NoSuchKey' ||
    e?.name === 'NoSuchUpload' ||
    e?.$metadata?.httpStatusCode === 404
  );
}
