import path from 'node:path';
import type { Config } from './config';
import { AssetRepository } from './domain/assets/asset.repository';
import { AssetService } from './domain/assets/asset.service';
import { ApiKeyRepository } from './domain/auth/api-key.repository';
import { ApiKeyService } from './domain/auth/api-key.service';
import { AuditRepository } from './domain/audit/audit.repository';
import { AuditService } from './domain/audit/audit.service';
import { ContentRepository } from './domain/content/content.repository';
import { ContentService, restoreNamedBlob } from './domain/content/content.service';
import { DownloadJob } from './domain/downloads/download.job';
import { DownloadRepository } from './domain/downloads/download.repository';
import { DownloadService, type DownloadDeps } from './domain/downloads/download.service';
import { Providers } from './domain/downloads/providers';
import { CivitaiProvider } from './domain/downloads/providers/civitai';
import { HuggingFaceProvider } from './domain/downloads/providers/huggingface';
import { ExportRepository } from './domain/exports/export.repository';
import { ServerSecretRepository } from './domain/secrets/server-secret.repository';
import { ReadGrants } from './domain/secrets/read-grants';
import { ExportService } from './domain/exports/export.service';
import { ImportBatches } from './domain/imports/import-batch';
import { ImportRepository } from './domain/imports/import.repository';
import { ImportService } from './domain/imports/import.service';
import { QuotaRepository } from './domain/quotas/quota.repository';
import { QuotaService } from './domain/quotas/quota.service';
import { TaskRepository } from './domain/tasks/task.repository';
import { TaskService } from './domain/tasks/task.service';
import { KnownThumbnails } from './domain/thumbnails/known-thumbnails';
import { ThumbnailRepository } from './domain/thumbnails/thumbnail.repository';
import { PgListener } from './infra/pg-listen';
import { findFfmpeg, ThumbnailService } from './domain/thumbnails/thumbnail.service';
import { UploadLeases } from './domain/uploads/upload-lease';
import { UploadRepository } from './domain/uploads/upload.repository';
import { UploadService } from './domain/uploads/upload.service';
import { RequestAuth } from './http/shared/request-auth';
import { useBlake3 } from './infra/blake3';
import type { BlobStore } from './infra/blob-store/blob-store';
import { FsBlobStore } from './infra/blob-store/fs';
import { IngestWorkers } from './infra/blob-store/ingest-pool';
import { ContentReadingStore } from './infra/blob-store/content-reads';
import { InPlaceContent } from './domain/content/in-place';
import { InPlaceRepository } from './domain/content/in-place.repository';
import type { S3BlobStore } from './infra/blob-store/s3';
import { HttpFetcher } from './infra/http-fetch';
import type { Logger } from './infra/logger';
import { Metrics } from './infra/metrics';
import { readBuildInfo, type BuildInfo } from './infra/build-info';
import { createDatabase, type Database } from './infra/prisma';
import { JobQueue } from './infra/queue';
import type { Tracing } from './infra/tracing';
import type { JobMap, Queue } from './domain/job-map';
import { registerJobs } from './jobs';

/** The composition root: every long-lived object of the service, built once from the config. */
export interface Container {
  config: Config;
  logger: Logger;
  database: Database;
  blobStore: BlobStore;
  /** Threads that hash (and for the disk store, write) uploaded and downloaded bytes; idle ones need no closing. */
  ingestWorkers: IngestWorkers;
  queue: Queue;
  apiKeys: ApiKeyService;
  /** The audit trail of key management and admin actions on other owners' data. */
  audit: AuditService;
  /** Owners' limits and usage (contract 8). */
  quotas: QuotaService;
  /** Authentication of requests with the rate limits (REST, GraphQL). */
  requestAuth: RequestAuth;
  content: ContentService;
  assets: AssetService;
  thumbnails: ThumbnailService;
  /** Read grants of media URLs (`?access=`): the asset browser's, and with MEDIA_URL_GRANTS those of asset JSON. */
  grants: ReadGrants;
  /** Background tasks and downloads; see src/domain/downloads. */
  tasks: TaskService;
  downloads: DownloadService;
  /** Resumable (tus) uploads. */
  uploads: UploadService;
  /** Bulk export archives. */
  exports: ExportService;
  /** The server-side import of IMPORT_ROOTS (POST /api/assets/seed). */
  imports: ImportService;
  /** Prometheus metrics; undefined with METRICS_ENABLED=false. */
  metrics: Metrics | undefined;
  /** The build this process runs (`GET /version`, `assets_build_info`). */
  build: BuildInfo;
  /** OpenTelemetry tracing (src/infra/tracing.ts); undefined when it is off. */
  tracing: Tracing | undefined;
  /** Closes everything in reverse order of creation. */
  close(): Promise<void>;
}

