import crypto from 'node:crypto';
import { FetchError } from '../../infra/http-fetch';
import type { Job, JobDefinition } from '../../infra/queue';
import type { Principal } from '../assets/asset.types';
import type { IngestedContent } from '../content/content.service';
import { DEFAULT_MIME, mimeFromName } from '../content/mime';
import { isDomainError } from '../errors';
import type { DownloadDeps } from './download.service';
import { digestMismatch, DOWNLOAD_JOB, PROBE_TIMEOUT_MS } from './download.service';
import type { Transfer } from './download.repository';
import { lastSegment, SourceError } from './providers/provider';
import { SourceTransfer, withRetries } from './source-transfer';

export interface DownloadJobOptions {
  /** How long a worker's claim on a transfer lasts without renewal. */
  leaseMs: number;
  /** How often the lease is renewed, cancellation checked and (when due) progress saved. */
  tickMs: number;
  /** How often each worker looks for transfers whose worker died. */
  sweepMs: number;
  /** pg-boss attempts of one job (failures of the service itself, not of the network). */
  retryLimit: number;
}

export const DEFAULT_JOB_OPTIONS: DownloadJobOptions = { leaseMs: 10_000, tickMs: 500, sweepMs: 3_000, retryLimit: 5 };

export const downloadTransferJob: Job<{ downloadJob: DownloadJob }, { transferId: string }> = {
  name: DOWNLOAD_JOB,
  define: ({ downloadJob }) => downloadJob.definition(),
};

type StopReason = 'cancelled' | 'lease-lost' | 'shutdown';
const partialName = (transferId: string) => `download-${transferId}`;

/**
 * The pg-boss job that drives one transfer: claims it under a lease, streams it (resuming what an earlier attempt or
 * process left), verifies the provider's hash, commits the content, and gives every task waiting on it its asset.
 * Saves progress at most once a second and once per 1 %, and notices a cancellation within `tickMs`.
 */
export class DownloadJob {
  private readonly local = new Map<string, AbortController>();
  private sweeper: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(
    private readonly d: DownloadDeps & { maxBytes: number },
    private readonly o: DownloadJobOptions = DEFAULT_JOB_OPTIONS,
  ) {}

  /** The pg-boss job's options and handler (registered through `downloadTransferJob`). */
  definition(): Omit<JobDefinition<{ transferId: string }>, 'name'> {
    return {
      concurrency: 4,
      retryLimit: this.o.retryLimit,
      retryDelaySeconds: 5,
      retryBackoff: true,
      // The lease, not pg-boss's expiry, decides whether a transfer is alive: downloads can take hours.
      expireInSeconds: 24 * 3600,
      heartbeatSeconds: 30,
      pollingIntervalSeconds: 1,
      handler: (data, job) => this.run(data.transferId, job),
    };
  }

  /** In processes that work on jobs: looks for transfers whose worker died, every `sweepMs`. */
  startSweeping(): void {
    this.sweeper = setInterval(() => void this.sweep(), this.o.sweepMs);
    this.sweeper.unref();
  }

  /** Stops this process's transfers (they keep their partial files and are resumed elsewhere or after restart). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.sweeper) clearInterval(this.sweeper);
    for (const ac of this.local.values()) ac.abort('shutdown' satisfies StopReason);
    const deadline = Date.now() + 5000;
    while (this.local.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  /** A cancelled transfer: stop it now if it runs here, and remove its partial file wherever it runs. */
  async cancelled(transferId: string): Promise<void> {
    this.local.get(transferId)?.abort('cancelled' satisfies StopReason);
    await this.discardPartial(transferId);
  }

