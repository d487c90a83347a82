import type { AssetService } from '../assets/asset.service';
import type { AssetCreateFields, Principal } from '../assets/asset.types';
import type { ContentService } from '../content/content.service';
import { deriveFromHead, METADATA_HEAD_BYTES } from '../content/derived-metadata';
import { DualHasher, type ContentDigest, type ParsedHash } from '../content/hashing';
import { detectMime } from '../content/mime';
import { DomainError } from '../errors';
import type { BlobStore, PartialBlob } from '../../infra/blob-store/blob-store';
import type { Logger } from '../../infra/logger';
import type { UploadLeases } from './upload-lease';
import type { UploadRecord, UploadRepository } from './upload.repository';

/** What the Upload-Metadata of a tus upload means once validated: the multipart fields of POST /api/assets. */
export interface UploadFields {
  fields: AssetCreateFields;
  fileName: string | undefined;
  hash: ParsedHash | undefined;
}

/** In-memory hash state of an upload this process is receiving; rebuilt from the stored part when missing. */
interface HashState {
  hasher: DualHasher;
  head: Buffer;
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
 */
export class UploadService {
  private readonly states = new Map<string, HashState>();

  constructor(
    private readonly repo: UploadRepository,
    readonly leases: UploadLeases,
    private readonly blobs: BlobStore,
    private readonly content: ContentService,
    private readonly assets: AssetService,
    private readonly logger: Logger,
    private readonly opts: { expirySeconds: number },
  ) {}

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

  /** Records a new upload (metadata already validated) and creates its empty part. */
  async create(principal: Principal, id: string, length: number, metadata: Record<string, string | null>): Promise<UploadRecord> {
    if (length > this.content.maxUploadBytes) {
      throw new DomainError('PAYLOAD_TOO_LARGE', `the content is larger than the limit of ${this.content.maxUploadBytes} bytes`, {
        max_bytes: this.content.maxUploadBytes,
      });
    }
    const partial = await this.blobs.openPartial!(partName(id));
    await partial.append(empty());
    const now = new Date();
    return this.repo.insert({
      id,
      ownerId: principal.ownerId,
      length,
      metadata,
      partKey: partial.key,
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.expiryMs),
    });
  }

  /**
   * Appends `source` at `offset` (the acknowledged offset), hashing it on the way; returns the new acknowledged
   * offset once the bytes are durable. A source that ends early (a dropped connection) still counts for what arrived.
   */
  async append(id: string, offset: number, source: AsyncIterable<Buffer>): Promise<number> {
    const rec = await this.get(undefined, id);
    if (rec.offset !== offset) throw new DomainError('INVALID_BODY', `Upload-Offset ${offset} is not the upload's offset ${rec.offset}`);
    let partial = await this.blobs.openPartial!(partName(id));
    if (partial.size > rec.offset) {
      // Durable but never acknowledged (a crash between the append and the offset update): cut back.
      await partial.truncate(rec.offset);
      partial = await this.blobs.openPartial!(partName(id));
    }
    if (partial.size < rec.offset) throw new Error(`upload ${id}: the stored part has ${partial.size} bytes, expected ${rec.offset}`);
    const state = await this.hashState(id, partial, rec.offset);
    const room = rec.length - rec.offset;
    let received = 0;
    const hashed = async function* () {
      for await (const chunk of source) {
        if (received + chunk.length > room) throw new DomainError('PAYLOAD_TOO_LARGE', 'the body goes past Upload-Length');
        received += chunk.length;
        state.hasher.update(chunk);
        if (state.head.length < HEAD_BYTES) state.head = Buffer.concat([state.head, chunk.subarray(0, HEAD_BYTES - state.head.length)]);
        yield chunk;
      }
    };
    let failure: unknown;
    let size: number;
    try {
      size = (await partial.append(hashed())).size;
    } catch (err) {
      failure = err;
      size = (await this.blobs.openPartial!(partName(id))).size;
    }
    if (size !== state.hasher.size) this.states.delete(id);
    const acknowledged = Math.min(size, rec.length);
    await this.repo.setOffset(id, acknowledged);
    if (failure) throw failure;
    return acknowledged;
  }

