import type { Task } from '../../domain/tasks/task.types';

/** Task JSON exactly as contract 4.2. */
export function taskJson(t: Task): Record<string, unknown> {
  return {
    id: t.id,
    idempotency_key: t.idempotencyKey,
    task_name: t.taskName,
    payload: t.exportRequest ?? {
      source_url: t.payload.sourceUrl,
      tags: t.payload.tags,
      user_metadata: t.payload.userMetadata,
      preview_id: t.payload.previewId,
    },
    status: t.status,
    create_time: t.createTime.toISOString(),
    update_time: t.updateTime.toISOString(),
    started_at: t.startedAt?.toISOString() ?? null,
    completed_at: t.completedAt?.toISOString() ?? null,
    progress: {
      bytes_downloaded: t.progress.bytesDownloaded,
      bytes_total: t.progress.bytesTotal,
      progress: t.progress.progress,
    },
    result: t.result && t.taskName === 'export_assets'
      ? {
          export_name: t.result.exportName,
          assets_total: t.result.assetsTotal,
          assets_attempted: t.result.assetsAttempted,
          assets_failed: t.result.assetsFailed,
          bytes_total: t.result.bytesTotal,
        }
      : t.result
      ? {
          success: t.result.success,
          asset_id: t.result.assetId,
          asset_hash: t.result.assetHash,
          filename: t.result.filename,
          bytes_downloaded: t.result.bytesDownloaded,
        }
      : null,
    error_message: t.errorMessage,
  };
}
