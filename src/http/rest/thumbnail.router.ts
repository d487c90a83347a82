import { type Request, type Response, Router } from 'express';
import type { ReadGrants } from '../../domain/secrets/read-grants';
import type { ThumbnailService } from '../../domain/thumbnails/thumbnail.service';
import { handle, principalOf } from '../shared/handler';
import { pathId, sendJson } from './middleware';

/**
 * GET|HEAD /api/assets/{id}/thumbnail with the key: the WebP thumbnail, cached by the content hash it was made from;
 * GET /api/thumbnail-access: the asset browser's read grant of this owner's media (`?access=`: granted.router.ts).
 */
export function thumbnailRouter(deps: { thumbnails: ThumbnailService; grants: ReadGrants }): Router {
  const r = Router();
  const serve = handle(async (req, res) => {
    sendThumbnail(req, res, await deps.thumbnails.open(principalOf(res).ownerId, pathId(req)));
  });
  r.get('/assets/:id/thumbnail', serve);
  r.head('/assets/:id/thumbnail', serve);
  r.get('/thumbnail-access', (_req, res) => {
    const { token, expiresAt } = deps.grants.mint(principalOf(res).ownerId);
    res.setHeader('Cache-Control', 'no-store');
    sendJson(res, { access: token, expires_at: expiresAt.toISOString() });
  });
  return r;
}

export function sendThumbnail(req: Request, res: Response, { data, etag }: { data: Buffer; etag: string }): void {
  res.setHeader('ETag', etag);
  // A thumbnail is made once per content and never changes; `private`: it is behind a key (or a grant).
  res.setHeader('Cache-Control', 'private, max-age=31536000, immutable');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  const inm = req.headers['if-none-match'];
  if (inm && (inm.trim() === '*' || inm.split(',').some((t) => t.trim().replace(/^W\//, '') === etag))) {
    res.status(304).end();
    return;
  }
  res.status(200);
  res.setHeader('Content-Type', 'image/webp');
  res.setHeader('Content-Length', String(data.length));
  if (req.method === 'HEAD') res.end();
  else res.end(data);
}
