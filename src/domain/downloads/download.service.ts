import crypto from 'node:crypto';
import type { BlobStore } from '../../infra/blob-store/blob-store';
import type { IngestWorkers } from '../../infra/blob-store/ingest-pool';
import type { HttpFetcher } from '../../infra/http-fetch';
import type { Logger } from '../../infra/logger';
import type { Transactions } from '../../infra/prisma';
import type { AssetService } from '../assets/asset.service';
import type { AssetCreateFields, AssetCreateInput, CreateResult, Principal } from '../assets/asset.types';
import { validateCreateFields } from '../assets/validation';
import type { ContentService } from '../content/content.service';
import type { QuotaService } from '../quotas/quota.service';
import type { ContentDigest } from '../content/hashing';
import { AlreadyExists, DomainError, isDomainError } from '../errors';
import { assertStorableText, idempotencyKeyOf } from '../input';
import { JOB, type Queue } from '../job-map';
import type { TaskRepository } from '../tasks/task.repository';
import type { TransferMeter } from '../transfer-meter';
import type { DownloadRequest, DownloadStart, RemoteMetadata, Task } from '../tasks/task.types';
import type { DownloadRepository } from './download.repository';
import type { Providers } from './providers';
import { lastSegment, SourceError, type SourceMetadata } from './providers/provider';
import { describeRemote } from './remote-metadata';
import { SourceTransfer, withRetries } from './source-transfer';

/** A provider that does not answer the metadata request in time is treated as stating nothing. */
export const PROBE_TIMEOUT_MS = 15_000;

export interface DownloadDeps {
  transactions: Transactions;
  repo: DownloadRepository;
  tasks: TaskRepository;
  providers: Providers;
  assets: AssetService;
  /** The early checks of a download whose size the provider states (the final one is the asset insert's). */
  quotas: QuotaService;
  content: ContentService;
  queue: Queue;
  fetcher: HttpFetcher;
  blobs: BlobStore;
  /** The ingest threads, which hash the downloaded bytes. */
  hashers: IngestWorkers;
  logger: Logger;
  /** Counts downloaded bytes and downloads in flight (metrics). */
  meter?: TransferMeter;
  /** A task's body is fetched, written and hashed on an ingest worker (SourceTransferDeps.bodiesOnWorker). */
  bodiesOnWorker?: boolean;
}

/** The mismatch, if the provider stated a hash and the bytes have another. */
export function digestMismatch(
  digest: ContentDigest,
  expected: { sha256?: string | null; blake3?: string | null },
): string | undefined {
  if (expected.sha256 && digest.sha256 !== expected.sha256) {
    return `the file's SHA-256 is ${digest.sha256}, the provider states ${expected.sha256}`;
  }
  if (expected.blake3 && digest.blake3 !== expected.blake3) {
    return `the file's BLAKE3 is ${digest.blake3}, the provider states ${expected.blake3}`;
  }
  return undefined;
}

/**
 * Starting downloads and the synchronous URL upload (POST /api/assets with a JSON `url`). Content that is already
 * stored (the provider states its hash, or this URL was downloaded before) becomes an asset at once; anything else
 * becomes a task on a transfer that every owner asking for the same URL meanwhile shares.
 */
export class DownloadService {
  constructor(private readonly d: DownloadDeps) {}

  /** The import wizard's first step: the same URL rules and provider look-ups, no byte of the file. */
  async remoteMetadata(_principal: Principal, rawUrl: string): Promise<RemoteMetadata> {
    if (typeof rawUrl !== 'string' || rawUrl.trim() === '')
      throw new DomainError('INVALID_QUERY', 'url is required', { parameter: 'url' });
    const signal = AbortSignal.timeout(PROBE_TIMEOUT_MS);
    const { provider, url } = await this.d.providers.locate(rawUrl, signal);
    return describeRemote(
      { fetcher: this.d.fetcher, maxUploadBytes: this.d.content.maxUploadBytes },
      provider,
      url,
      signal,
    );
  }

