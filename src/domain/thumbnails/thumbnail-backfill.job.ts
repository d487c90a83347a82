import type { Job } from '../../infra/queue';
import type { ThumbnailService } from './thumbnail.service';

export const thumbnailBackfillJob: Job<{ thumbnails: ThumbnailService }> = {
  name: 'thumbnail.backfill',
  define: ({ thumbnails }) => ({
    expireInSeconds: 3600,
    // Thumbnails for content stored before thumbnails existed (or whose job was lost): one scan per start.
    sendAtStart: true,
    handler: async () => {
      await thumbnails.backfill();
    },
  }),
};
