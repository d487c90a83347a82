import type { Job, JobQueue } from '../infra/queue';

/**
 * Every job of the service by name, in this one file. Services send with `queue.send(JOB.x, data)`, typed by
 * `JobMap`; each `<name>.job.ts` beside its domain gives a job's options and handler; src/jobs.ts registers them all.
 */
export const JOB = {
  contentGc: 'content.gc',
  contentGcSweep: 'content.gc-sweep',
  blobTempSweep: 'blob.sweep-temps',
  blobOrphanSweep: 'blob.sweep-orphans',
  metadataBackfill: 'metadata.backfill',
  thumbnail: 'thumbnail.make',
  thumbnailBackfill: 'thumbnail.backfill',
  uploadSweep: 'uploads.sweep-expired',
  exportBuild: 'exports.build',
  exportSweep: 'exports.sweep-expired',
  downloadTransfer: 'download.transfer',
  downloadSweep: 'download.sweep-orphans',
  importSeed: 'imports.seed',
  importSweep: 'imports.sweep-stale',
} as const;

/** The data of a scheduled job or one sent at start: nothing. */
export type NoData = Record<string, never>;

/** Each job's name → the data it carries. */
export interface JobMap {
  [JOB.contentGc]: { blake3: string };
  [JOB.contentGcSweep]: NoData;
  [JOB.blobTempSweep]: NoData;
  [JOB.blobOrphanSweep]: NoData;
  [JOB.metadataBackfill]: NoData;
  [JOB.thumbnail]: { blake3: string };
  [JOB.thumbnailBackfill]: NoData;
  [JOB.uploadSweep]: NoData;
  [JOB.exportBuild]: { taskId: string };
  [JOB.exportSweep]: NoData;
  [JOB.downloadTransfer]: { transferId: string };
  [JOB.downloadSweep]: NoData;
  [JOB.importSeed]: { taskId: string };
  [JOB.importSweep]: NoData;
}

export type JobName = keyof JobMap;

/** The service's job queue: sends only the jobs of `JobMap`, each with its data. */
export type Queue = JobQueue<JobMap>;

/** A job of this service, as a `<name>.job.ts` declares it: the services `S` it needs, its options and handler. */
export type ServiceJob<S, K extends JobName> = Job<S, JobMap, K>;
