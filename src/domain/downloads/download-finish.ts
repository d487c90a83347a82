import type { Principal } from '../assets/asset.types';
import { isDomainError } from '../errors';
import type { DownloadDeps } from './download.service';
import type { Transfer } from './download.repository';
import type { TransferProgress } from './download-lease';

/**
 * A stored transfer: gives each waiting task its asset (or its own failure), then completes the transfer once no
 * task waits on it any more. When every task was cancelled meanwhile, the content is left to GC.
 */
export async function finishWaitingTasks(d: DownloadDeps, t: Transfer, blake3: string): Promise<void> {
  let assets = 0;
  for (;;) {
    for (const task of await d.tasks.activeOfTransfer(t.id)) {
      const principal: Principal = { ownerId: task.ownerId, scopes: ['read', 'write'], keyId: `task:${task.id}` };
      const { payload } = task;
      try {
        const { asset } = await d.assets.createFromStored(
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
        await d.tasks.complete(task.id, {
          success: true,
          assetId: asset.id,
          assetHash: `blake3:${asset.blake3}`,
          filename: asset.name,
          bytesDownloaded: asset.size,
        });
      } catch (err) {
        if (!isDomainError(err)) throw err;
        await d.tasks.fail({ id: task.id }, `${err.code}: ${err.message}`, {
          bytes: t.bytesDownloaded,
          total: t.bytesTotal,
        });
      }
    }
    const done = await d.transactions.run(async (tx) => {
      await d.repo.lockUrl(t.sourceUrl, tx);
      if ((await d.tasks.countActiveOfTransfer(t.id, tx)) > 0) return false;
      await d.repo.finish(t.id, 'completed', null, tx);
      return true;
    });
    if (done) break;
  }
  if (assets === 0) {
    // Everyone cancelled while the last bytes arrived: let GC take the content like any unreferenced one.
    await d.transactions.run(async (tx) => {
      await d.content.lock(blake3, tx);
      await d.content.releaseIfUnused(tx, blake3);
    });
  }
}

/** A transfer that failed for good: it and every task waiting on it fail with `message`. */
export async function failTransferAndTasks(
  d: DownloadDeps,
  t: Transfer,
  message: string,
  progress: TransferProgress,
): Promise<void> {
  await d.transactions.run(async (tx) => {
    await d.repo.lockUrl(t.sourceUrl, tx);
    await d.repo.finish(t.id, 'failed', message, tx);
    await d.tasks.fail({ transferId: t.id }, message, progress, tx);
  });
}
