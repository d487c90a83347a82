import { Router } from 'express';
import type { AssetService } from '../../domain/assets/asset.service';
import { handle, principalOf } from '../shared/handler';
import { intParam, oneOf, stringParam } from '../schema/query';

export function tagsRouter(deps: { assets: AssetService }): Router {
  const r = Router();
  r.get(
    '/tags',
    handle(async (req, res) => {
      const q = req.query as Record<string, unknown>;
      // Comfy Cloud's flags, accepted and checked: there are no zero-use or public tags here (no effect).
      oneOf(q, 'include_zero', ['true', 'false', '1', '0'] as const, 'true');
      oneOf(q, 'include_public', ['true', 'false', '1', '0'] as const, 'false');
      const page = await deps.assets.listTags(principalOf(res), {
        prefix: stringParam(q, 'prefix'),
        limit: intParam(q, 'limit', 100, 1, 1000),
        offset: intParam(q, 'offset', 0, 0, 1_000_000_000),
        order: oneOf(q, 'order', ['count_desc', 'name_asc'] as const, 'count_desc'),
      });
      res.json({ tags: page.items, total: page.total, has_more: page.hasMore });
    }),
  );
  return r;
}
