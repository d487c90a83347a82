import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import { BlobNotFoundError, type BlobStore } from '../../infra/blob-store/blob-store';
import type { Logger } from '../../infra/logger';
import type { Transactions } from '../../infra/prisma';
import type { Principal } from '../assets/asset.types';
import { AlreadyExists, DomainError } from '../errors';
import { idempotencyKeyOf } from '../input';
import { JOB, type Queue } from '../job-map';
import { SecretSigner } from '../secrets/secret-signer';
import type { ServerSecretRepository } from '../secrets/server-secret.repository';
import { sameExportKey } from '../tasks/export-request';
import { isActive, type TaskRepository } from '../tasks/task.repository';
import { type ExportFailedAsset, type ExportRequest, type NamingStrategy, type Task } from '../tasks/task.types';
import { memberPaths } from './archive-names';
import type { ExportableAsset, ExportRepository } from './export.repository';
import { zipArchive, type ZipEntry } from './zip-writer';

export const MAX_EXPORT_ASSETS = 10_000;
const HMAC_SECRET = 'export_url_hmac';
/** Signed and presigned URLs live this long (never past the archive's expiry). */
const URL_TTL_SECONDS = 3600;

const invalid = (message: string, field?: string) =>
  new DomainError('INVALID_BODY', message, field ? { field } : undefined);
/** The name as an answer repeats it: a long one (up to the URL's limit) is shortened. */
const shown = (name: string) => (name.length > 120 ? `${name.slice(0, 100)}…(${name.length} characters)` : name);
const notFound = (name: string) => new DomainError('EXPORT_NOT_FOUND', `export ${shown(name)} not found`);
/** What can name an export archive at all (ComfyUI's rule); anything else is 400 INVALID_EXPORT_NAME, not 404. */
const EXPORT_NAME = /^[A-Za-z0-9_-]+\.zip$/;
const objectName = (exportName: string) => `exports/${exportName}`;
export const NOTHING_TO_EXPORT = 'No valid assets to export';
/** ComfyUI's words when every selected asset failed to be read: no archive either. */
export const NOTHING_EXPORTED = 'All assets failed to export';
/** At most this many failed_assets entries are kept in a task's result (the counts stay exact). */
export const MAX_FAILED_LISTED = 1_000;

/**
 * A blob that cannot be opened for a reason of its own (lost, a broken file), so its asset is left out and listed:
 * not a store that is down, full, refusing our credentials or short of descriptors, which fails the export (a later
 * one can succeed) rather than leaving assets out of an archive reported as a success.
 */
const BLOB_OWN_FAILURES = new Set(['ENOENT', 'EIO', 'ELOOP', 'EISDIR', 'ENOTDIR', 'EACCES', 'EPERM']);
const isBlobOwnFailure = (err: unknown): boolean => {
  if (err instanceof BlobNotFoundError) return true;
  // An in-place content's file gone or changed, or its root not on this instance (contract 6.4): left out too.
  if (err instanceof DomainError && (err.code === 'CONTENT_CHANGED' || err.code === 'CONTENT_UNAVAILABLE')) return true;
  // Read by shape: a system error need not be an Error of this realm.
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && BLOB_OWN_FAILURES.has(code);
};

/** Thrown by the archive's entries once none could be read: the store drops what it wrote, and no archive is kept. */
class NothingReadable extends Error {}

/** An export request as the transports' schemas let it through (http/schema: ExportRequest, StartExportInput). */
export interface ExportRequestBody {
  asset_ids?: string[] | null;
  job_ids?: string[] | null;
  job_asset_name_filters?: Record<string, string[]> | null;
  include_previews?: boolean | null;
  naming_strategy?: NamingStrategy | null;
}

/**
 * The export a checked body asks for: ids lower-cased and de-duplicated (first-seen order kept, as ComfyUI's export
 * keeps names), defaults filled in. At least one id is the rule of an export (INVALID_BODY otherwise); the shape of
 * each field is the schemas'.
 */