  async start(principal: Principal, req: DownloadRequest): Promise<DownloadStart> {
    if (typeof req.sourceUrl !== 'string' || req.sourceUrl.trim() === '') {
      throw new DomainError('INVALID_BODY', 'source_url is required', { field: 'source_url' });
    }
    const fields = validateCreateFields({ tags: req.tags, userMetadata: req.userMetadata, previewId: req.previewId });
    assertStorableText(req.sourceUrl, 'source_url');
    const key = idempotencyKeyOf(req.idempotencyKey);
    const owner = principal.ownerId;
    // A retry with the same key answers the first task before anything asks the provider (a model page's newest
    // version is a look-up that may fail or move while the task it started runs).
    const retried = key && (await this.d.tasks.findByIdempotencyKey(owner, key));
    if (retried) return { task: retried };
    const { provider, url } = await this.d.providers.locate(req.sourceUrl, AbortSignal.timeout(PROBE_TIMEOUT_MS));
    const sourceUrl = url.href;

    const existing = await this.d.tasks.findActiveForUrl(owner, sourceUrl);
    if (existing) return { task: existing };
    if (fields.previewId && (await this.d.assets.getMany(principal, [fields.previewId])).length === 0) {
      throw new DomainError('INVALID_PREVIEW_ID', `preview_id ${fields.previewId} names no asset of yours`);
    }

    const meta = await provider.probe(url, AbortSignal.timeout(PROBE_TIMEOUT_MS));
    const assetFields: AssetCreateFields = {
      ...fields,
      userMetadata: { ...fields.userMetadata, source_url: sourceUrl },
      sourceUrl,
    };
    const known = await this.knownContent(sourceUrl, meta);
    if (known) {
      const asset = await this.fromStored(principal, { ...assetFields, name: known.fileName }, known.blake3);
      if (asset) return { asset };
    }
    // New content of a stated size that cannot fit: refused before a task or a transfer is made.
    if (meta.size !== undefined) await this.d.quotas.precheck(owner, meta.size);

    try {
      const outcome = await this.d.transactions.run(
        async (tx): Promise<{ task: Task } | { stored: { blake3: string; fileName: string } }> => {
          await this.d.repo.lockUrl(sourceUrl, tx);
          const again =
            (key && (await this.d.tasks.findByIdempotencyKey(owner, key, tx))) ||
            (await this.d.tasks.findActiveForUrl(owner, sourceUrl, tx));
          if (again) return { task: again };
          // A transfer of this URL may have finished since the look-up above.
          const stored = meta.sha256 || meta.blake3 ? undefined : await this.d.repo.findSource(sourceUrl, tx);
          if (stored) return { stored };
          let transfer = await this.d.repo.findActive(sourceUrl, tx);
          if (!transfer) {
            const id = crypto.randomUUID();
            await this.d.repo.insert(
              {
                id,
                sourceUrl,
                provider: provider.name,
                fileName: meta.fileName,
                expectedSha256: meta.sha256,
                expectedBlake3: meta.blake3,
                bytesTotal: meta.size,
              },
              tx,
            );
            await this.d.queue.send(JOB.downloadTransfer, { transferId: id }, { tx });
            transfer = { id, status: 'queued' } as NonNullable<typeof transfer>;
          }
          const task = await this.d.tasks.insert(
            {
              id: crypto.randomUUID(),
              ownerId: owner,
              idempotencyKey: key,
              sourceUrl,
              tags: fields.tags ?? [],
              userMetadata: fields.userMetadata ?? {},
              previewId: fields.previewId ?? null,
              transferId: transfer.id,
              running: transfer.status === 'running',
            },
            tx,
          );
          return { task };
        },
        { timeoutMs: 30_000, maxWaitMs: 30_000 },
      );
      if ('task' in outcome) {
        // The job is committed: start it here now rather than at the worker's next poll (up to a second later).
        this.d.queue.wake(JOB.downloadTransfer);
        return outcome;
      }
      const asset = await this.fromStored(
        principal,
        { ...assetFields, name: outcome.stored.fileName },
        outcome.stored.blake3,
      );
      if (asset) return { asset };
      throw new DomainError('SERVICE_UNAVAILABLE', 'the stored content of this URL was just removed; try again');
    } catch (err) {
      // Two requests with one idempotency key: the loser answers with the winner's task.
      if (key && err instanceof AlreadyExists) {
        const winner = await this.d.tasks.findByIdempotencyKey(owner, key);
        if (winner) return { task: winner };
      }
      throw err;
    }
  }

