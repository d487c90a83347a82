import { LRUCache } from 'lru-cache';
import type { AssetService } from '../assets/asset.service';
import type { AssetCreateFields, Principal } from '../assets/asset.types';
import type { ContentService } from '../content/content.service';
import { deriveFromHead, METADATA_HEAD_BYTES } from '../content/derived-metadata';
import type { ContentDigest, ParsedHash } from '../content/hashing';
import { detectMime } from '../content/mime';
import { DomainError, isOwnStoreFailure, storeErrors } from '../errors';
import type { BlobStore, HashedWrites, PartialBlob } from '../../infra/blob-store/blob-store';
import type { HashSession, IngestWorkers } from '../../infra/blob-store/ingest-pool';
import type { Logger } from '../../infra/logger';
import type { UploadLease, UploadLeases } from './upload-lease';
import type { UploadRecord, UploadRepository } from './upload.repository';
import type { QuotaService } from '../quotas/quota.service';

/** What the Upload-Metadata of a tus upload means once validated: the multipart fields of POST /api/assets. */
export interface UploadFields {
  fields: AssetCreateFields;
  fileName: string | undefined;
  hash: ParsedHash | undefined;
}

// The first bytes: MIME sniffing and the derived metadata (`metadata`) read them, like a multipart upload.
const HEAD_BYTES = METADATA_HEAD_BYTES;
/** Hash states kept at once; an evicted one is rebuilt from the stored bytes on the next PATCH. */
const MAX_STATES = 256;

/**
 * Resumable uploads. Bytes go into a partial blob of the blob store (a file under .partial on disk,
 * segment objects on S3), hashed (BLAKE3 + SHA-256) as they arrive; the acknowledged offset in PostgreSQL only ever
 * moves after the bytes up to it are durable, so any instance can continue an upload and HEAD never reports more
 * than a crash keeps. The last byte makes the asset through AssetService.createFromIngested, as a multipart upload.
 *
 * The hash state of an upload is a HashSession of the ingest threads, kept between PATCHes: on disk the session's
 * worker also writes the part (as a multipart upload's bytes are written), so the request thread only receives;
 * on S3 the worker hashes while the request thread sends the segments.
 */
export class UploadService {
  /** The hash state of uploads this process received, by upload id; the least recently used one goes (closed). */
  private readonly states = new LRUCache<string, HashSession>({
    max: MAX_STATES,
    dispose: (state, _id, reason) => {
      if (reason === 'evict') state.close();
    },
  });

  /** The store's worker threads that hash and write a PATCH's bytes, where it has them (the disk store). */
  private readonly hashedWrites: HashedWrites | undefined;

  constructor(
    private readonly repo: UploadRepository,
    readonly leases: UploadLeases,
    private readonly blobs: BlobStore,
    private readonly hashers: IngestWorkers,
    private readonly content: ContentService,
    private readonly assets: AssetService,
    private readonly quotas: QuotaService,
    private readonly logger: Logger,
    private readonly opts: { expirySeconds: number },
  ) {
    this.hashedWrites = blobs.capabilities.hashedWrites;
  }

  get expiryMs(): number {
    return this.opts.expirySeconds * 1000;
  }

  get maxUploadBytes(): number {
    return this.content.maxUploadBytes;
  }

  /** The upload when `principal` owns it (another owner's upload does not exist for them). */
  async find(principal: Principal | undefined, id: string): Promise<UploadRecord | undefined> {
    const rec = await this.repo.find(id);
    if (!rec || (principal && rec.ownerId !== principal.ownerId)) return undefined;
    return rec;
  }

  async get(principal: Principal | undefined, id: string): Promise<UploadRecord> {
    const rec = await this.find(principal, id);
    if (!rec) throw new DomainError('NOT_FOUND', `upload ${id} not found`);
    return rec;
  }