export function exportRequestOf(body: ExportRequestBody): ExportRequest {
  const ids = (v: string[] | null | undefined) => (v ? [...new Set(v.map((s) => s.toLowerCase()))] : undefined);
  // Comfy Cloud's and ComfyUI's export APIs both default to job-time folders.
  const out: ExportRequest = { namingStrategy: body.naming_strategy ?? 'group_by_job_time' };
  const assetIds = ids(body.asset_ids);
  const jobIds = ids(body.job_ids);
  if (!assetIds?.length && !jobIds?.length) throw invalid('give asset_ids or job_ids (at least one id)', 'asset_ids');
  if (assetIds) out.assetIds = assetIds;
  if (jobIds) out.jobIds = jobIds;
  const filters = body.job_asset_name_filters;
  if (filters) {
    out.jobAssetNameFilters = Object.fromEntries(
      Object.entries(filters).map(([job, names]) => [job.toLowerCase(), [...new Set(names)]]),
    );
  }
  if (body.include_previews != null) out.includePreviews = body.include_previews;
  return out;
}

/**
 * Bulk export: a task whose job streams a stored (not deflated) ZIP64 archive of the selected assets
 * into the blob store, each blob read once, and short-lived signed URLs of the result.
 */
export class ExportService {
  private readonly signer: SecretSigner;

  constructor(
    private readonly deps: {
      transactions: Transactions;
      repo: ExportRepository;
      secrets: ServerSecretRepository;
      tasks: TaskRepository;
      blobs: BlobStore;
      queue: Queue;
      logger: Logger;
      ttlSeconds: number;
      /** How often progress is written and cancellation looked for. */
      progressIntervalMs?: number;
      /** ZIP64 records for every member and the archive, whatever their sizes (tests of the format at small sizes). */
      forceZip64?: boolean;
    },
  ) {
    this.signer = new SecretSigner(deps.secrets, HMAC_SECRET);
  }

  async start(principal: Principal, request: ExportRequest, rawIdempotencyKey: string | null): Promise<Task> {
    const { transactions, tasks, queue } = this.deps;
    const idempotencyKey = idempotencyKeyOf(rawIdempotencyKey);
    if (idempotencyKey) {
      const existing = await tasks.findByIdempotencyKey(principal.ownerId, idempotencyKey);
      if (existing) return existing;
    } else {
      // The same request while its export is still queued or running joins it (as ComfyUI's export API does):
      // a repeated click makes one archive, not two.
      const running = await tasks.findActiveExport(principal.ownerId, request);
      if (running) return running;
    }
    const { members } = await this.select(principal.ownerId, request);
    if (members.length > MAX_EXPORT_ASSETS) throw invalid(`an export holds at most ${MAX_EXPORT_ASSETS} assets`);
    const id = crypto.randomUUID();
    const ownerId = principal.ownerId;
    const { task, created } = await transactions
      .run(
        async (tx) => {
          // Identical requests that all missed the look-up above (sent at the same instant) take turns here; the
          // first inserts, the others find its task (read after the lock, so they see it committed).
          await tasks.lockExportIdentity(
            ownerId,
            idempotencyKey ? `key:${idempotencyKey}` : `request:${sameExportKey(request)}`,
            tx,
          );
          const existing = idempotencyKey
            ? await tasks.findByIdempotencyKey(ownerId, idempotencyKey, tx)
            : await tasks.findActiveExport(ownerId, request, tx);
          if (existing) return { task: existing, created: false };
          const t = await tasks.insertExport(
            { id, ownerId, idempotencyKey: idempotencyKey ?? `export_assets:${id}`, request, bytesTotal: sum(members) },
            tx,
          );
          await queue.send(JOB.exportBuild, { taskId: id }, { tx });
          return { task: t, created: true };
        },
        // A burst of identical requests waits its turn on the lock.
        { timeoutMs: 30_000, maxWaitMs: 30_000 },
      )
      .catch(async (err: unknown) => {
        // The key taken at the same instant by a request of another kind (a download): the winner's task.
        if (idempotencyKey && err instanceof AlreadyExists) {
          const winner = await tasks.findByIdempotencyKey(ownerId, idempotencyKey);
          if (winner) return { task: winner, created: false };
        }
        throw err;
      });
    if (created) queue.wake(JOB.exportBuild);
    return task;
  }

