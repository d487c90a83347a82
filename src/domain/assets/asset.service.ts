import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Transaction, Transactions } from '../../infra/prisma';
import type { ContentRecord } from '../content/content.repository';
import type { ContentService, IngestedContent } from '../content/content.service';
import { parseHash, type ContentDigest, type ParsedHash } from '../content/hashing';
import { isActiveContent, servedContentType } from '../content/mime';
import { AlreadyExists, DomainError } from '../errors';
import { JOB, type Queue } from '../job-map';
import { servableMediaType } from '../input';
import type { AssetRepository } from './asset.repository';
import type {
  Asset,
  AssetCreateFields,
  AssetCreateInput,
  AssetFilter,
  AssetListQuery,
  AssetPage,
  AssetUpdateFields,
  CreateResult,
  Page,
  Principal,
  TagAddResult,
  TagCount,
  TagListQuery,
  TagRemoveResult,
} from './asset.types';
import { PATHS_LIMITS, validatePaths } from './asset-paths';
import { newAssetRow } from './new-asset-row';
import { decodeCursor } from './cursor';
import {
  assertNoSystemTags,
  LIMITS,
  normalizeTags,
  sanitizeFileName,
  SYSTEM_TAGS,
  validateCreateFields,
  validateHashField,
} from './validation';
import type { AuditService } from '../audit/audit.service';
import { requireScope } from '../auth/scopes';
import type { QuotaService } from '../quotas/quota.service';

const ZERO_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * The file of an upload as received: written to a temporary blob, or only hashed because the client declared the
 * hash of content that is stored already (the bytes are then checked, never written again).
 */
export type ReceivedFile =
  { ingested: IngestedContent; knownDigest?: undefined } | { ingested?: undefined; knownDigest: ContentDigest };

/** An upload as a transport received it: the file (if any), the client's file name and `hash` field, as sent. */
export interface UploadedAsset {
  file?: ReceivedFile;
  fileName?: string;
  declaredHash?: string;
}

/**
 * The asset rules, shared by REST and GraphQL: owner isolation, idempotent ids, dedupe by
 * content per owner, previews, immutability, and the content lifecycle.
 */
