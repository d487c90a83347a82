import { JOB, type ServiceJob } from '../job-map';
import type { ThumbnailService } from './thumbnail.service';

/**
 * Jobs a worker takes at once: one fetch and one completion per batch instead of per image, and the store of each
 * thumbnail overlaps the decoding of the next (ThumbnailService.make). Small, so a retried batch redoes little.
 */
export const THUMBNAIL_BATCH = 8;

export const thumbnailJob: ServiceJob<
  { thumbnails: ThumbnailService; config: { thumbnails: { concurrency: number } } },
  typeof JOB.thumbnail
> = {
  name: JOB.thumbnail,
  define: ({ thumbnails, config }) => ({
    // Each worker decodes one image at a time: THUMBNAIL_CONCURRENCY images (libvips threads) per instance.
    concurrency: config.thumbnails.concurrency,
    batchSize: THUMBNAIL_BATCH,
    retryLimit: 3,
    retryDelaySeconds: 10,
    expireInSeconds: 600,
    handleBatch: (items) => thumbnails.make(items.map((j) => j.blake3)),
    handler: ({ blake3 }) => thumbnails.make([blake3]),
  }),
};