  /** The job: builds the archive of one task. A cancelled or failed export leaves no object behind. */
  async run(taskId: string): Promise<void> {
    const { tasks, repo, blobs, logger } = this.deps;
    const task = await tasks.find(undefined, taskId);
    if (!task || !isActive(task.status) || !task.exportRequest) return;
    await tasks.start(taskId);
    const exportName = `${crypto.randomUUID()}.zip`;
    const log = logger.child({ task_id: taskId, export_name: exportName });
    const selected = await this.select(task.ownerId, task.exportRequest);
    const members = selected.members.slice(0, MAX_EXPORT_ASSETS);
    // As ComfyUI's export lists them: first the requested ids that name nothing, then what could not be read.
    const failedAssets: ExportFailedAsset[] = selected.missing
      .slice(0, MAX_FAILED_LISTED)
      .map((assetId) => ({ assetId, error: 'not_found' }));
    const listed = () => (failedAssets.length > 0 ? { failedAssets } : {});
    const none = { success: false, assetId: null, assetHash: null, filename: null, bytesDownloaded: 0, bytesTotal: 0 };
    if (members.length === 0) {
      // Ids of no asset of this owner, jobs without outputs: as ComfyUI's export reports it, a completion without
      // success or archive (an empty ZIP would download as if something were in it).
      await tasks.complete(taskId, {
        ...none,
        error: NOTHING_TO_EXPORT,
        assetsTotal: 0,
        assetsAttempted: 0,
        assetsFailed: 0,
        ...listed(),
      });
      return;
    }
    const paths = memberPaths(members, task.exportRequest.namingStrategy);
    let sent = 0;
    let cancelled = false;
    let failed = 0;
    let attempted = 0;
    const ticker = setInterval(() => {
      tasks.progress(taskId, sent).then(
        (active) => (cancelled ||= !active),
        (err) => log.warn('could not record export progress', { err }),
      );
    }, this.deps.progressIntervalMs ?? 1000);
    // One blob open at a time, read once, as the store pulls the archive: a slow store slows the reads.
    const entries = async function* (): AsyncGenerator<ZipEntry> {
      for (const [i, a] of members.entries()) {
        if (cancelled) throw new Error('export cancelled');
        attempted++;
        let stream: Readable;
        try {
          stream = await blobs.read(a.contentHash);
        } catch (err) {
          // A blob that cannot be opened (lost, unreadable) leaves its asset out, listed, as ComfyUI's export does.
          // Anything else (a store down or full, refused credentials, no descriptor left) fails the export (a later
          // one can succeed), and so does a read that fails midway or a blob of another size than its asset: its
          // member would be cut short.
          if (!isBlobOwnFailure(err)) throw err;
          log.warn('export left out an asset whose content could not be read', { asset_id: a.id, err });
          failed++;
          if (failedAssets.length < MAX_FAILED_LISTED) {
            failedAssets.push({
              assetId: a.id,
              error: 'fetch_failed',
              ...(a.promptId ? { jobId: a.promptId } : {}),
              assetName: a.name,
            });
          }
          continue;
        }
        const data = async function* () {
          for await (const chunk of stream as AsyncIterable<Buffer>) {
            if (cancelled) throw new Error('export cancelled');
            sent += chunk.length;
            yield chunk;
          }
        };
        try {
          yield { name: paths[i]!, size: a.size, mtime: a.createdAt, data: data() };
        } finally {
          // Also when the archive stops before this member's bytes were read (the store failed on its header).
          stream.destroy();
        }
      }
      // Nothing could be read: the archive stream fails here, before its central directory, so the store keeps nothing.
      if (failed === attempted) throw new NothingReadable();
    };
    try {
      // The store removes what it wrote when the archive stream fails (a read error, a cancel, a short blob).
      const size = await blobs.writeObject(
        objectName(exportName),
        zipArchive(entries(), { forceZip64: this.deps.forceZip64 === true }),
      );
      if (cancelled) throw new Error('export cancelled');
      const done = await this.deps.transactions.run(async (tx) => {
        const ok = await tasks.complete(
          taskId,
          {
            success: true,
            assetId: null,
            assetHash: null,
            filename: exportName,
            bytesDownloaded: sent,
            exportName,
            assetsTotal: members.length,
            assetsAttempted: attempted,
            assetsFailed: failed,
            bytesTotal: size,
            uncompressedSize: sent,
            ...listed(),
          },
          tx,
        );
        if (ok) {
          await repo.insertArchive(
            {
              name: exportName,
              ownerId: task.ownerId,
              taskId,
              size,
              expiresAt: new Date(Date.now() + this.deps.ttlSeconds * 1000),
            },
            tx,
          );
        }
        return ok;
      });
      if (!done) await blobs.deleteObject(objectName(exportName));
      else log.info('export archive written', { assets: members.length, failed, bytes: size });
    } catch (err) {
      await blobs.deleteObject(objectName(exportName)).catch(() => undefined);
      if (err instanceof NothingReadable) {
        // No archive, a completion without success (ComfyUI's answer).
        await tasks.complete(taskId, {
          ...none,
          error: NOTHING_EXPORTED,
          assetsTotal: members.length,
          assetsAttempted: attempted,
          assetsFailed: failed,
          ...listed(),
        });
        return;
      }
      const current = await tasks.find(undefined, taskId);
      if (current && isActive(current.status)) {
        log.warn('export failed', { err });
        await tasks.fail({ id: taskId }, `export failed: ${(err as Error).message}`, {
          bytes: sent,
          total: sum(members),
        });
      }
    } finally {
      clearInterval(ticker);
    }
  }

