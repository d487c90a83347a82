import type { Logger } from '../../infra/logger';
import { countingHandler } from '../../infra/queue';
import { JOB, type ServiceJob } from '../job-map';
import type { AssetService } from './asset.service';

/** Derives `metadata` for content and assets stored before it existed. */
export const metadataBackfillJob: ServiceJob<{ assets: AssetService; logger: Logger }, typeof JOB.metadataBackfill> = {
  name: JOB.metadataBackfill,
  define: ({ assets, logger }) => ({
    expireInSeconds: 6 * 3600,
    // A no-op once every asset has its metadata. Reads at most 1 MiB of each old blob once.
    sendAtStart: true,
    handler: countingHandler(logger, 'derived metadata of stored content and assets', () => assets.backfillMetadata()),
  }),
};
