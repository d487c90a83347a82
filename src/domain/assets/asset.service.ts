import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Db, Tx } from '../../infra/prisma';
import { isUniqueViolation } from '../../infra/prisma';
import type { JobQueue } from '../../infra/queue';
import type { ContentRecord } from '../content/content.repository';
import type { ContentService, IngestedContent } from '../content/content.service';
import type { ParsedHash } from '../content/hashing';
import { DEFAULT_MIME, isActiveContent, isImageMime, mimeFromName } from '../content/mime';
import { DomainError } from '../errors';
import type { AssetRepository } from './asset.repository';
import type {
  Asset,
  AssetCreateFields,
  AssetListQuery,
  AssetUpdateFields,
  CreateResult,
  Page,
  Principal,
  TagCount,
  TagListQuery,
} from './asset.types';

export const CONTENT_GC_JOB = 'content.gc';

/**
 * The asset rules of contract section 3, shared by REST and GraphQL: owner isolation, idempotent ids, dedupe by
 * content per owner, previews, immutability, and the content lifecycle.
 */
export class AssetService {
  constructor(
    private readonly db: Db,
    private readonly assets: AssetRepository,
    private readonly content: ContentService,
    private readonly queue: JobQueue,
  ) {}

  async get(principal: Principal, id: string): Promise<Asset> {
    const asset = await this.assets.findById(principal.ownerId, id);
    if (!asset) throw notFound(id);
    if (Date.now() - asset.lastAccessTime.getTime() > 60_000) {
      const t = await this.assets.touch(asset.id);
      if (t) asset.lastAccessTime = t;
    }
    return asset;
  }

  /** Assets by id for batch loading (GraphQL previews); missing ones are simply absent. */
  getMany(principal: Principal, ids: readonly string[]): Promise<Asset[]> {
    return this.assets.findManyByIds(principal.ownerId, ids);
  }

  list(principal: Principal, query: AssetListQuery): Promise<Page<Asset>> {
    return this.assets.list(principal.ownerId, query);
  }

  listTags(principal: Principal, query: TagListQuery): Promise<Page<TagCount>> {
    return this.assets.listTags(principal.ownerId, query);
  }

  contentExists(hash: ParsedHash): Promise<boolean> {
    return this.content.exists(hash);
  }

  findContent(hash: ParsedHash): Promise<ContentRecord | undefined> {
    return this.content.find(hash);
  }

  /**
   * Makes an asset from freshly ingested bytes (upload, URL upload, finished download). Takes ownership of the
   * temporary blob: it is committed or discarded whatever happens.
   */
  async createFromIngested(
    principal: Principal,
    fields: AssetCreateFields,
    ingested: IngestedContent,
    opts: { fileName?: string } = {},
  ): Promise<CreateResult> {
    let precommitted = false;
    try {
      const name = fields.name ?? opts.fileName ?? `asset-${ingested.digest.blake3.slice(0, 12)}`;
      const contentMime = ingested.sniffedMime && ingested.sniffedMime !== DEFAULT_MIME ? ingested.sniffedMime : (mimeFromName(opts.fileName ?? name) ?? DEFAULT_MIME);
      // The (possibly slow) copy to the content address happens before the lock; see ContentService.precommit.
      precommitted = true;
      await this.content.precommit(ingested);
      return await this.createWithContent(principal, fields, ingested.digest.blake3, name, async (tx) =>
        this.content.ensureStored(tx, ingested, { name, mimeType: contentMime }),
      );
    } catch (err) {
      // Refused or failed (ID_CONFLICT, INVALID_PREVIEW_ID, a rolled-back commit, the database gone): the blob this
      // request may have put under the content address must not stay without a row.
      if (precommitted) await this.content.abandon(ingested.digest.blake3);
      throw err;
    } finally {
      // After a commit the temporary is gone and this is a no-op; after a failure it removes the bytes.
      await this.content.discard(ingested);
    }
  }

  /** Makes an asset from content already stored (from-hash, the upload fast path, known downloads). */
  async createFromStored(principal: Principal, fields: AssetCreateFields, hash: ParsedHash): Promise<CreateResult> {
    const stored = await this.content.find(hash);
    if (!stored) throw new DomainError('CONTENT_NOT_FOUND', `no stored content has the hash ${hash.algorithm}:${hash.hex}`);
    return this.createWithContent(principal, fields, stored.blake3, fields.name ?? stored.firstName, async (tx) => {
      // Re-read under the lock: GC may have removed it since the lookup above.
      const locked = await this.content.find({ algorithm: 'blake3', hex: stored.blake3 }, tx);
      if (!locked) throw new DomainError('CONTENT_NOT_FOUND', `no stored content has the hash ${hash.algorithm}:${hash.hex}`);
      await this.content.reference(tx, locked.blake3);
      return locked;
    });
  }

