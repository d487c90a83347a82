import { Router } from 'express';
import type { DownloadService } from '../../domain/downloads/download.service';
import { linksOfRes } from '../base-url';
import { assetJson } from './asset.presenter';
import { handle, principalOf } from '../shared/handler';
import { jsonBody } from './middleware';
import { checkBody } from '../schema/check';
import { DownloadRequest } from '../schema/rest';

/** POST /api/assets/download: 200 with an asset when the content is stored, else 202 with a task. */
export function downloadsRouter(deps: { downloads: DownloadService }): Router {
  const r = Router();
  r.post(
    '/assets/download',
    ...jsonBody(),
    handle(async (req, res) => {
      const b = req.body as Record<string, unknown>;
      checkBody(DownloadRequest, b);
      const started = await deps.downloads.start(principalOf(res), {
        sourceUrl: b.source_url as string,
        tags: b.tags as string[] | undefined,
        userMetadata: b.user_metadata as Record<string, unknown> | undefined,
        previewId: b.preview_id as string | null | undefined,
        idempotencyKey: req.get('idempotency-key') ?? null,
      });
      if (started.asset) {
        res.status(200).json(assetJson(started.asset.asset, linksOfRes(res), started.asset.created));
        return;
      }
      const task = started.task!;
      const message =
        task.status === 'created'
          ? 'download queued'
          : task.status === 'running'
            ? 'download in progress'
            : `download ${task.status}`;
      res.status(202).location(`/api/tasks/${task.id}`).json({ task_id: task.id, status: task.status, message });
    }),
  );
  return r;
}