  /** GET /api/assets/exports/{name}: a short-lived URL (S3 presigned; else signed by this service). */
  async url(principal: Principal, name: string, baseUrl: string): Promise<{ url: string; expiresAt: Date }> {
    if (!EXPORT_NAME.test(name))
      throw new DomainError('INVALID_EXPORT_NAME', 'an export name is <letters, digits, _ or ->.zip', {
        export_name: shown(name),
      });
    const archive = await this.archive(name);
    if (!archive || archive.ownerId !== principal.ownerId) throw notFound(name);
    const expiresAt = new Date(Math.min(archive.expiresAt.getTime(), Date.now() + URL_TTL_SECONDS * 1000));
    const seconds = Math.max(1, Math.floor((expiresAt.getTime() - Date.now()) / 1000));
    const presign = this.deps.blobs.capabilities.presign;
    if (presign) {
      const fileName = downloadNameOf(archive.createdAt);
      const url = await presign.presignedObjectUrl(objectName(name), {
        fileName,
        contentType: 'application/zip',
        expiresInSeconds: seconds,
      });
      return { url, expiresAt };
    }
    const expires = Math.floor(expiresAt.getTime() / 1000);
    const signature = await this.sign(name, expires);
    return {
      url: `${baseUrl}/api/assets/exports/${encodeURIComponent(name)}/download?expires=${expires}&signature=${signature}`,
      expiresAt,
    };
  }

