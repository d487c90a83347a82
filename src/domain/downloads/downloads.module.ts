import type { Config } from '../../config';
import type { BlobStore } from '../../infra/blob-store/blob-store';
import type { IngestWorkers } from '../../infra/blob-store/ingest-pool';
import { HttpFetcher } from '../../infra/http-fetch';
import type { Logger } from '../../infra/logger';
import type { Db } from '../../infra/prisma';
import type { JobQueue } from '../../infra/queue';
import type { AssetService } from '../assets/asset.service';
import type { ContentService } from '../content/content.service';
import type { TransferMeter } from '../transfer-meter';
import { TaskRepository } from '../tasks/task.repository';
import { TaskServiceImpl } from '../tasks/task.service';
import { DownloadJob, DEFAULT_JOB_OPTIONS, type DownloadJobOptions } from './download.job';
import { DownloadRepository } from './download.repository';
import { DownloadManager } from './download.service';
import { Providers } from './providers';
import { CivitaiProvider } from './providers/civitai';
import { HuggingFaceProvider } from './providers/huggingface';

/** Downloads and tasks wired from the config: providers, outbound HTTP, the job and the services. */
export function buildDownloads(deps: {
  config: Config;
  logger: Logger;
  db: Db;
  blobs: BlobStore;
  hashers: IngestWorkers;
  queue: JobQueue;
  content: ContentService;
  assets: AssetService;
  jobOptions?: Partial<DownloadJobOptions>;
  meter?: TransferMeter;
}) {
  const { config } = deps;
  const endpoints = [config.huggingFace.endpoint, config.civitai.endpoint];
  const fetcher = new HttpFetcher({
    blockPrivateNetworks: config.downloadBlockPrivateNetworks,
    trustedOrigins: endpoints.map((e) => new URL(e).origin),
  });
  const providers = new Providers([
    new HuggingFaceProvider({ fetcher, endpoint: config.huggingFace.endpoint, token: config.huggingFace.token }),
    new CivitaiProvider({ fetcher, endpoint: config.civitai.endpoint, token: config.civitai.token }),
  ]);
  const repo = new DownloadRepository(deps.db);
  const taskRepo = new TaskRepository(deps.db);
  const shared = {
    db: deps.db,
    repo,
    tasks: taskRepo,
    providers,
    assets: deps.assets,
    content: deps.content,
    queue: deps.queue,
    fetcher,
    blobs: deps.blobs,
    hashers: deps.hashers,
    logger: deps.logger.child({ module: 'downloads' }),
    meter: deps.meter,
  };
  const job = new DownloadJob({ ...shared, maxBytes: config.maxUploadBytes }, { ...DEFAULT_JOB_OPTIONS, ...deps.jobOptions });
  job.register({ workers: config.role !== 'api' });
  return {
    downloads: new DownloadManager(shared),
    tasks: new TaskServiceImpl(deps.db, taskRepo, repo, (id) => job.cancelled(id)),
    /** Stops local transfers (they resume elsewhere or after restart) and closes outbound connections. */
    stop: async () => {
      await job.stop();
      await fetcher.close().catch(() => undefined);
    },
  };
}
