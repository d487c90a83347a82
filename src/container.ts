import path from 'node:path';
import type { Config } from './config';
import { AssetRepository } from './domain/assets/asset.repository';
import { AssetService, CONTENT_GC_JOB, METADATA_BACKFILL_JOB } from './domain/assets/asset.service';
import { ApiKeyService } from './domain/auth/api-key.service';
import { ContentRepository } from './domain/content/content.repository';
import { ContentService } from './domain/content/content.service';
import type { BlobStore } from './infra/blob-store/blob-store';
import { FsBlobStore } from './infra/blob-store/fs';
import { IngestWorkers } from './infra/blob-store/ingest-pool';
import { S3BlobStore } from './infra/blob-store/s3';
import type { DownloadService, TaskService } from './domain/tasks/task.types';
import { buildDownloads } from './domain/downloads/downloads.module';
import type { Logger } from './infra/logger';
import { ThumbnailRepository } from './domain/thumbnails/thumbnail.repository';
import { findFfmpeg, ThumbnailService, THUMBNAIL_BACKFILL_JOB, THUMBNAIL_JOB } from './domain/thumbnails/thumbnail.service';
import { createDatabase, type Database } from './infra/prisma';
import { Metrics } from './infra/metrics';
import { JobQueue } from './infra/queue';
import { UploadRepository } from './domain/uploads/upload.repository';
import { ExportRepository } from './domain/exports/export.repository';
import { EXPORT_JOB, EXPORT_SWEEP_JOB, ExportService } from './domain/exports/export.service';
import { TaskRepository } from './domain/tasks/task.repository';
import { UPLOAD_SWEEP_JOB, UploadService } from './domain/uploads/upload.service';
import { UploadLeases } from './domain/uploads/upload-lease';
import { RequestAuth } from './http/rest/request-auth';

/** The composition root: every long-lived object of the service, built once from the config. */
export interface Container {
  config: Config;
  logger: Logger;
  database: Database;
  blobStore: BlobStore;
  /** Threads that hash (and for the disk store, write) uploaded and downloaded bytes; idle ones need no closing. */
  ingestWorkers: IngestWorkers;
  queue: JobQueue;
  apiKeys: ApiKeyService;
  /** Authentication of requests with the rate limits (REST, fast lane, GraphQL). */
  requestAuth: RequestAuth;
  content: ContentService;
  assets: AssetService;
  thumbnails: ThumbnailService;
  /** Background tasks and downloads (contract section 4); see src/domain/downloads. */
  tasks: TaskService;
  downloads: DownloadService;
  /** Resumable (tus) uploads (contract 6.1). */
  uploads: UploadService;
  /** Bulk export archives (contract 4.3). */
  exports: ExportService;
  /** Prometheus metrics (contract section 7); undefined with METRICS_ENABLED=false. */
  metrics: Metrics | undefined;
  /** Closes everything in reverse order of creation. */
  close(): Promise<void>;
}

export const BLOB_TEMP_SWEEP_JOB = 'blob.sweep-temps';
export const CONTENT_GC_SWEEP_JOB = 'content.gc-sweep';
export const BLOB_ORPHAN_SWEEP_JOB = 'blob.sweep-orphans';
const GC_BATCH = 1_000;

export async function createBlobStore(config: Config, ingestWorkers: IngestWorkers): Promise<BlobStore> {
  if (config.storage.backend === 's3') {
    return new S3BlobStore(config.storage);
  }
  return new FsBlobStore(path.join(config.dataDir, 'blobs'), ingestWorkers);
}