  /**
   * The archive behind a signed URL: FORBIDDEN for a bad or outdated signature, NOT_FOUND once it expired. `open`
   * reads it whole or one byte range.
   */
  async openSigned(
    name: string,
    expires: string,
    signature: string,
  ): Promise<{ size: number; fileName: string; open(range?: { start: number; end: number }): Promise<Readable> }> {
    // Only the form this service writes (`0123` or `1e9` would sign the same text as `123` / `1000000000`).
    const at = /^[1-9][0-9]{0,15}$/.test(expires) ? Number(expires) : NaN;
    const expected = Number.isSafeInteger(at) ? await this.sign(name, at) : '';
    const given = Buffer.from(signature);
    if (!expected || given.length !== expected.length || !crypto.timingSafeEqual(given, Buffer.from(expected))) {
      throw new DomainError('FORBIDDEN', 'the signature of this URL is not valid');
    }
    if (at * 1000 < Date.now()) throw new DomainError('FORBIDDEN', 'this URL has expired; ask for a new one');
    const archive = await this.archive(name);
    if (!archive) throw notFound(name);
    const open = (range?: { start: number; end: number }) => this.deps.blobs.readObject(objectName(name), range);
    return { size: archive.size, fileName: downloadNameOf(archive.createdAt), open };
  }

  /** Removes archives past their TTL; returns how many. */
  async sweepExpired(now = new Date()): Promise<number> {
    let removed = 0;
    for (;;) {
      const names = await this.deps.repo.findExpired(now, 100);
      for (const name of names) {
        await this.deps.blobs.deleteObject(objectName(name));
        await this.deps.repo.deleteArchive(name);
        removed++;
      }
      if (names.length < 100) return removed;
    }
  }

  private async archive(name: string) {
    if (!/^[0-9a-f-]{36}\.zip$/.test(name)) return undefined;
    const rec = await this.deps.repo.findArchive(name);
    return rec && rec.expiresAt.getTime() > Date.now() ? rec : undefined;
  }

  private sign(name: string, expires: number): Promise<string> {
    return this.signer.sign(`${name}\n${expires}`);
  }

  /**
   * The assets of a request in archive order (named assets and job outputs, filtered by name, then previews), and the
   * requested asset ids that name no asset of this owner.
   */
  private async select(
    ownerId: string,
    req: ExportRequest,
  ): Promise<{ members: ExportableAsset[]; missing: string[] }> {
    const { repo } = this.deps;
    const picked = await repo.selectAssets(ownerId, req.assetIds ?? [], req.jobIds ?? [], MAX_EXPORT_ASSETS + 1);
    const named = new Set(req.assetIds ?? []);
    const pickedIds = new Set(picked.map((a) => a.id));
    let missing = (req.assetIds ?? []).filter((id) => !pickedIds.has(id));
    if (missing.length > 0 && picked.length > MAX_EXPORT_ASSETS) {
      // The selection was cut at its limit, so an id left out of it may still name an asset.
      const found = new Set((await repo.assetsByIds(ownerId, missing)).map((a) => a.id));
      missing = missing.filter((id) => !found.has(id));
    }
    // Sets: a filter may list as many names as the body holds (2 MB), each asset looked up once.
    const filters = new Map(Object.entries(req.jobAssetNameFilters ?? {}).map(([job, names]) => [job, new Set(names)]));
    const kept = picked.filter((a) => {
      if (named.has(a.id) || !a.promptId) return true;
      const names = filters.get(a.promptId);
      // A name, or the asset's `hash` (as ComfyUI's export matches it): clients that know outputs by hash.
      return !names || names.has(a.name) || names.has(`blake3:${a.contentHash}`);
    });
    if (!req.includePreviews) return { members: kept, missing };
    const have = new Set(kept.map((a) => a.id));
    const previewIds = [...new Set(kept.flatMap((a) => (a.previewId && !have.has(a.previewId) ? [a.previewId] : [])))];
    return { members: [...kept, ...(await repo.assetsByIds(ownerId, previewIds))], missing };
  }
}

const sum = (assets: ExportableAsset[]): number => assets.reduce((n, a) => n + a.size, 0);

/**
 * The name a saved archive gets (Content-Disposition): when it was made, in UTC (`assets-2026-11-27-1530.zip`), which
 * says more to a person than the archive's id.
 */
export function downloadNameOf(createdAt: Date | undefined): string {
  const t = (createdAt ?? new Date()).toISOString();
  return `assets-${t.slice(0, 10)}-${t.slice(11, 13)}${t.slice(14, 16)}.zip`;
}
