import type { Logger } from '../../infra/logger';
import { isDomainError } from '../errors';
import type { DownloadRepository } from './download.repository';

/** Why a transfer's worker stops before the end: passed as the AbortController's reason. */
export type StopReason = 'cancelled' | 'lease-lost' | 'shutdown';

/** How far a transfer got: updated by the transfer, saved by the lease ticks. */
export interface TransferProgress {
  bytes: number;
  total: number | null;
}

/**
 * The worker's hold on a claimed transfer: every `tickMs` it renews the lease, saves progress when due (at most
 * once a second and once per 1 %), and aborts the transfer when it was cancelled or the lease was lost. A lease
 * that cannot be renewed for most of its length aborts too, before another worker may take the transfer over.
 */
export function holdLease(opts: {
  repo: DownloadRepository;
  transferId: string;
  token: string;
  leaseMs: number;
  tickMs: number;
  progress: TransferProgress;
  abort: AbortController;
  log: Logger;
}): { release(): void } {
  const { repo, transferId, token, leaseMs, progress, abort, log } = opts;
  const saved = { at: Date.now(), bytes: progress.bytes };
  let ticking = false;
  let renewedAt = Date.now();
  const tick = setInterval(async () => {
    if (ticking) return;
    ticking = true;
    try {
      const pct = progress.total ? progress.total / 100 : 0;
      const due =
        progress.bytes !== saved.bytes && Date.now() - saved.at >= 1000 && progress.bytes - saved.bytes >= pct;
      const status = await repo.renew(transferId, token, leaseMs, due ? progress : undefined);
      renewedAt = Date.now();
      if (due) Object.assign(saved, { at: Date.now(), bytes: progress.bytes });
      if (status === undefined) abort.abort('lease-lost' satisfies StopReason);
      else if (status === 'cancelled') abort.abort('cancelled' satisfies StopReason);
    } catch (err) {
      log.warn('could not renew a download lease', { err: isDomainError(err) ? err.message : err });
      // Another worker may take the transfer over once the lease lapses: stop writing before that can happen.
      if (Date.now() - renewedAt > leaseMs * 0.8) abort.abort('lease-lost' satisfies StopReason);
    } finally {
      ticking = false;
    }
  }, opts.tickMs);
  return { release: () => clearInterval(tick) };
}