export async function buildContainer(config: Config, logger: Logger, databaseUrl: string): Promise<Container> {
  const database = createDatabase(databaseUrl, config.databasePoolSize, {
    logger,
    timeouts: { statementTimeoutMs: config.databaseStatementTimeoutMs, connectTimeoutMs: config.databaseConnectTimeoutMs },
  });
  const ingestWorkers = new IngestWorkers();
  const blobStore = await createBlobStore(config, ingestWorkers);
  await blobStore.init();
  const queue = await JobQueue.create(databaseUrl, logger, database.health);
  const apiKeys = new ApiKeyService(database.prisma, config.apiKeys);
  const ffmpeg = findFfmpeg();
  const thumbnails = new ThumbnailService(new ThumbnailRepository(database.prisma), blobStore, queue, logger, {
    maxPixels: config.thumbnails.maxPixels,
    ffmpeg,
  });
  if (!ffmpeg) logger.info('ffmpeg is not on the PATH: videos get no thumbnails');
  const contentRepo = new ContentRepository(database.prisma, database.pool);
  const metrics = config.metrics.enabled
    ? new Metrics(
        {
          pool: database.pool,
          tasks: (timeoutMs) => new TaskRepository(database.prisma).countByStatus(timeoutMs),
          queues: () => queue.depths(),
          gcBacklog: (timeoutMs) => contentRepo.gcBacklog(timeoutMs),
        },
        logger,
      )
    : undefined;
  const requestAuth = new RequestAuth(apiKeys, {
    perKeyPerMinute: config.rateLimitPerMinute,
    authFailuresPerMinute: config.authFailuresPerMinute,
    trustProxy: config.trustProxy,
  });
  const content = new ContentService(contentRepo, blobStore, database.pool, logger, {
    maxUploadBytes: config.maxUploadBytes,
    gcGraceSeconds: config.contentGcGraceSeconds,
    onNewContent: (tx, rec) => thumbnails.enqueue(tx, rec),
    meter: metrics,
  });
  const assets = new AssetService(database.prisma, new AssetRepository(database.prisma, database.pool), content, queue);

  // Each asset delete that orphans a content sends one job due at the end of its grace period; a worker takes them
  // by the hundred and collects every content then due in bulk (ContentService.collectExpired), so 10,000 deletions
  // are reclaimed in seconds rather than at one per second.
  const collectAllDue = async () => {
    while ((await content.collectExpired(GC_BATCH)) === GC_BATCH) {
      // a full batch: there may be more due
    }
  };
  queue.define<{ blake3: string }>({
    name: CONTENT_GC_JOB,
    batchSize: 500,
    handleBatch: collectAllDue,
    handler: async () => collectAllDue(),
  });
  queue.define<{ blake3: string }>({
    name: THUMBNAIL_JOB,
    concurrency: config.thumbnails.concurrency,
    retryLimit: 3,
    retryDelaySeconds: 10,
    expireInSeconds: 600,
    handler: async ({ blake3 }) => {
      await thumbnails.make(blake3);
    },
  });
  queue.define({
    name: THUMBNAIL_BACKFILL_JOB,
    expireInSeconds: 3600,
    handler: async () => {
      await thumbnails.backfill();
    },
  });
  queue.define({
    name: METADATA_BACKFILL_JOB,
    expireInSeconds: 6 * 3600,
    // Sent at start (server.ts); a no-op once every asset has its metadata. Reads at most 1 MiB of each old blob once.
    handler: async () => {
      const n = await assets.backfillMetadata();
      if (n > 0) logger.info('derived metadata of stored content and assets', { count: n });
    },
  });
  queue.define({
    name: CONTENT_GC_SWEEP_JOB,
    cron: '*/15 * * * *',
    handler: collectAllDue,
  });
  queue.define({
    name: BLOB_TEMP_SWEEP_JOB,
    cron: '17 * * * *',
    handler: async () => {
      const n = await blobStore.sweepTemps(24 * 3600 * 1000);
      if (n > 0) logger.info('removed stale temporary blobs', { count: n });
    },
  });
  queue.define({
    name: BLOB_ORPHAN_SWEEP_JOB,
    // Daily: it lists every blob (one LIST request per 1,000 on S3).
    cron: '41 3 * * *',
    expireInSeconds: 6 * 3600,
    handler: async () => {
      const n = await content.sweepOrphanBlobs(24 * 3600 * 1000);
      if (n > 0) logger.info('removed blobs without content rows', { count: n });
    },
  });

  const uploadRepo = new UploadRepository(database.prisma);
  const uploads = new UploadService(uploadRepo, new UploadLeases(uploadRepo, logger), blobStore, content, assets, logger, {
    expirySeconds: config.uploadExpirySeconds,
  });
  queue.define({
    name: UPLOAD_SWEEP_JOB,
    cron: '*/10 * * * *',
    handler: async () => {
      const n = await uploads.sweepExpired();
      if (n > 0) logger.info('removed expired uploads', { count: n });
    },
  });

  const exportService = new ExportService({
    db: database.prisma,
    repo: new ExportRepository(database.prisma),
    tasks: new TaskRepository(database.prisma),
    blobs: blobStore,
    queue,
    logger: logger.child({ module: 'exports' }),
    ttlSeconds: config.exportTtlSeconds,
  });
  queue.define<{ taskId: string }>({
    name: EXPORT_JOB,
    // A crashed export (no heartbeat for 30 s) starts again from the first member (its temporary is swept); a failing
    // one fails its task.
    retryLimit: 2,
    expireInSeconds: 6 * 3600,
    heartbeatSeconds: 30,
    concurrency: 2,
    handler: async ({ taskId }) => {
      await exportService.run(taskId);
    },
  });
  queue.define({
    name: EXPORT_SWEEP_JOB,
    cron: '*/10 * * * *',
    handler: async () => {
      const n = await exportService.sweepExpired();
      if (n > 0) logger.info('removed expired export archives', { count: n });
    },
  });

  const downloadsModule = buildDownloads({ config, logger, db: database.prisma, blobs: blobStore, hashers: ingestWorkers, queue, content, assets, meter: metrics });
  const tasks: TaskService = downloadsModule.tasks;
  const downloads: DownloadService = downloadsModule.downloads;

  return {
    config,
    logger,
    database,
    blobStore,
    ingestWorkers,
    queue,
    apiKeys,
    requestAuth,
    content,
    assets,
    thumbnails,
    tasks,
    downloads,
    uploads,
    exports: exportService,
    metrics,
    close: async () => {
      await downloadsModule.stop().catch((err) => logger.warn('downloads did not stop cleanly', { err }));
      await queue.stop().catch((err) => logger.warn('job queue did not stop cleanly', { err }));
      content.close();
      await database.close();
      await blobStore.close?.();
    },
  };
}
