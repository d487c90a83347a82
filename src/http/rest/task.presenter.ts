import type { ImportProgress } from '../../domain/imports/import.types';
import { exportFigures, type ExportRequest, type Task, type TaskResult } from '../../domain/tasks/task.types';

/** Task JSON (openapi.yaml's Task); fields without a value are left out, never `null`. */
export function taskJson(t: Task): Record<string, unknown> {
  const progress: Record<string, unknown> = { bytes_downloaded: t.progress.bytesDownloaded };
  if (t.progress.bytesTotal !== null) progress.bytes_total = t.progress.bytesTotal;
  if (t.progress.progress !== null) progress.progress = t.progress.progress;
  const payload: Record<string, unknown> = {
    source_url: t.payload.sourceUrl,
    tags: t.payload.tags,
    user_metadata: t.payload.userMetadata,
    // preview_id is one of the fields the spec makes nullable.
    preview_id: t.payload.previewId,
  };
  const out: Record<string, unknown> = {
    id: t.id,
    idempotency_key: t.idempotencyKey,
    task_name: t.taskName,
    payload: t.exportRequest
      ? exportPayloadJson(t.exportRequest)
      : t.taskName === 'seed_assets'
        ? { roots: t.importRoots ?? [] }
        : payload,
    status: t.status,
    create_time: t.createTime.toISOString(),
    update_time: t.updateTime.toISOString(),
    progress,
  };
  if (t.startedAt) out.started_at = t.startedAt.toISOString();
  if (t.completedAt) out.completed_at = t.completedAt.toISOString();
  if (t.result && t.taskName === 'export_assets') {
    // `success` as in every task result (the ComfyUI frontend's task schema requires it); an export has a result only
    // when it completed, and an archive (`export_name`) unless there was nothing to export or nothing could be read
    // (`success: false`, `error`).
    out.result = {
      success: t.result.success,
      ...(t.result.exportName ? { export_name: t.result.exportName } : {}),
      assets_total: t.result.assetsTotal,
      assets_attempted: t.result.assetsAttempted,
      assets_failed: t.result.assetsFailed,
      bytes_total: t.result.bytesTotal,
      // ComfyUI's (and Comfy Cloud's) names for the same counts and sizes.
      ...exportResultAliases(t.result),
      ...(t.result.error ? { error: t.result.error } : {}),
      // ComfyUI's shape: present only when some asset was left out.
      ...(t.result.failedAssets?.length
        ? {
            failed_assets: t.result.failedAssets.map((f) => ({
              asset_id: f.assetId,
              error: f.error,
              ...(f.jobId ? { job_id: f.jobId } : {}),
              ...(f.assetName ? { asset_name: f.assetName } : {}),
            })),
          }
        : {}),
    };
  } else if (t.result?.seed) {
    out.result = { success: t.result.success, ...seedProgressJson(t.result.seed), errors: t.result.seed.errors };
  } else if (t.result) {
    const r: Record<string, unknown> = { success: t.result.success, bytes_downloaded: t.result.bytesDownloaded };
    if (t.result.assetId) r.asset_id = t.result.assetId;
    if (t.result.assetHash) r.asset_hash = t.result.assetHash;
    if (t.result.filename) r.filename = t.result.filename;
    out.result = r;
  }
  if (t.errorMessage) out.error_message = t.errorMessage;
  return out;
}

/** An import's figures in the wire's names (the seed routes and the seed_assets task's result). */
export function seedProgressJson(p: ImportProgress): Record<string, number> {
  return {
    scanned: p.scanned,
    total: p.total,
    created: p.created,
    skipped: p.skipped,
    files_read: p.filesRead,
    bytes_read: p.bytesRead,
  };
}

/** exportFigures in the wire's names. */
function exportResultAliases(r: TaskResult): Record<string, number> {
  const f = exportFigures(r);
  const out: Record<string, number> = {};
  if (f.assetsSucceeded !== undefined) out.assets_succeeded = f.assetsSucceeded;
  if (f.exportSize !== undefined) out.export_size = f.exportSize;
  if (f.uncompressedSize !== undefined) out.uncompressed_size = f.uncompressedSize;
  return out;
}

/** An export task's payload as ComfyUI's export task shows it: the normalised request, every field (defaults too). */
function exportPayloadJson(r: ExportRequest): Record<string, unknown> {
  return {
    job_ids: r.jobIds ?? [],
    asset_ids: r.assetIds ?? [],
    naming_strategy: r.namingStrategy,
    job_asset_name_filters: r.jobAssetNameFilters ?? {},
    include_previews: r.includePreviews ?? false,
  };
}