  async run(transferId: string, job: { retryCount: number; signal: AbortSignal }): Promise<void> {
    if (this.stopping) throw new Error('shutting down');
    const token = crypto.randomUUID();
    const t = await this.d.repo.claim(transferId, token, this.o.leaseMs);
    if (!t) return; // finished, cancelled, or alive on another worker
    const log = this.d.logger.child({ transfer_id: t.id });
    log.info('download started', { resume_from: t.bytesDownloaded, attempt: job.retryCount + 1 });
    const ac = new AbortController();
    this.local.set(t.id, ac);
    const onJobAbort = () => ac.abort('shutdown' satisfies StopReason);
    job.signal.addEventListener('abort', onJobAbort, { once: true });
    const progress = { bytes: t.bytesDownloaded, total: t.bytesTotal, savedAt: Date.now(), savedBytes: t.bytesDownloaded };
    let ticking = false;
    let renewedAt = Date.now();
    const tick = setInterval(async () => {
      if (ticking) return;
      ticking = true;
      try {
        const pct = progress.total ? progress.total / 100 : 0;
        const due = progress.bytes !== progress.savedBytes && Date.now() - progress.savedAt >= 1000 && progress.bytes - progress.savedBytes >= pct;
        const status = await this.d.repo.renew(t.id, token, this.o.leaseMs, due ? progress : undefined);
        renewedAt = Date.now();
        if (due) Object.assign(progress, { savedAt: Date.now(), savedBytes: progress.bytes });
        if (status === undefined) ac.abort('lease-lost' satisfies StopReason);
        else if (status === 'cancelled') ac.abort('cancelled' satisfies StopReason);
      } catch (err) {
        log.warn('could not renew a download lease', { err: isDomainError(err) ? err.message : err });
        // Another worker may take the transfer over once the lease lapses: stop writing before that can happen.
        if (Date.now() - renewedAt > this.o.leaseMs * 0.8) ac.abort('lease-lost' satisfies StopReason);
      } finally {
        ticking = false;
      }
    }, this.o.tickMs);
    try {
      await this.d.tasks.markRunning(t.id);
      const blake3 = t.contentHash ?? (await this.download(t, token, ac.signal, progress, log));
      if (blake3) await this.finalize(t, blake3);
    } catch (err) {
      await this.handleFailure(t, token, err, ac.signal, job.retryCount, progress, log);
    } finally {
      clearInterval(tick);
      job.signal.removeEventListener('abort', onJobAbort);
      this.local.delete(t.id);
    }
  }