  /**
   * Records a new upload (metadata already validated). Its part is made by the first PATCH (a missing part is an
   * empty one: `openPartial` answers size 0, and appending creates it), so creating an upload costs the store
   * nothing (`partialKey` names the part without a stat or a listing): on disk an empty file made here needed an
   * fsync, which waits for whatever journal commit is running (long after a large file was removed). An empty upload is
   * complete at creation and made into its asset at once: its (empty) part is made then, by `finish`.
   */
  async create(
    principal: Principal,
    id: string,
    length: number,
    metadata: Record<string, string | null>,
  ): Promise<UploadRecord> {
    if (length > this.content.maxUploadBytes) {
      throw new DomainError(
        'PAYLOAD_TOO_LARGE',
        `the content is larger than the limit of ${this.content.maxUploadBytes} bytes`,
        {
          max_bytes: this.content.maxUploadBytes,
        },
      );
    }
    // Upload-Length is known before any byte: an upload that cannot fit is refused at its creation. Its last PATCH
    // checks again, in the transaction of its asset (a limit changed meanwhile applies then).
    await this.quotas.precheck(principal.ownerId, length);
    const now = new Date();
    return this.repo.insert({
      id,
      ownerId: principal.ownerId,
      length,
      metadata,
      partKey: this.blobs.partialKey(partName(id)),
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.expiryMs),
    });
  }

  /**
   * Appends `source` at `offset` (the acknowledged offset), hashing it on the way; returns the new acknowledged
   * offset once the bytes are durable. A source that ends early (a dropped connection) still counts for what arrived.
   * Under `lease` (a PATCH's), the upload is the one the lease read, and the new offset is recorded when the lease is
   * let go (one statement for both), which the caller does before it answers; without, it is read and recorded here.
   */
  append(id: string, offset: number, source: AsyncIterable<Buffer>, lease?: UploadLease): Promise<number> {
    return storeErrors(this.appendTo(id, offset, source, lease));
  }

  private async appendTo(
    id: string,
    offset: number,
    source: AsyncIterable<Buffer>,
    lease?: UploadLease,
  ): Promise<number> {
    const rec = lease?.record.id === id ? lease.record : await this.get(undefined, id);
    if (rec.offset !== offset)
      throw new DomainError('INVALID_BODY', `Upload-Offset ${offset} is not the upload's offset ${rec.offset}`);
    if (rec.offset === rec.length) {
      // Complete (its part may already be the asset's blob): a repeated last PATCH, e.g. after its answer was lost.
      // Nothing to store; an empty body is answered as the last PATCH was (tusd does the same), any byte is too many.
      for await (const chunk of source) {
        if (chunk.length > 0) throw new DomainError('PAYLOAD_TOO_LARGE', 'the body goes past Upload-Length');
      }
      return rec.length;
    }
    let partial = await this.blobs.openPartial(partName(id));
    if (partial.size > rec.offset) {
      // Durable but never acknowledged (a crash between the append and the offset update): cut back.
      await partial.truncate(rec.offset);
      partial = await this.blobs.openPartial(partName(id));
    }
    if (partial.size < rec.offset) {
      // Acknowledged bytes that the store no longer has (removed behind the service's back): the upload cannot be
      // continued. It goes, so that the client's next HEAD is 404 and it starts again, rather than failing forever.
      this.logger.warn('an upload lost its stored bytes; it is removed', {
        upload_id: id,
        stored: partial.size,
        offset: rec.offset,
      });
      await this.removeParts(rec);
      throw new DomainError('NOT_FOUND', `upload ${id} not found: its stored bytes are gone, start a new upload`);
    }
    const state = await this.hashState(id, partial, rec.offset);
    const room = rec.length - rec.offset;
    let received = 0;
    const limited = async function* () {
      for await (const chunk of source) {
        if (received + chunk.length > room) {
          // A body without Content-Length that goes past Upload-Length: what fits is kept and the rest refused, as
          // tusd does (the upload is then complete; the next HEAD, or the last PATCH again, makes its asset).
          const fits = chunk.subarray(0, room - received);
          received += fits.length;
          if (fits.length > 0) yield fits;
          throw new DomainError('PAYLOAD_TOO_LARGE', 'the body goes past Upload-Length');
        }
        received += chunk.length;
        yield chunk;
      }
    };
    let failure: unknown;
    let size: number;
    try {
      // The request's chunks are used by nobody else (the tus server passes them on), so they move to the worker.
      size = this.hashedWrites
        ? (await this.hashedWrites.appendHashed(partial, limited(), state)).size
        : (await partial.append(state.hashing(limited()))).size;
    } catch (err) {
      failure = err;
      // What reached the part counts when it was made durable: on disk, unless the job of the part's worker failed
      // (a write or an fsync, or the worker died: the state is then unusable), in which case none of this PATCH's
      // bytes is known to be durable; likewise when the store cannot even say what it holds (it is unreachable).
      const stored = await this.blobs.openPartial(partName(id)).then(
        (p) => p.size,
        () => undefined,
      );
      size = stored === undefined || (this.hashedWrites && !state.usable) ? rec.offset : stored;
      // The bytes past it go now rather than at the next PATCH: on a full disk they are the space the resume needs.
      if (stored !== undefined && stored > size) {
        await partial
          .truncate(size)
          .catch((e: unknown) => this.logger.warn('could not cut an upload part back', { upload_id: id, err: e }));
      }
    }
    if (!state.usable || size !== state.size) this.forget(id);
    const acknowledged = Math.min(size, rec.length);
    if (lease?.record.id === id) lease.recordOffset(acknowledged);
    else await this.repo.setOffset(id, acknowledged);
    if (failure) throw failure;
    return acknowledged;
  }

  /**
   * After the last byte: makes the asset exactly as a multipart upload would (dedupe, id idempotency, hash check,
   * preview rules) and records it on the upload. Idempotent: a finished upload answers its asset again.
   */
  async finish(principal: Principal, id: string, parsed: UploadFields): Promise<{ assetId: string; created: boolean }> {
    // The final PATCH's completion and a HEAD's may meet (on any instance): one makes the asset, the other reads it.
    const lease = await this.leases.acquire(id, { ownerId: principal.ownerId });
    if (!lease) throw new DomainError('NOT_FOUND', `upload ${id} not found`);
    try {
      return await storeErrors(this.finishLeased(principal, lease.record, parsed));
    } finally {
      await lease.release();
    }
  }

  private async finishLeased(
    principal: Principal,
    rec: UploadRecord,
    parsed: UploadFields,
  ): Promise<{ assetId: string; created: boolean }> {
    const id = rec.id;
    if (rec.assetId) return { assetId: rec.assetId, created: rec.assetCreated === true };
    if (rec.offset !== rec.length) throw new DomainError('INVALID_BODY', 'the upload is not complete');
    const partial = await this.blobs.openPartial(partName(id));
    // An empty upload's part is made here, after its row as every part is (a creation that fails then keeps nothing:
    // the router removes it), so a part never exists without its upload's row, whatever crashes when.
    if (rec.length === 0) await partial.append(empty());
    const state = await this.hashState(id, partial, rec.length);
    this.states.delete(id);
    const digest: ContentDigest = await state.digest();
    const head = await readHead(partial, Math.min(HEAD_BYTES, rec.length));
    // The asset is made from a snapshot of the part: createFromIngested consumes what it is given, whatever happens,
    // and the part must outlive a failure that is not the upload's fault.
    const snapshot = await partial.snapshot();
    try {
      const declared = parsed.hash;
      if (declared && (declared.algorithm === 'blake3' ? digest.blake3 : digest.sha256) !== declared.hex) {
        await this.blobs.discard(snapshot);
        throw new DomainError('HASH_MISMATCH', 'the uploaded bytes do not match the hash field');
      }
      const sniffedMime = head.length > 0 ? detectMime(head, undefined) : undefined;
      const ingested = {
        temp: snapshot,
        digest,
        sniffedMime,
        derived: deriveFromHead(head, sniffedMime, undefined),
      };
      const result = await this.assets.createFromIngested(principal, parsed.fields, ingested, {
        fileName: parsed.fileName,
      });
      await this.repo.setAsset(id, result.asset.id, result.created);
      // Recorded first: a crash here leaves a finished upload's part, which the expiry sweep removes.
      await this.blobs.discard({ key: partial.key, size: rec.length });
      return { assetId: result.asset.id, created: result.created };
    } catch (err) {
      // Nothing of a refused upload is kept (as with a refused multipart upload). After a failure that is not the
      // upload's (the database away, the store full or failing) its part stays, and the next HEAD (or the last PATCH
      // again) finishes it.
      if (err instanceof DomainError && !isOwnStoreFailure(err)) await this.removeParts(rec).catch(() => undefined);
      throw err;
    }
  }

  /** DELETE (termination): the part and the record go. */
  async remove(principal: Principal | undefined, id: string): Promise<void> {
    const rec = await this.get(principal, id);
    await this.removeParts(rec);
  }

  /** Removes expired uploads (unfinished ones with their parts; finished ones only kept for their HEAD answer). */
  async sweepExpired(now = new Date()): Promise<number> {
    let removed = 0;
    for (;;) {
      const batch = await this.repo.findExpired(now, 100);
      let left = 0;
      for (const rec of batch) {
        // Under the upload's lease: a PATCH begun before the expiry and still writing keeps its upload until it is
        // answered (else it would make a part after the sweep, which nothing would remove); the next sweep takes it.
        const free = await this.leases.takeIfFree(rec.id);
        if (!free) {
          left++;
          continue;
        }
        await this.removeParts(free);
        removed++;
      }
      if (batch.length < 100 || left === batch.length) return removed;
    }
  }

  /**
   * The upload's row, then its part: whatever fails or crashes between the two leaves a part without a row (which
   * nothing reads, and the temporary sweeper removes once idle for 24 h), never a row whose offset names bytes that
   * are gone (its HEAD would report them, and every PATCH would fail).
   */
  private async removeParts(rec: UploadRecord): Promise<void> {
    this.forget(rec.id);
    await this.repo.delete(rec.id);
    await this.blobs
      .openPartial(partName(rec.id))
      .then((partial) => partial.discard())
      .catch((err: unknown) =>
        this.logger.warn("could not remove a removed upload's part; the temporary sweeper will", {
          upload_id: rec.id,
          err,
        }),
      );
  }

  /** The hash state after the first `size` stored bytes: this process's, or rebuilt by re-reading the part once. */
  private async hashState(id: string, partial: PartialBlob, size: number): Promise<HashSession> {
    const known = this.states.get(id);
    if (known && known.usable && known.size === size) return known;
    this.forget(id);
    const state = this.hashers.session();
    if (size > 0) {
      this.logger.info('rebuilding the hash state of a resumed upload', { upload_id: id, bytes: size });
      const job = state.append(undefined);
      let fed = 0;
      try {
        for await (const chunk of partial.readExisting()) {
          const c = chunk.subarray(0, size - fed);
          fed += c.length;
          const wait = job.write(c);
          if (wait) await wait;
          if (fed >= size) break;
        }
        await job.finish();
      } catch (err) {
        await job.abort();
        state.close();
        throw err;
      }
      if (state.size !== size) {
        state.close();
        throw new Error(`upload ${id}: read ${state.size} stored bytes, expected ${size}`);
      }
    }
    this.states.set(id, state);
    return state;
  }

  private forget(id: string): void {
    this.states.get(id)?.close();
    this.states.delete(id);
  }
}

/** The first `n` bytes of the stored part (MIME sniffing and the derived metadata read them). */
async function readHead(partial: PartialBlob, n: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let len = 0;
  if (n > 0) {
    for await (const chunk of partial.readExisting()) {
      parts.push(chunk.subarray(0, n - len));
      len += Math.min(chunk.length, n - len);
      if (len >= n) break;
    }
  }
  return Buffer.concat(parts, len);
}

export const partName = (id: string): string => `upload-${id}`;

async function* empty(): AsyncIterable<Buffer> {}
