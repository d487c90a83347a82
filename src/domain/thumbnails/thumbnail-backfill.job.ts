import { JOB, type ServiceJob } from '../job-map';
import type { ThumbnailService } from './thumbnail.service';

export const thumbnailBackfillJob: ServiceJob<{ thumbnails: ThumbnailService }, typeof JOB.thumbnailBackfill> = {
  name: JOB.thumbnailBackfill,
  define: ({ thumbnails }) => ({
    expireInSeconds: 3600,
    // Thumbnails for content stored before thumbnails existed (or whose job was lost): one scan per start.
    sendAtStart: true,
    handler: async () => {
      await thumbnails.backfill();
    },
  }),
};