  /** Streams the transfer to its partial file and stores the content; returns its BLAKE3, undefined if it failed. */
  private async download(
    t: Transfer,
    token: string,
    signal: AbortSignal,
    progress: { bytes: number; total: number | null },
    log: DownloadDeps['logger'],
  ): Promise<string | undefined> {
    const { provider, url } = this.d.providers.resolve(t.sourceUrl);
    const expected = { sha256: t.expectedSha256, blake3: t.expectedBlake3 };
    if (!expected.sha256 && !expected.blake3) Object.assign(expected, await provider.probe(url, AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)])));
    const transfer = new SourceTransfer(
      { fetcher: this.d.fetcher, blobs: this.d.blobs, hashers: this.d.hashers, meter: this.d.meter },
      {
        url,
        auth: provider.auth(),
        partialName: partialName(t.id),
        validator: t.validator,
        maxBytes: this.d.maxBytes,
        signal,
        onResponse: async (r) => {
          progress.total = r.total;
          progress.bytes = r.offset;
          await this.d.repo.saveResponse(t.id, token, { validator: r.validator, total: r.total, bytes: r.offset, fileName: r.fileName });
        },
      },
    );
    const counter = setInterval(() => (progress.bytes = transfer.bytes), 100);
    const startedAt = Date.now();
    let ingested: IngestedContent;
    try {
      ingested = await withRetries(transfer, () => transfer.attempt(), {
        signal,
        onRetry: (err, delayMs) => log.info('download interrupted; retrying', { reason: err.message, delay_ms: Math.round(delayMs), bytes: transfer.bytes }),
      });
    } finally {
      clearInterval(counter);
      transfer.close();
    }
    progress.bytes = ingested.digest.size;
    const mismatch = digestMismatch(ingested.digest, expected);
    if (mismatch) throw new SourceError('HASH_MISMATCH', `the download does not match the provider's hash: ${mismatch}`);
    const fileName = transfer.fileName ?? t.fileName ?? lastSegment(url) ?? 'download';
    const mimeType = ingested.sniffedMime && ingested.sniffedMime !== DEFAULT_MIME ? ingested.sniffedMime : (mimeFromName(fileName) ?? DEFAULT_MIME);
    const blake3 = ingested.digest.blake3;
    try {
      // The copy to the content address (slow on S3 for large files) happens before the lock: see precommit.
      await this.d.content.precommit(ingested);
      await this.d.transactions.run(
        async (tx) => {
          await this.d.content.lock(blake3, tx);
          await this.d.content.ensureStored(tx, ingested, { name: fileName, mimeType });
          await this.d.repo.saveSource(t.sourceUrl, blake3, fileName, tx);
          await this.d.repo.setStored(t.id, blake3, ingested.digest.size, fileName, tx);
        },
        { timeoutMs: 120_000, maxWaitMs: 30_000 },
      );
    } finally {
      await this.d.content.discard(ingested);
    }
    t.fileName = fileName;
    const seconds = (Date.now() - startedAt) / 1000;
    log.info('download stored', { blake3, bytes: ingested.digest.size, seconds, mib_per_s: Math.round(ingested.digest.size / 1048576 / seconds) });
    return blake3;
  }

  /** Gives each waiting task its asset, then completes the transfer once no task waits on it any more. */
  private async finalize(t: Transfer, blake3: string): Promise<void> {
    let assets = 0;
    for (;;) {
      for (const task of await this.d.tasks.activeOfTransfer(t.id)) {
        const principal: Principal = { ownerId: task.ownerId, isAdmin: false, keyId: `task:${task.id}` };
        const { payload } = task;
        try {
          const { asset } = await this.d.assets.createFromStored(
            principal,
            {
              name: t.fileName ?? undefined,
              fileName: t.fileName ?? undefined,
              sourceUrl: t.sourceUrl,
              tags: payload.tags,
              userMetadata: { ...payload.userMetadata, source_url: t.sourceUrl },
              previewId: payload.previewId,
            },
            { algorithm: 'blake3', hex: blake3 },
          );
          assets++;
          await this.d.tasks.complete(task.id, {
            success: true,
            assetId: asset.id,
            assetHash: `blake3:${asset.blake3}`,
            filename: asset.name,
            bytesDownloaded: asset.size,
          });
        } catch (err) {
          if (!isDomainError(err)) throw err;
          await this.d.tasks.fail({ id: task.id }, `${err.code}: ${err.message}`, { bytes: t.bytesDownloaded, total: t.bytesTotal });
        }
      }
      const done = await this.d.transactions.run(async (tx) => {
        await this.d.repo.lockUrl(t.sourceUrl, tx);
        if ((await this.d.tasks.countActiveOfTransfer(t.id, tx)) > 0) return false;
        await this.d.repo.finish(t.id, 'completed', null, tx);
        return true;
      });
      if (done) break;
    }
    if (assets === 0) {
      // Everyone cancelled while the last bytes arrived: let GC take the content like any unreferenced one.
      await this.d.transactions.run(async (tx) => {
        await this.d.content.lock(blake3, tx);
        await this.d.content.releaseIfUnused(tx, blake3);
      });
    }
  }

  private async handleFailure(
    t: Transfer,
    token: string,
    err: unknown,
    signal: AbortSignal,
    retryCount: number,
    progress: { bytes: number; total: number | null },
    log: DownloadDeps['logger'],
  ): Promise<void> {
    const reason = signal.aborted ? (signal.reason as StopReason) : undefined;
    if (reason === 'cancelled') {
      await this.discardPartial(t.id);
      log.info('download cancelled', { bytes: progress.bytes });
      return;
    }
    if (reason === 'lease-lost') return;
    if (reason === 'shutdown' || (err instanceof FetchError && err.kind === 'aborted')) {
      await this.d.repo.release(t.id, token).catch(() => undefined);
      return;
    }
    if (isDomainError(err)) {
      // A final answer (bad status, blocked redirect, hash mismatch, too many failures): nothing is kept.
      const message = `${err.code}: ${err.message}`;
      log.warn('download failed', { reason: message });
      await this.failTransfer(t, message, progress);
      return;
    }
    log.error('download job failed', { err, retry_count: retryCount });
    if (retryCount >= this.o.retryLimit) {
      await this.failTransfer(t, `DOWNLOAD_FAILED: ${(err as Error).message ?? String(err)}`, progress);
      return;
    }
    await this.d.repo.release(t.id, token).catch(() => undefined);
    throw err;
  }

  private async failTransfer(t: Transfer, message: string, progress: { bytes: number; total: number | null }): Promise<void> {
    // The partial file goes first: a client that sees the task failed finds nothing of it left.
    await this.discardPartial(t.id);
    await this.d.transactions.run(async (tx) => {
      await this.d.repo.lockUrl(t.sourceUrl, tx);
      await this.d.repo.finish(t.id, 'failed', message, tx);
      await this.d.tasks.fail({ transferId: t.id }, message, progress, tx);
    });
  }

  private async discardPartial(transferId: string): Promise<void> {
    if (!this.d.blobs.openPartial) return;
    const partial = await this.d.blobs.openPartial(partialName(transferId));
    await partial.discard().catch((err: unknown) => this.d.logger.warn('could not remove a partial download', { err }));
  }

  /** Re-enqueues running transfers whose lease expired: their worker was killed or lost its database. */
  private async sweep(): Promise<void> {
    if (this.stopping) return;
    try {
      const ids = await this.d.repo.takeOrphans(20, 3 * this.o.leaseMs, async (id, tx) => {
        await this.d.queue.send(DOWNLOAD_JOB, { transferId: id }, { tx });
      });
      if (ids.length) this.d.logger.info('resuming downloads whose worker stopped', { transfer_ids: ids });
    } catch (err) {
      if (!this.stopping) this.d.logger.warn('download sweep failed', { err: isDomainError(err) ? err.message : err });
    }
  }
}