export async function createBlobStore(config: Config, ingestWorkers: IngestWorkers): Promise<BlobStore> {
  if (config.storage.backend === 's3') {
    // Loaded only for S3: the AWS SDK's heap and resident memory are wasted on a disk-store process
    // (`npm run bench -- memory`).
    const { S3BlobStore: Store } = require('./infra/blob-store/s3') as { S3BlobStore: typeof S3BlobStore };
    return new Store(config.storage);
  }
  return new FsBlobStore(path.join(config.dataDir, 'blobs'), ingestWorkers);
}

export async function buildContainer(
  config: Config,
  logger: Logger,
  databaseUrl: string,
  tracing?: Tracing,
): Promise<Container> {
  const database = createDatabase(databaseUrl, config.databasePoolSize, {
    logger,
    timeouts: {
      statementTimeoutMs: config.databaseStatementTimeoutMs,
      connectTimeoutMs: config.databaseConnectTimeoutMs,
    },
  });
  useBlake3(config.blake3);
  const ingestWorkers = new IngestWorkers();
  const blobStore = await createBlobStore(config, ingestWorkers);
  await blobStore.init();
  const queue = await JobQueue.create<JobMap>(databaseUrl, logger, database.health, tracing);
  const audit = new AuditService(new AuditRepository(database.prisma));
  const apiKeys = new ApiKeyService(new ApiKeyRepository(database.prisma), config.apiKeys, audit);
  // Readers of content bytes see in-place import files where a content has no blob (contract 6.4), and a quarantined
  // blob only if a row names it; the writers, sweeps and quarantine keep the store itself, which never holds them.
  const inPlaceRepo = new InPlaceRepository(database.prisma, database.transactions);
  const inPlace = new InPlaceContent(inPlaceRepo, config.importRoots, logger.child({ module: 'in-place' }));
  const contentRepo = new ContentRepository(database.prisma, database.pool, database.transactions);
  const contentBlobs = new ContentReadingStore(blobStore, inPlace, restoreNamedBlob(contentRepo, blobStore));
  const ffmpeg = findFfmpeg();
  const secrets = new ServerSecretRepository(database.prisma);
  // The thumbnail route's lookups, kept while this instance hears every delete (migration 20261128100000).
  const known = config.thumbnails.lookupCache ? new KnownThumbnails() : undefined;
  const deletes = known
    ? new PgListener(
        databaseUrl,
        'asset_gone',
        { onMessage: (ids) => known.forget(ids.split(',')), onState: (on) => known.setListening(on) },
        logger,
        config.databaseConnectTimeoutMs,
      )
    : undefined;
  // Not awaited: until it listens nothing is kept, and a database slow to answer does not hold the start.
  void deletes?.start();
  const thumbnails = new ThumbnailService(
    new ThumbnailRepository(database.prisma, database.pool, database.transactions),
    contentBlobs,
    queue,
    logger,
    { maxPixels: config.thumbnails.maxPixels, ffmpeg, known },
  );
  const grants = new ReadGrants(secrets);
  await grants.load();
  if (!ffmpeg) logger.info('ffmpeg is not on the PATH: videos get no thumbnails');
  const build = readBuildInfo(config.gitCommit);
  const metrics = config.metrics.enabled
    ? new Metrics(
        {
          pool: database.pool,
          tasks: (timeoutMs) => new TaskRepository(database.prisma, database.transactions).countByStatus(timeoutMs),
          queues: () => queue.depths(),
          gcBacklog: (timeoutMs) => contentRepo.gcBacklog(timeoutMs),
          build,
          databasePing: () => database.ping(),
          ...(blobStore.capabilities.space
            ? { storageFreeBytes: blobStore.capabilities.space.freeBytes.bind(blobStore.capabilities.space) }
            : {}),
        },
        logger,
      )
    : undefined;
  const requestAuth = new RequestAuth(apiKeys, {
    perKeyPerMinute: config.rateLimitPerMinute,
    authFailuresPerMinute: config.authFailuresPerMinute,
    trustProxy: config.trustProxy,
    grants: config.mediaUrlGrants ? grants : undefined,
  });
  const content = new ContentService(contentRepo, contentBlobs, logger, {
    maxUploadBytes: config.maxUploadBytes,
    gcGraceSeconds: config.contentGcGraceSeconds,
    orphanRetentionDays: config.orphanRetentionDays,
    onNewContent: (tx, recs) => thumbnails.enqueue(tx, recs),
    meter: metrics,
    inPlace: inPlaceRepo,
  });
  const assetRepo = new AssetRepository(database.prisma, database.pool);
  const quotas = new QuotaService(new QuotaRepository(database.prisma), audit);
  const assets = new AssetService(
    database.transactions,
    assetRepo,
    content,
    queue,
    (ids) => known?.forget(ids),
    audit,
    quotas,
  );

  const uploadRepo = new UploadRepository(database.prisma);
  const uploads = new UploadService(
    uploadRepo,
    new UploadLeases(uploadRepo, logger),
    blobStore,
    ingestWorkers,
    content,
    assets,
    quotas,
    logger,
    {
      expirySeconds: config.uploadExpirySeconds,
    },
  );

  const exportService = new ExportService({
    transactions: database.transactions,
    repo: new ExportRepository(database.prisma),
    secrets,
    tasks: new TaskRepository(database.prisma, database.transactions),
    blobs: contentBlobs,
    queue,
    logger: logger.child({ module: 'exports' }),
    ttlSeconds: config.exportTtlSeconds,
  });

  const downloadsLogger = logger.child({ module: 'downloads' });
  const fetcher = new HttpFetcher({
    blockPrivateNetworks: config.downloadBlockPrivateNetworks,
    trustedOrigins: [config.huggingFace.endpoint, config.civitai.endpoint].map((e) => new URL(e).origin),
  });
  const providers = new Providers([
    new HuggingFaceProvider({ fetcher, endpoint: config.huggingFace.endpoint, token: config.huggingFace.token }),
    new CivitaiProvider({ fetcher, endpoint: config.civitai.endpoint, token: config.civitai.token }),
  ]);
  const downloadRepo = new DownloadRepository(database.prisma, database.transactions);
  const taskRepo = new TaskRepository(database.prisma, database.transactions);
  const downloadDeps: DownloadDeps = {
    transactions: database.transactions,
    repo: downloadRepo,
    tasks: taskRepo,
    providers,
    assets,
    quotas,
    content,
    queue,
    fetcher,
    blobs: blobStore,
    hashers: ingestWorkers,
    logger: downloadsLogger,
    meter: metrics,
    // The worker has no tracer: with tracing on, a download's requests stay here, where undici's spans are made.
    bodiesOnWorker: tracing === undefined,
  };
  const downloadJob = new DownloadJob({ ...downloadDeps, maxBytes: config.maxUploadBytes });
  const downloads = new DownloadService(downloadDeps);
  const tasks = new TaskService(database.transactions, taskRepo, downloadRepo, (id) => downloadJob.cancelled(id));

  const imports = new ImportService({
    config: config.importRoots,
    transactions: database.transactions,
    repo: new ImportRepository(database.prisma),
    tasks: taskRepo,
    assets,
    content,
    batches: new ImportBatches({ transactions: database.transactions, assets: assetRepo, content, quotas }),
    inPlace: { repo: inPlaceRepo, files: inPlace, hashers: ingestWorkers },
    queue,
    logger: logger.child({ module: 'imports' }),
    audit,
  });

  registerJobs(queue, {
    config,
    logger,
    blobStore,
    content,
    assets,
    thumbnails,
    uploads,
    exports: exportService,
    downloadJob,
    imports,
  });

  return {
    config,
    logger,
    database,
    blobStore,
    ingestWorkers,
    queue,
    apiKeys,
    audit,
    quotas,
    requestAuth,
    content,
    assets,
    thumbnails,
    grants,
    tasks,
    downloads,
    uploads,
    exports: exportService,
    imports,
    metrics,
    build,
    tracing,
    close: async () => {
      // Local transfers stop (they resume elsewhere or after restart); outbound connections close.
      await downloadJob.stop().catch((err) => logger.warn('downloads did not stop cleanly', { err }));
      await fetcher.close().catch(() => undefined);
      await deletes?.stop();
      await queue.stop().catch((err) => logger.warn('job queue did not stop cleanly', { err }));
      content.close();
      await database.close();
      await blobStore.close();
      await ingestWorkers.close();
    },
  };
}
