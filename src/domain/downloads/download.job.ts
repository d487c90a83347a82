import crypto from 'node:crypto';
import { FetchError } from '../../infra/http-fetch';
import type { JobOptions } from '../../infra/queue';
import { isDomainError, isOwnStoreFailure } from '../errors';
import { JOB, type JobMap, type ServiceJob } from '../job-map';
import type { DownloadDeps } from './download.service';
import type { Transfer } from './download.repository';
import { failTransferAndTasks, finishWaitingTasks } from './download-finish';
import { holdLease, type StopReason, type TransferProgress } from './download-lease';
import { downloadAndStore, partialName } from './download-store';

export interface DownloadJobOptions {
  /** How long a worker's claim on a transfer lasts without renewal. */
  leaseMs: number;
  /** How often the lease is renewed, cancellation checked and (when due) progress saved. */
  tickMs: number;
  /** pg-boss attempts of one job (failures of the service itself, not of the network). */
  retryLimit: number;
}

export const DEFAULT_JOB_OPTIONS: DownloadJobOptions = { leaseMs: 10_000, tickMs: 500, retryLimit: 5 };

export const downloadTransferJob: ServiceJob<{ downloadJob: DownloadJob }, typeof JOB.downloadTransfer> = {
  name: JOB.downloadTransfer,
  define: ({ downloadJob }) => downloadJob.definition(),
};

/**
 * Every minute, on one instance: re-enqueues running transfers whose lease expired (their worker was killed or lost
 * its database). A schedule rather than a timer per process, so a deployment of many instances sweeps once.
 */
export const downloadSweepJob: ServiceJob<{ downloadJob: DownloadJob }, typeof JOB.downloadSweep> = {
  name: JOB.downloadSweep,
  define: ({ downloadJob }) => ({
    cron: '* * * * *',
    handler: async () => {
      await downloadJob.sweep();
    },
  }),
};

/**
 * The pg-boss job that drives one transfer: claims it under a lease (download-lease.ts: renewed, progress saved at
 * most once a second and once per 1 %, a cancellation noticed within `tickMs`), streams and stores it
 * (download-store.ts), and gives every task waiting on it its asset (download-finish.ts). Failures, shutdown and
 * the sweep for transfers whose worker died (`downloadSweepJob`) are handled here.
 */
export class DownloadJob {
  private readonly local = new Map<string, AbortController>();
  private stopping = false;

  constructor(
    private readonly d: DownloadDeps & { maxBytes: number },
    private readonly o: DownloadJobOptions = DEFAULT_JOB_OPTIONS,
  ) {}

  /** The pg-boss job's options and handler (registered through `downloadTransferJob`). */
  definition(): JobOptions<JobMap[typeof JOB.downloadTransfer]> {
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

  /** Stops this process's transfers (they keep their partial files and are resumed elsewhere or after restart). */
  async stop(): Promise<void> {
    this.stopping = true;
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
    const progress: TransferProgress = { bytes: t.bytesDownloaded, total: t.bytesTotal };
    const lease = holdLease({
      repo: this.d.repo,
      transferId: t.id,
      token,
      leaseMs: this.o.leaseMs,
      tickMs: this.o.tickMs,
      progress,
      abort: ac,
      log,
    });
    try {
      await this.d.tasks.markRunning(t.id);
      const blake3 = t.contentHash ?? (await downloadAndStore(this.d, t, token, ac.signal, progress, log));
      await finishWaitingTasks(this.d, t, blake3);
    } catch (err) {
      await this.handleFailure(t, token, err, ac.signal, job.retryCount, progress, log);
    } finally {
      lease.release();
      job.signal.removeEventListener('abort', onJobAbort);
      this.local.delete(t.id);
    }
  }

  private async handleFailure(
    t: Transfer,
    token: string,
    err: unknown,
    signal: AbortSignal,
    retryCount: number,
    progress: TransferProgress,
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
    if (isDomainError(err) && !isOwnStoreFailure(err)) {
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

  private async failTransfer(t: Transfer, message: string, progress: TransferProgress): Promise<void> {
    // The partial file goes first: a client that sees the task failed finds nothing of it left.
    await this.discardPartial(t.id);
    await failTransferAndTasks(this.d, t, message, progress);
  }

  private async discardPartial(transferId: string): Promise<void> {
    const partial = await this.d.blobs.openPartial(partialName(transferId));
    await partial.discard().catch((err: unknown) => this.d.logger.warn('could not remove a partial download', { err }));
  }

  /**
   * Re-enqueues running transfers whose lease expired: their worker was killed or lost its database. A page of 20 at
   * a time (one short transaction each), until none is left: the sweep runs once a minute.
   */
  async sweep(): Promise<void> {
    const PAGE = 20;
    try {
      while (!this.stopping) {
        const ids = await this.d.repo.takeOrphans(PAGE, 3 * this.o.leaseMs, async (id, tx) => {
          await this.d.queue.send(JOB.downloadTransfer, { transferId: id }, { tx });
        });
        if (ids.length > 0) {
          this.d.queue.wake(JOB.downloadTransfer);
          this.d.logger.info('resuming downloads whose worker stopped', { transfer_ids: ids });
        }
        if (ids.length < PAGE) return;
      }
    } catch (err) {
      if (!this.stopping) this.d.logger.warn('download sweep failed', { err: isDomainError(err) ? err.message : err });
    }
  }
}