  private async createWithContent(
    principal: Principal,
    fields: AssetCreateFields,
    blake3: string,
    name: string,
    storeContent: (tx: Tx) => Promise<ContentRecord>,
  ): Promise<CreateResult> {
    const owner = principal.ownerId;
    // Concurrent creates of the same content serialise on the content lock; a race on a caller-chosen id surfaces
    // as a unique violation, and the retry then finds the winner's row.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.db.$transaction(
          async (tx) => {
            await this.content.lock(blake3, tx);
            if (fields.id) {
              // One read of the id whatever its owner, so a concurrent create cannot commit between two reads.
              const existing = await this.assets.findByIdAnyOwner(fields.id, tx);
              if (existing?.ownerId === owner) return { asset: existing, created: false };
              if (existing) throw new DomainError('ID_CONFLICT', `the id ${fields.id} is already in use`);
            }
            const content = await storeContent(tx);
            const same = await this.assets.findByContent(owner, content.blake3, tx);
            if (same) return { asset: same, created: false };
            const id = fields.id ?? crypto.randomUUID();
            const mimeType = fields.mimeType ?? content.mimeType;
            let previewId = fields.previewId ?? null;
            if (previewId && previewId !== id && !(await this.assets.findById(owner, previewId, tx))) {
              throw new DomainError('INVALID_PREVIEW_ID', `preview_id ${previewId} names no asset of yours`);
            }
            if (!previewId && isImageMime(mimeType)) previewId = id;
            const asset = await this.assets.insert(
              {
                id,
                ownerId: owner,
                name,
                contentHash: content.blake3,
                size: content.size,
                mimeType,
                tags: fields.tags ?? [],
                userMetadata: fields.userMetadata ?? {},
                previewId,
                promptId: fields.promptId ?? null,
              },
              tx,
            );
            return { asset, created: true };
          },
          { timeout: 120_000, maxWait: 30_000 },
        );
      } catch (err) {
        if (attempt < 3 && isUniqueViolation(err)) continue;
        throw err;
      }
    }
  }

  async update(principal: Principal, id: string, fields: AssetUpdateFields): Promise<Asset> {
    return this.db.$transaction(async (tx) => {
      const current = await this.assets.findById(principal.ownerId, id, tx);
      if (!current) throw notFound(id);
      if (current.isImmutable) throw immutable(id);
      if (fields.previewId && fields.previewId !== id && !(await this.assets.findById(principal.ownerId, fields.previewId, tx))) {
        throw new DomainError('INVALID_PREVIEW_ID', `preview_id ${fields.previewId} names no asset of yours`);
      }
      const updated = await this.assets.update(principal.ownerId, id, fields, tx);
      if (!updated) throw notFound(id);
      return updated;
    });
  }

  async delete(principal: Principal, id: string): Promise<void> {
    await this.db.$transaction(async (tx) => {
      const asset = await this.assets.lockForDelete(principal.ownerId, id, tx);
      if (!asset) throw notFound(id);
      if (asset.isImmutable) throw immutable(id);
      await this.content.lock(asset.blake3, tx);
      await this.assets.deleteRow(id, tx);
      await tx.asset.updateMany({ where: { ownerId: principal.ownerId, previewId: id }, data: { previewId: null } });
      if (await this.content.releaseIfUnused(tx, asset.blake3)) {
        await this.queue.send(CONTENT_GC_JOB, { blake3: asset.blake3 }, { tx, startAfterSeconds: this.content.gcGraceSeconds + 1 });
      }
    });
  }

  /** Admin only: the one way `is_immutable` changes. */
  async setImmutable(principal: Principal, id: string, value: boolean): Promise<Asset> {
    if (!principal.isAdmin) throw new DomainError('FORBIDDEN', 'only an admin key can change is_immutable');
    const asset = await this.assets.setImmutable(undefined, id, value);
    if (!asset) throw notFound(id);
    return asset;
  }

  /** The bytes of an asset, or a range of them. */
  async openContent(
    principal: Principal,
    id: string,
  ): Promise<{ asset: Asset; open: (range?: { start: number; end: number }) => Promise<Readable> }> {
    const asset = await this.assets.findById(principal.ownerId, id);
    if (!asset) throw notFound(id);
    return { asset, open: (range) => this.content.read(asset.blake3, range) };
  }

  presignedContentUrl(asset: Asset, fileName: string, expiresInSeconds = 300): Promise<string | undefined> {
    // Active content (HTML, SVG, scripts) is never rendered inline, on our origin or the bucket's.
    const disposition = isActiveContent(asset.mimeType) ? 'attachment' : 'inline';
    return this.content.presignedUrl(asset.blake3, { fileName, contentType: asset.mimeType, expiresInSeconds, disposition });
  }
}

const notFound = (id: string) => new DomainError('ASSET_NOT_FOUND', `asset ${id} not found`);
const immutable = (id: string) => new DomainError('ASSET_IMMUTABLE', `asset ${id} is immutable`);
