import path from 'node:path';
import type { Config } from './config';
import { AssetRepository } from './domain/assets/asset.repository';
import { AssetService, CONTENT_GC_JOB } from './domain/assets/asset.service';
import { ApiKeyService } from './domain/auth/api-key.service';
import { ContentRepository } from './domain/content/content.repository';
import { ContentService } from './domain/content/content.service';
import type { BlobStore } from './infra/blob-store/blob-store';
import { FsBlobStore } from './infra/blob-store/fs';
import { S3BlobStore } from './infra/blob-store/s3';
import type { DownloadService, TaskService } from './domain/tasks/task.types';
import { buildDownloads } from './domain/downloads/downloads.module';
import type { Logger } from './infra/logger';
import { createDatabase, type Database } from './infra/prisma';
import { JobQueue } from './infra/queue';
import { RequestAuth } from './http/rest/request-auth';

/** The composition root: every long-lived object of the service, built once from the config. */
export interface Container {
  config: Config;
  logger: Logger;
  database: Database;
  blobStore: BlobStore;
  queue: JobQueue;
  apiKeys: ApiKeyService;
  /** Authentication of requests with the rate limits (REST, fast lane, GraphQL). */
  requestAuth: RequestAuth;
  content: ContentService;
  assets: AssetService;
  /** Background tasks and downloads (contract section 4); see src/domain/downloads. */
  tasks: TaskService;
  downloads: DownloadService;
  /** Closes everything in reverse order of creation. */
  close(): Promise<void>;
}

export const BLOB_TEMP_SWEEP_JOB = 'blob.sweep-temps';
export const CONTENT_GC_SWEEP_JOB = 'content.gc-sweep';
export const BLOB_ORPHAN_SWEEP_JOB = 'blob.sweep-orphans';
const GC_BATCH = 1_000;

export async function createBlobStore(config: Config): Promise<BlobStore> {
  if (config.storage.backend === 's3') {
    return new S3BlobStore(config.storage);
  }
  return new FsBlobStore(path.join(config.dataDir, 'blobs'));
}

export async function buildContainer(config: Config, logger: Logger, databaseUrl: string): Promise<Container> {
  const database = createDatabase(databaseUrl, config.databasePoolSize, {
    logger,
    timeouts: { statementTimeoutMs: config.databaseStatementTimeoutMs, connectTimeoutMs: config.databaseConnectTimeoutMs },
  });
  const blobStore = await createBlobStore(config);
  await blobStore.init();
  const queue = await JobQueue.create(databaseUrl, logger, database.health);
  const apiKeys = new ApiKeyService(database.prisma, config.apiKeys);
  const requestAuth = new RequestAuth(apiKeys, {
    perKeyPerMinute: config.rateLimitPerMinute,
    authFailuresPerMinute: config.authFailuresPerMinute,
    trustProxy: config.trustProxy,
  });
  const content = new ContentService(new ContentRepository(database.prisma, database.pool), blobStore, database.pool, logger, {
    maxUploadBytes: config.maxUploadBytes,
    gcGraceSeconds: config.contentGcGraceSeconds,
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

  const downloadsModule = buildDownloads({ config, logger, db: database.prisma, blobs: blobStore, queue, content, assets });
  const tasks: TaskService = downloadsModule.tasks;
  const downloads: DownloadService = downloadsModule.downloads;

  return {
    config,
    logger,
    database,
    blobStore,
    queue,
    apiKeys,
    requestAuth,
    content,
    assets,
    tasks,
    downloads,
    close: async () => {
      await downloadsModule.stop().catch((err) => logger.warn('downloads did not stop cleanly', { err }));
      await queue.stop().catch((err) => logger.warn('job queue did not stop cleanly', { err }));
      content.close();
      await database.close();
      await blobStore.close?.();
    },
  };
}
