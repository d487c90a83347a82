import { Router } from 'express';
import type { AssetService } from '../../domain/assets/asset.service';
import { jobOutputOf } from '../../domain/assets/asset.types';
import { linksOfRes } from '../base-url';
import { idParam } from '../shared/ids';
import { jobOutputAssetJson } from './asset.presenter';
import { handle, principalOf } from '../shared/handler';
import { intParam } from '../schema/query';

/** Comfy Cloud's `GET /api/jobs/{job_id}/assets` (contract 3.7): a job's outputs among this owner's assets. */
export function jobsRouter(deps: { assets: AssetService }): Router {
  const r = Router();
  r.get(
    '/jobs/:job_id/assets',
    handle(async (req, res) => {
      const q = req.query as Record<string, unknown>;
      const jobId = idParam(req.params.job_id, 'job_id');
      const page = await deps.assets.jobAssets(
        principalOf(res),
        jobId,
        intParam(q, 'limit', 20, 1, 500),
        intParam(q, 'offset', 0, 0, 1_000_000_000),
      );
      const links = linksOfRes(res);
      res.json({
        assets: page.items.map((a) => jobOutputAssetJson(a, jobOutputOf(a), links)),
        total: page.total,
        has_more: page.hasMore,
      });
    }),
  );
  return r;
}
