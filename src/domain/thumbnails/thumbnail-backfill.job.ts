import type { Job } from '../../infra/queue';
import type { ThumbnailService } from './thumbnail.service';

export const THUMBNAIL_BACKFILL_JOB = 'thumbnail.backfill';

export const thumbnailBackfillJob: Job<{ thumbnails: ThumbnailService }> = {
  name: THUMBNAIL_BACKFILL_JOB,
  define: ({ thumbnails }) => ({
    expireInSeconds: 3600,
    // Thumbnails for content stored before thumbnails existed (or whose job was lost): one scan per start.
    sendAtStart: true,
    handler: async () => {
      await thumbnails.backfill();
    },
  }),
};
