import type { Job } from '../../infra/queue';
import type { ThumbnailService } from './thumbnail.service';

export const THUMBNAIL_JOB = 'thumbnail.make';
/**
 * Jobs a worker takes at once: one fetch and one completion per batch instead of per image, and the store of each
 * thumbnail overlaps the decoding of the next (ThumbnailService.make). Small, so a retried batch redoes little.
 */
export const THUMBNAIL_BATCH = 8;

export const thumbnailJob: Job<
  { thumbnails: ThumbnailService; config: { thumbnails: { concurrency: number } } },
  { blake3: string }
> = {
  name: THUMBNAIL_JOB,
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