  /**
   * POST /api/assets with `{url}`: fetched now, under the same rules (allowed providers, checked redirects, the
   * provider's hash verified), with a few quick retries but no resume.
   */
  async uploadFromUrl(principal: Principal, rawUrl: unknown, input: AssetCreateInput): Promise<CreateResult> {
    if (typeof rawUrl !== 'string' || rawUrl.trim() === '')
      throw new DomainError('INVALID_BODY', 'url is required', { field: 'url' });
    assertStorableText(rawUrl, 'url');
    const fields = validateCreateFields(input);
    const { provider, url } = await this.d.providers.locate(rawUrl, AbortSignal.timeout(PROBE_TIMEOUT_MS));
    const sourceUrl = url.href;
    const meta = await provider.probe(url, AbortSignal.timeout(PROBE_TIMEOUT_MS));
    const withSource: AssetCreateFields = {
      ...fields,
      userMetadata: { ...fields.userMetadata, source_url: sourceUrl },
      sourceUrl,
    };
    const known = await this.knownContent(sourceUrl, meta);
    if (known) {
      const stored = await this.d.assets
        .createFromStored(
          principal,
          { ...withSource, name: fields.name ?? known.fileName },
          { algorithm: 'blake3', hex: known.blake3 },
        )
        .catch((err: unknown) =>
          isDomainError(err) && err.code === 'CONTENT_NOT_FOUND' ? undefined : Promise.reject(err),
        );
      if (stored) return stored;
    }
    if (meta.size !== undefined) await this.d.quotas.precheck(principal.ownerId, meta.size);
    const transfer = new SourceTransfer(
      { fetcher: this.d.fetcher, blobs: this.d.blobs, hashers: this.d.hashers, meter: this.d.meter },
      { url, auth: provider.auth(), validator: null, maxBytes: this.d.content.maxUploadBytes },
    );
    let ingested;
    try {
      ingested = await withRetries(transfer, () => transfer.attempt(), { maxFailures: 3, baseDelayMs: 500 });
    } catch (err) {
      if (err instanceof SourceError) {
        const code =
          err.code === 'SOURCE_AUTH_REQUIRED' || err.code === 'SOURCE_NOT_FOUND' || err.code === 'PAYLOAD_TOO_LARGE'
            ? err.code
            : 'DOWNLOAD_FAILED';
        throw new DomainError(code, `could not fetch ${sourceUrl}: ${err.message}`);
      }
      throw err;
    } finally {
      transfer.close();
    }
    const mismatch = digestMismatch(ingested.digest, meta);
    if (mismatch) {
      await this.d.content.discard(ingested);
      throw new DomainError('HASH_MISMATCH', `the download does not match the provider's hash: ${mismatch}`);
    }
    const fileName = transfer.fileName ?? meta.fileName ?? lastSegment(url) ?? 'download';
    const result = await this.d.assets.createFromIngested(principal, { ...withSource, fileName }, ingested, {
      fileName,
    });
    await this.d.repo
      .saveSource(sourceUrl, result.asset.blake3, fileName)
      .catch((err: unknown) => this.d.logger.warn('could not remember the source of a download', { err }));
    return result;
  }

  /** Stored content for this URL: by the hash the provider states, else (no hash stated) by an earlier download. */
  private async knownContent(
    sourceUrl: string,
    meta: SourceMetadata,
  ): Promise<{ blake3: string; fileName: string } | undefined> {
    const name = meta.fileName ?? lastSegment(new URL(sourceUrl)) ?? 'download';
    if (meta.sha256 || meta.blake3) {
      const hash = meta.blake3
        ? { algorithm: 'blake3' as const, hex: meta.blake3 }
        : { algorithm: 'sha256' as const, hex: meta.sha256! };
      const stored = await this.d.content.find(hash);
      if (stored && (!meta.sha256 || stored.sha256 === meta.sha256)) return { blake3: stored.blake3, fileName: name };
      return undefined;
    }
    return this.d.repo.findSource(sourceUrl);
  }

  private async fromStored(
    principal: Principal,
    fields: AssetCreateFields,
    blake3: string,
  ): Promise<CreateResult | undefined> {
    try {
      return await this.d.assets.createFromStored(principal, fields, { algorithm: 'blake3', hex: blake3 });
    } catch (err) {
      // Removed by GC since the look-up: download it again.
      if (isDomainError(err) && err.code === 'CONTENT_NOT_FOUND') return undefined;
      throw err;
    }
  }
}
