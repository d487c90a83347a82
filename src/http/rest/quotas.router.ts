import { Router } from 'express';
import type { QuotaService } from '../../domain/quotas/quota.service';
import type { Usage } from '../../domain/quotas/quota.types';
import { checkBody } from '../schema/check';
import { stringParam } from '../schema/query';
import { QuotaRequest } from '../schema/rest';
import { handle, principalOf } from '../shared/handler';
import { jsonBody, sendJson } from './middleware';

/** An owner's usage as GET /api/usage answers it: a limit that is not set is absent. */
export function usageJson(u: Usage): Record<string, unknown> {
  return {
    owner: u.owner,
    bytes: u.bytes,
    assets: u.assets,
    ...(u.maxBytes !== undefined ? { max_bytes: u.maxBytes } : {}),
    ...(u.maxAssets !== undefined ? { max_assets: u.maxAssets } : {}),
  };
}

/** Quotas (contract 8): PUT /api/owners/{owner}/quota (admin keys), GET /api/usage. */
export function quotasRouter(deps: { quotas: QuotaService }): Router {
  const r = Router();
  r.put(
    '/owners/:owner/quota',
    ...jsonBody(),
    handle(async (req, res) => {
      const body = req.body as Record<string, unknown>;
      checkBody(QuotaRequest, body);
      const usage = await deps.quotas.setQuota(principalOf(res), req.params.owner as string, {
        maxBytes: body.max_bytes as number | null | undefined,
        maxAssets: body.max_assets as number | null | undefined,
      });
      sendJson(res, usageJson(usage));
    }),
  );
  r.get(
    '/usage',
    handle(async (req, res) => {
      const owner = stringParam(req.query as Record<string, unknown>, 'owner');
      sendJson(res, usageJson(await deps.quotas.usage(principalOf(res), owner)));
    }),
  );
  return r;
}
