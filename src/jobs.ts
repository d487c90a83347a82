import type { Config } from './config';
import { metadataBackfillJob } from './domain/assets/metadata-backfill.job';
import { blobOrphanSweepJob } from './domain/content/blob-orphan-sweep.job';
import { blobTempSweepJob } from './domain/content/blob-temp-sweep.job';
import { contentGcJob, contentGcSweepJob } from './domain/content/content-gc.job';
import type { AssetService } from './domain/assets/asset.service';
import type { ContentService } from './domain/content/content.service';
import { downloadSweepJob, downloadTransferJob, type DownloadJob } from './domain/downloads/download.job';
import { exportSweepJob } from './domain/exports/export-sweep.job';
import { exportJob } from './domain/exports/export.job';
import type { ExportService } from './domain/exports/export.service';
import { importJob, importSweepJob } from './domain/imports/import.job';
import type { ImportService } from './domain/imports/import.service';
import { thumbnailBackfillJob } from './domain/thumbnails/thumbnail-backfill.job';
import { thumbnailJob } from './domain/thumbnails/thumbnail.job';
import type { ThumbnailService } from './domain/thumbnails/thumbnail.service';
import { uploadSweepJob } from './domain/uploads/upload-sweep.job';
import type { UploadService } from './domain/uploads/upload.service';
import type { BlobStore } from './infra/blob-store/blob-store';
import type { Logger } from './infra/logger';
import type { JobMap, Queue } from './domain/job-map';
import type { AnyJob } from './infra/queue';

/** Everything a job's handler may need; each job takes the few it uses. */
export interface JobServices {
  config: Config;
  logger: Logger;
  blobStore: BlobStore;
  content: ContentService;
  assets: AssetService;
  thumbnails: ThumbnailService;
  uploads: UploadService;
  exports: ExportService;
  downloadJob: DownloadJob;
  imports: ImportService;
}

/**
 * Every job of the service, registered from this list alone (names and data: src/domain/job-map.ts; options and
 * handler: each `<name>.job.ts`). Those sent at start are sent in this order.
 */
export const JOBS: ReadonlyArray<AnyJob<JobServices, JobMap>> = [
  contentGcJob,
  contentGcSweepJob,
  blobTempSweepJob,
  blobOrphanSweepJob,
  metadataBackfillJob,
  thumbnailJob,
  thumbnailBackfillJob,
  uploadSweepJob,
  exportJob,
  exportSweepJob,
  downloadTransferJob,
  downloadSweepJob,
  importJob,
  importSweepJob,
];

export function registerJobs(queue: Queue, services: JobServices): void {
  queue.register(JOBS, services);
}
