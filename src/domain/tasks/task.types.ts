/**
 * Background tasks (downloads and exports): the types shared by TaskService (task.service.ts) and the transports
 * (REST /api/tasks, GraphQL task/tasks/cancelTask).
 */
import type { Asset } from '../assets/asset.types';
import type { ImportError, ImportProgress } from '../imports/import.types';

export const TASK_STATUSES = ['created', 'running', 'completed', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export interface TaskProgress {
  bytesDownloaded: number;
  /** null when the size is unknown. */
  bytesTotal: number | null;
  /** 0.0–1.0, or null when the size is unknown. */
  progress: number | null;
}

export interface TaskResult {
  success: boolean;
  assetId: string | null;
  assetHash: string | null;
  filename: string | null;
  bytesDownloaded: number;
  /** export_assets tasks. */
  exportName?: string;
  assetsTotal?: number;
  assetsAttempted?: number;
  assetsFailed?: number;
  /** export_assets: the archive's size in bytes. */
  bytesTotal?: number;
  /** export_assets with an archive: the bytes of its members (ComfyUI's `uncompressed_size`). */
  uncompressedSize?: number;
  /** export_assets that completed without an archive (nothing to export, or nothing could be read). */
  error?: string;
  /** export_assets: the assets left out of the archive, and why (ComfyUI's `failed_assets`); absent when none. */
  failedAssets?: ExportFailedAsset[];
  /** seed_assets: the import's figures and the files it skipped or could not read (at most 1,000 listed). */
  seed?: ImportProgress & { errors: ImportError[] };
}

/**
 * What ComfyUI's export result also names, derived from ours (REST and GraphQL show the same): `assetsSucceeded`
 * (members written), and with an archive `exportSize` (= `bytesTotal`) and `uncompressedSize` (the members' bytes;
 * absent in results stored before it was recorded).
 */
export function exportFigures(r: TaskResult): {
  assetsSucceeded?: number;
  exportSize?: number;
  uncompressedSize?: number;
} {
  return {
    ...(r.assetsAttempted !== undefined && r.assetsFailed !== undefined
      ? { assetsSucceeded: r.assetsAttempted - r.assetsFailed }
      : {}),
    ...(r.exportName && r.bytesTotal !== undefined ? { exportSize: r.bytesTotal } : {}),
    ...(r.exportName && r.uncompressedSize !== undefined ? { uncompressedSize: r.uncompressedSize } : {}),
  };
}

/**
 * An asset an export could not put in its archive, as ComfyUI's export reports it: `not_found`, an id of
 * `asset_ids` that names no asset of this owner when the job runs (unknown, another owner's, deleted meanwhile);
 * `fetch_failed`, an asset whose content could not be opened (a blob lost or unreadable).
 */
export interface ExportFailedAsset {
  assetId: string;
  error: 'not_found' | 'fetch_failed';
  /** The asset's job (`prompt_id`), when it has one. */
  jobId?: string;
  /** The asset's name (fetch_failed). */
  assetName?: string;
}

export type TaskName = 'download_file' | 'export_assets' | 'seed_assets';

export const NAMING_STRATEGIES = ['group_by_job_time', 'group_by_job_id', 'preserve', 'asset_id'] as const;
export type NamingStrategy = (typeof NAMING_STRATEGIES)[number];

/** What an export_assets task was asked for (POST /api/assets/export; its wire form: export-request.ts). */
export interface ExportRequest {
  assetIds?: string[];
  jobIds?: string[];
  /** Job id → the asset names of that job to keep. */
  jobAssetNameFilters?: Record<string, string[]>;
  includePreviews?: boolean;
  namingStrategy: NamingStrategy;
}

export interface Task {
  id: string;
  ownerId: string;
  /** The client's Idempotency-Key, else `<task name>:<id>` (never null). */
  idempotencyKey: string;
  taskName: TaskName;
  /** export_assets tasks only. */
  exportRequest?: ExportRequest;
  /** seed_assets tasks only: the roots imported (`models`, `input`, `output`). */
  importRoots?: string[];
  payload: { sourceUrl: string; tags: string[]; userMetadata: Record<string, unknown>; previewId: string | null };
  status: TaskStatus;
  createTime: Date;
  updateTime: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  progress: TaskProgress;
  result: TaskResult | null;
  errorMessage: string | null;
}

export interface TaskListQuery {
  taskName?: string;
  idempotencyKey?: string;
  statuses: TaskStatus[];
  createdAfter?: Date;
  createdBefore?: Date;
  sortOrder: 'asc' | 'desc';
  offset: number;
  limit: number;
  /** Admin keys only: list every owner's tasks. */
  allOwners?: boolean;
}

export interface DownloadRequest {
  sourceUrl: string;
  tags?: string[];
  userMetadata?: Record<string, unknown>;
  previewId?: string | null;
  /** The client's `Idempotency-Key`: a second request with the same key answers with the first one's task. */
  idempotencyKey?: string | null;
}

/** What POST /api/assets/download answers: an asset at once (200) or a task (202); exactly one is set. */
export interface DownloadStart {
  asset?: { asset: Asset; created: boolean };
  task?: Task;
}

/** GET /api/assets/remote-metadata: what a download of a URL would bring, learnt without downloading it. */
export interface RemoteMetadata {
  /** -1 when unknown. */
  contentLength: number;
  finalUrl: string;
  contentType?: string;
  filename?: string;
  name?: string;
  /** `["models", "model_type:<folder>", <folder>]` when the provider's model type names a ComfyUI model folder. */
  tags?: string[];
  /** A `data:` URL of at most 512 KiB. */
  previewImage?: string;
  validation: { isValid: boolean; errors: RemoteIssue[]; warnings: RemoteIssue[] };
}

export interface RemoteIssue {
  code: string;
  message: string;
  field: string;
}
