import type { Job } from '../../infra/queue';
import type { ThumbnailService } from './thumbnail.service';

export const THUMBNAIL_JOB = 'thumbnail.make';

export const thumbnailJob: Job<{ thumbnails: ThumbnailService; config: { thumbnails: { concurrency: number } } }, { blake3: string }> = {
  name: THUMBNAIL_JOB,
  define: ({ thumbnails, config }) => ({
    concurrency: config.thumbnails.concurrency,
    retryLimit: 3,
    retryDelaySeconds: 10,
    expireInSeconds: 600,
    handler: async ({ blake3 }) => {
      await thumbnails.make(blake3);
    },
  }),
};