  /**
   * After the last byte: makes the asset exactly as a multipart upload would (dedupe, id idempotency, hash check,
   * preview rules) and records it on the upload. Idempotent: a finished upload answers its asset again.
   */
  async finish(principal: Principal, id: string, parsed: UploadFields): Promise<{ assetId: string; created: boolean }> {
    const known = await this.get(principal, id);
    if (known.assetId) return { assetId: known.assetId, created: known.assetCreated === true };
    // The final PATCH's completion and a HEAD's may meet (on any instance): one makes the asset, the other reads it.
    const lease = await this.leases.acquire(id);
    try {
      return await this.finishLeased(principal, id, parsed);
    } finally {
      await lease?.release();
    }
  }

  private async finishLeased(principal: Principal, id: string, parsed: UploadFields): Promise<{ assetId: string; created: boolean }> {
    const rec = await this.get(principal, id);
    if (rec.assetId) return { assetId: rec.assetId, created: rec.assetCreated === true };
    if (rec.offset !== rec.length) throw new DomainError('INVALID_BODY', 'the upload is not complete');
    const partial = await this.blobs.openPartial!(partName(id));
    const state = await this.hashState(id, partial, rec.length);
    this.states.delete(id);
    const digest: ContentDigest = state.hasher.digest();
    try {
      const declared = parsed.hash;
      if (declared && (declared.algorithm === 'blake3' ? digest.blake3 : digest.sha256) !== declared.hex) {
        throw new DomainError('HASH_MISMATCH', 'the uploaded bytes do not match the hash field');
      }
      const sniffedMime = state.head.length > 0 ? detectMime(state.head, undefined) : undefined;
      const ingested = {
        temp: { key: partial.key, size: rec.length },
        digest,
        sniffedMime,
        derived: deriveFromHead(state.head, sniffedMime, undefined),
      };
      const result = await this.assets.createFromIngested(principal, parsed.fields, ingested, { fileName: parsed.fileName });
      await this.repo.setAsset(id, result.asset.id, result.created);
      return { assetId: result.asset.id, created: result.created };
    } catch (err) {
      // Nothing of a refused upload is kept (as with a refused multipart upload); after any other failure (the
      // database or the store) the bytes stay, and a HEAD finishes it later.
      if (err instanceof DomainError) await this.removeParts(rec);
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
      for (const rec of batch) {
        await this.removeParts(rec);
        removed++;
      }
      if (batch.length < 100) return removed;
    }
  }

  private async removeParts(rec: UploadRecord): Promise<void> {
    this.states.delete(rec.id);
    const partial = await this.blobs.openPartial!(partName(rec.id));
    await partial.discard();
    await this.repo.delete(rec.id);
  }

  /** The hash state after the first `size` stored bytes: this process's, or rebuilt by re-reading the part once. */
  private async hashState(id: string, partial: PartialBlob, size: number): Promise<HashState> {
    const known = this.states.get(id);
    if (known && known.hasher.size === size) {
      // Refresh its place in the eviction order.
      this.states.delete(id);
      this.states.set(id, known);
      return known;
    }
    const state: HashState = { hasher: new DualHasher(), head: Buffer.alloc(0) };
    if (size > 0) {
      this.logger.info('rebuilding the hash state of a resumed upload', { upload_id: id, bytes: size });
      for await (const chunk of partial.readExisting()) {
        const c = chunk.subarray(0, size - state.hasher.size);
        state.hasher.update(c);
        if (state.head.length < HEAD_BYTES) state.head = Buffer.concat([state.head, c.subarray(0, HEAD_BYTES - state.head.length)]);
        if (state.hasher.size >= size) break;
      }
      if (state.hasher.size !== size) throw new Error(`upload ${id}: read ${state.hasher.size} stored bytes, expected ${size}`);
    }
    this.states.set(id, state);
    if (this.states.size > MAX_STATES) this.states.delete(this.states.keys().next().value!);
    return state;
  }
}

export const partName = (id: string): string => `upload-${id}`;

async function* empty(): AsyncIterable<Buffer> {}