export class AssetService {
  constructor(
    private readonly transactions: Transactions,
    private readonly assets: AssetRepository,
    private readonly content: ContentService,
    private readonly queue: Queue,
    /** Told of each asset this instance deleted, once its delete has committed (before the delete is answered). */
    private readonly onDeleted?: (assetIds: string[]) => void,
    /** Records admin actions on other owners' assets. */
    private readonly audit?: AuditService,
    /** The owners' limits, checked in the transaction of every asset insert (contract 8). */
    private readonly quotas?: QuotaService,
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

  /**
   * A page of assets (GraphQL `assets`; GET /api/assets uses `pageIfChanged`): `after` (a cursor of the same sort
   * and order) wins over `offset`.
   */
  list(principal: Principal, query: AssetListQuery): Promise<AssetPage> {
    const after = query.after === undefined ? undefined : decodeCursor(query.after, query.sort, query.order);
    return this.assets.list(principal.ownerId, query, after);
  }

  /**
   * `list`, or undefined when the owner's rows are still at `version` (a page's `version`), i.e. when the page read
   * then is still the answer: one primary-key read (GET /api/assets keeps the page it sent under its version).
   */
  pageIfChanged(
    principal: Principal,
    query: AssetListQuery,
    version: string | undefined,
  ): Promise<AssetPage | undefined> {
    const after = query.after === undefined ? undefined : decodeCursor(query.after, query.sort, query.order);
    return this.assets.pageIfChanged(principal.ownerId, query, after, version);
  }

  /** GET /api/jobs/{job_id}/assets: this owner's assets made by the job, oldest first; an unknown job: none. */
  jobAssets(principal: Principal, jobId: string, limit: number, offset: number): Promise<Page<Asset>> {
    return this.assets.listByJob(principal.ownerId, jobId, limit, offset);
  }

  /** The owner's rows version now: it moves in the transaction of every change of the owner's asset rows. */
  rowsVersion(principal: Principal): Promise<string> {
    return this.assets.rowsVersion(principal.ownerId);
  }

  /** GraphQL `baseModels`: the base models of the owner's assets, with how many name each (the browser's filter). */
  baseModels(principal: Principal, limit: number): Promise<TagCount[]> {
    return this.assets.baseModels(principal.ownerId, limit);
  }

  /** GET /api/assets/tags/refine: tag counts over the assets matching `filter`. */
  tagFacets(
    principal: Principal,
    filter: AssetFilter,
    limit: number,
  ): Promise<{ counts: TagCount[]; lowerBounds: boolean }> {
    return this.assets.tagFacets(principal.ownerId, filter, limit);
  }

  /** POST /api/assets/{id}/tags. The row lock makes concurrent edits of one asset apply one after another. */
  async addTags(principal: Principal, id: string, tags: unknown): Promise<TagAddResult> {
    const wanted = nonEmptyTags(tags);
    return this.transactions.run(async (tx) => {
      const asset = await this.lockMutable(principal, id, tx);
      const have = new Set(asset.tags);
      const added = wanted.filter((t) => !have.has(t));
      const totalTags = [...asset.tags, ...added];
      if (totalTags.length > LIMITS.tagCount) {
        throw new DomainError('INVALID_BODY', `an asset holds at most ${LIMITS.tagCount} tags`, { field: 'tags' });
      }
      if (added.length > 0) await this.assets.update(principal.ownerId, id, { tags: totalTags }, tx);
      return { added: [...added].sort(), alreadyPresent: wanted.filter((t) => have.has(t)).sort(), totalTags };
    });
  }

  /** DELETE /api/assets/{id}/tags. */
  async removeTags(principal: Principal, id: string, tags: unknown): Promise<TagRemoveResult> {
    const unwanted = nonEmptyTags(tags);
    return this.transactions.run(async (tx) => {
      const asset = await this.lockMutable(principal, id, tx);
      const drop = new Set(unwanted);
      const removed = unwanted.filter((t) => asset.tags.includes(t));
      const totalTags = asset.tags.filter((t) => !drop.has(t));
      if (removed.length > 0) await this.assets.update(principal.ownerId, id, { tags: totalTags }, tx);
      return {
        removed: [...removed].sort(),
        notPresent: unwanted.filter((t) => !asset.tags.includes(t)).sort(),
        totalTags,
        // A request naming a system tag is refused whole (nonEmptyTags), so none is ever left out here.
        protected: [],
      };
    });
  }

  private async lockMutable(principal: Principal, id: string, tx: Transaction): Promise<Asset> {
    const asset = await this.assets.lockForUpdate(principal.ownerId, id, tx);
    if (!asset) throw notFound(id);
    if (asset.isImmutable) throw immutable(id);
    return asset;
  }

  /**
   * The metadata backfill (metadata-backfill.job.ts): gives assets made before `metadata` existed their own fields,
   * then derives each such content's fields from the first bytes of its blob (read once) and merges them into its
   * assets. Returns how many assets and contents it filled.
   */
  async backfillMetadata(batch = 500): Promise<number> {
    let n = 0;
    for (let after: string | undefined = ZERO_UUID; after !== undefined;) {
      const r = await this.assets.fillMissingMetadata(after, batch);
      n += r.filled;
      after = r.lastId;
    }
    for (let after: string | undefined = ''; after !== undefined;) {
      const { rows, last } = await this.content.findWithoutMetadata(after, batch);
      for (const rec of rows) await this.content.backfillMetadata(rec);
      n += rows.length;
      after = last;
    }
    return n;
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
   * Receives the bytes of an upload's file. When the client declared, before the file, the hash of content that is
   * stored already, the bytes are only hashed (the upload fast path); otherwise they are ingested. Nothing is
   * left behind when this rejects.
   */
  async receiveFile(bytes: AsyncIterable<Buffer>, declaredHash?: string): Promise<ReceivedFile> {
    const declared = parseHash(declaredHash);
    // The bytes of an in-place content are stored, not only hashed: it then no longer depends on its file (6.4).
    const known = declared && (await this.content.find(declared));
    if (known && !known.inPlace) return { knownDigest: await this.content.digestOnly(bytes) };
    return { ingested: await this.content.ingest(bytes) };
  }

  /**
   * The early quota check of an upload whose file is known to be at least `bytes` long before any byte of it is read
   * (a multipart Content-Length): refused then rather than after storing it. The final check is the insert's.
   */
  async checkQuotaAhead(principal: Principal, bytes: number): Promise<void> {
    await this.quotas?.precheck(principal.ownerId, bytes);
  }

  /** Removes what `receiveFile` kept, for an upload refused before `createFromUpload`. */
  async discardFile(file: ReceivedFile | undefined): Promise<void> {
    if (file?.ingested) await this.content.discard(file.ingested);
  }

  /**
   * Makes the asset of an upload (multipart, GraphQL), taking ownership of its file: the file's bytes when they were
   * ingested; the stored content when only their hash was taken (fast path); without a file, the content a declared
   * hash names if it is stored (else MISSING_FILE). A declared hash the bytes do not have is HASH_MISMATCH. The name
   * defaults to the client's file name (its last path segment).
   */
  async createFromUpload(principal: Principal, input: AssetCreateInput, upload: UploadedAsset): Promise<CreateResult> {
    const { file } = upload;
    try {
      const fields = validateCreateFields(input);
      const declared = upload.declaredHash === undefined ? undefined : validateHashField(upload.declaredHash);
      const fileName = upload.fileName === undefined ? undefined : sanitizeFileName(upload.fileName);
      const digest = file?.ingested?.digest ?? file?.knownDigest;
      if (declared && digest && (declared.algorithm === 'blake3' ? digest.blake3 : digest.sha256) !== declared.hex) {
        throw new DomainError('HASH_MISMATCH', 'the uploaded bytes do not match the hash field');
      }
      if (file?.ingested)
        return await this.keepPaths(
          principal,
          await this.createFromIngested(principal, fields, file.ingested, { fileName }),
          fields.paths,
        );
      if (file?.knownDigest) {
        const made = await this.createFromStored(
          principal,
          { ...fields, name: fields.name ?? fileName },
          { algorithm: 'blake3', hex: file.knownDigest.blake3 },
        );
        return await this.keepPaths(principal, made, fields.paths);
      }
      if (declared) {
        // No file part: the hash alone, when its content is stored.
        if (!(await this.content.exists(declared)))
          throw new DomainError('MISSING_FILE', 'the content of hash is not stored; send the file');
        return await this.keepPaths(principal, await this.createFromStored(principal, fields, declared), fields.paths);
      }
      throw new DomainError('MISSING_FILE', 'a file part named "file" is required');
    } finally {
      await this.discardFile(file);
    }
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
      const name = fields.name ?? opts.fileName ?? defaultName(ingested.digest.blake3);
      const contentMime = this.content.mimeOf(ingested, opts.fileName ?? name);
      // Refused before the blob is put in place (a refused create then moves nothing aside); the final check is the
      // insert's, under the owner's quota lock.
      const { blake3 } = ingested.digest;
      await this.quotas?.precheckNew(principal.ownerId, ingested.digest.size, async () =>
        Boolean(await this.assets.findByContent(principal.ownerId, blake3)),
      );
      // The (possibly slow) copy to the content address happens before the lock; see ContentService.precommit.
      precommitted = true;
      await this.content.precommit(ingested);
      const withFile = { ...fields, fileName: fields.fileName ?? opts.fileName ?? name };
      return await this.createWithContent(principal, withFile, ingested.digest.blake3, name, async (tx) =>
        this.content.ensureStored(tx, ingested, { name, mimeType: contentMime, fileName: opts.fileName }),
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

  /**
   * Makes an asset from content already stored (from-hash, the upload fast path, known downloads). Without a `name`:
   * a name this owner gave the content before, else the file name of a public download of it, else
   * the first 16 hex of its BLAKE3. Never the name another owner uploaded it under (`content.first_name`), which may
   * be private.
   */
  async createFromStored(principal: Principal, fields: AssetCreateFields, hash: ParsedHash): Promise<CreateResult> {
    const stored = await this.content.find(hash);
    if (!stored)
      throw new DomainError('CONTENT_NOT_FOUND', `no stored content has the hash ${hash.algorithm}:${hash.hex}`);
    const name =
      fields.name ?? (await this.assets.knownNameOf(principal.ownerId, stored.blake3)) ?? defaultName(stored.blake3);
    return this.createWithContent(
      principal,
      { ...fields, fileName: fields.fileName ?? name },
      stored.blake3,
      name,
      async (tx) => {
        // Re-read under the lock: GC may have removed it since the lookup above.
        const locked = await this.content.find({ algorithm: 'blake3', hex: stored.blake3 }, tx);
        if (!locked)
          throw new DomainError('CONTENT_NOT_FOUND', `no stored content has the hash ${hash.algorithm}:${hash.hex}`);
        await this.content.reference(tx, locked.blake3);
        return locked;
      },
    );
  }

  private async createWithContent(
    principal: Principal,
    fields: AssetCreateFields,
    blake3: string,
    name: string,
    storeContent: (tx: Transaction) => Promise<ContentRecord>,
  ): Promise<CreateResult> {
    const owner = principal.ownerId;
    // Concurrent creates of the same content serialise on the content lock; a race on a caller-chosen id surfaces
    // as a unique violation, and the retry then finds the winner's row.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.transactions.run(
          async (tx) => {
            // The owner's quota row first (before the content lock, which creates of other owners share): creates
            // of an owner with limits are admitted one at a time, so concurrent ones cannot pass a limit together.
            const limits = await this.quotas?.lock(owner, tx);
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
            const previewId = fields.previewId;
            if (previewId && previewId !== id && !(await this.assets.findByIdIn(tx, owner, previewId))) {
              throw new DomainError('INVALID_PREVIEW_ID', `preview_id ${previewId} names no asset of yours`);
            }
            // Only a new asset counts: a duplicate of content this owner has answered above, whatever the limits.
            if (limits) await this.quotas!.admit(owner, limits, { bytes: content.size, assets: 1 }, tx);
            const asset = await this.assets.insert(newAssetRow(owner, id, name, content, fields), tx);
            return { asset, created: true };
          },
          { timeoutMs: 120_000, maxWaitMs: 30_000 },
        );
      } catch (err) {
        if (attempt < 3 && err instanceof AlreadyExists) continue;
        throw err;
      }
    }
  }

  async update(principal: Principal, id: string, fields: AssetUpdateFields): Promise<Asset> {
    return this.transactions.run(async (tx) => {
      const current = await this.assets.findByIdIn(tx, principal.ownerId, id);
      if (!current) throw notFound(id);
      if (current.isImmutable) throw immutable(id);
      if (
        fields.previewId &&
        fields.previewId !== id &&
        !(await this.assets.findByIdIn(tx, principal.ownerId, fields.previewId))
      ) {
        throw new DomainError('INVALID_PREVIEW_ID', `preview_id ${fields.previewId} names no asset of yours`);
      }
      // A PUT replaces the client's tags; the system tags the asset carries are the service's and stay.
      const kept = fields.tags && current.tags.filter((t) => SYSTEM_TAGS.has(t) && !fields.tags!.includes(t));
      const edit = kept?.length ? { ...fields, tags: [...fields.tags!, ...kept] } : fields;
      const updated = await this.assets.update(principal.ownerId, id, edit, tx);
      if (!updated) throw notFound(id);
      return updated;
    });
  }

  async delete(principal: Principal, id: string): Promise<void> {
    await this.transactions.run(async (tx) => {
      const asset = await this.assets.lockForUpdate(principal.ownerId, id, tx);
      if (!asset) throw notFound(id);
      if (asset.isImmutable) throw immutable(id);
      await this.content.lock(asset.blake3, tx);
      // Previews first: the delete's trigger takes the owner's asset_owner_stats row, and no transaction may wait on
      // an asset row (those the clearing updates) while holding it (migration 20261122210000).
      await this.assets.clearPreviewsOf(principal.ownerId, id, tx);
      await this.assets.deleteRow(id, tx);
      if (await this.content.releaseIfUnused(tx, asset.blake3)) {
        await this.queue.send(
          JOB.contentGc,
          { blake3: asset.blake3 },
          { tx, startAfterSeconds: this.content.gcGraceSeconds + 1 },
        );
      }
    });
    this.onDeleted?.([id]);
  }

  /**
   * An upload's or from-hash's `paths` (`path` fields) on the asset it answered: a new asset has them already (the
   * create puts them in `metadata.paths`); an existing one gets those it lacks, as POST /api/assets/{id}/paths would.
   * `assets push` sends a file's tree path with its upload, one request instead of two.
   */
  async keepPaths(principal: Principal, made: CreateResult, paths: string[] | undefined): Promise<CreateResult> {
    if (made.created || !paths?.length) return made;
    const all = await this.assets.appendPaths(principal.ownerId, made.asset.id, paths, PATHS_LIMITS.perAsset);
    if (!all) return made;
    return { ...made, asset: { ...made.asset, metadata: { ...(made.asset.metadata ?? {}), paths: all } } };
  }

  /**
   * POST /api/assets/{id}/paths: records more tree paths of this asset's content (`metadata.paths`, asset-paths.ts).
   * Allowed on immutable assets too: the paths describe where the content lives, not the asset's own fields.
   */
  async addPaths(principal: Principal, id: string, paths: unknown): Promise<string[]> {
    const wanted = validatePaths(paths);
    const all = await this.assets.appendPaths(principal.ownerId, id, wanted, PATHS_LIMITS.perAsset);
    if (!all) throw notFound(id);
    return all;
  }

  /**
   * The import (POST /api/assets/seed): makes this owner's asset of one file, from its freshly ingested bytes or from
   * stored content, or, when the owner has an asset of that content already, adds the file's tags and tree path to it
   * (as `push --comfyui` does for a second copy).
   */
  async importFile(
    ownerId: string,
    source: { ingested: IngestedContent } | { blake3: string },
    file: { name: string; tags: string[]; path: string; fileName: string },
  ): Promise<CreateResult> {
    const principal: Principal = { ownerId, scopes: ['read', 'write'], keyId: 'import' };
    const fields: AssetCreateFields = { name: file.name, tags: file.tags, paths: [file.path] };
    const made =
      'ingested' in source
        ? await this.createFromIngested(principal, fields, source.ingested, { fileName: file.fileName })
        : await this.createFromStored(
            principal,
            { ...fields, fileName: file.fileName },
            { algorithm: 'blake3', hex: source.blake3 },
          );
    if (made.created) return made;
    await this.assets.appendPaths(
      ownerId,
      made.asset.id,
      [file.path],
      PATHS_LIMITS.perAsset,
      undefined,
      made.asset.isImmutable ? [] : file.tags,
      LIMITS.tagCount,
    );
    return made;
  }

  /** Admin only: the one way `is_immutable` changes. */
  async setImmutable(principal: Principal, id: string, value: boolean): Promise<Asset> {
    requireScope(principal, 'admin', 'changing is_immutable');
    const asset = await this.assets.setImmutable(undefined, id, value);
    if (!asset) throw notFound(id);
    if (asset.ownerId !== principal.ownerId) {
      await this.audit?.recordBy(principal, {
        action: 'asset.set_immutable',
        targetOwner: asset.ownerId,
        targetId: asset.id,
        details: { is_immutable: value },
      });
    }
    return asset;
  }

  /** The bytes of an asset, or a range of them. */
  async openContent(
    principal: Principal,
    id: string,
  ): Promise<{
    asset: Asset;
    open: (range?: { start: number; end: number }) => Promise<Readable>;
    assertServable: () => Promise<void>;
  }> {
    const asset = await this.assets.findById(principal.ownerId, id);
    if (!asset) throw notFound(id);
    return {
      asset,
      open: (range) => this.content.read(asset.blake3, range),
      assertServable: () => this.content.assertServable(asset.blake3),
    };
  }

  async presignedContentUrl(
    asset: Asset,
    fileName: string,
    requested: 'inline' | 'attachment' = 'attachment',
    expiresInSeconds = 300,
  ): Promise<string | undefined> {
    const servable = servableMediaType(asset.mimeType);
    const disposition = contentDispositionOf({ mimeType: servable }, requested);
    // An in-place content has no object to sign (contract 6.4): it is served from its file by this instance.
    if ((await this.content.find({ algorithm: 'blake3', hex: asset.blake3 }))?.inPlace) return undefined;
    return this.content.presignedUrl(asset.blake3, {
      fileName,
      contentType: servedContentType(servable),
      expiresInSeconds,
      disposition,
    });
  }
}

/** The name of an asset nobody named: the first 16 hex digits of its content's BLAKE3. */
export const defaultName = (blake3: string): string => blake3.slice(0, 16);

/** Content-Disposition: `attachment` unless `inline` was asked for; active content (HTML, SVG, scripts) always is. */
export function contentDispositionOf(
  asset: { mimeType: string },
  requested: 'inline' | 'attachment',
): 'inline' | 'attachment' {
  return requested === 'inline' && !isActiveContent(asset.mimeType) ? 'inline' : 'attachment';
}

/** A tag list of at least one tag after normalisation and no system tag (tag edit bodies). */
function nonEmptyTags(value: unknown): string[] {
  const tags = normalizeTags(value);
  assertNoSystemTags(tags);
  if (tags.length === 0)
    throw new DomainError('INVALID_BODY', 'tags must be a list of at least one non-empty tag', { field: 'tags' });
  return tags;
}

const notFound = (id: string) => new DomainError('ASSET_NOT_FOUND', `asset ${id} not found`);
const immutable = (id: string) => new DomainError('ASSET_IMMUTABLE', `asset ${id} is immutable`);
