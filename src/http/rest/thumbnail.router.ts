import { Router } from 'express';
import type { AssetService } from '../../domain/assets/asset.service';
import type { ThumbnailService } from '../../domain/thumbnails/thumbnail.service';
import { handle, pathId, principalOf } from './middleware';

/** GET|HEAD /api/assets/{id}/thumbnail: the WebP thumbnail, cached by the content hash it was made from. */
export function thumbnailRouter(deps: { assets: AssetService; thumbnails: ThumbnailService }): Router {
  const r = Router();
  const serve = handle(async (req, res) => {
    const asset = await deps.assets.find(principalOf(res), pathId(req));
    const { data, etag } = await deps.thumbnails.open(asset);
    res.set('ETag', etag);
    // A thumbnail is made once per content and never changes; `private`: it is behind a key.
    res.set('Cache-Control', 'private, max-age=31536000, immutable');
    res.set('X-Content-Type-Options', 'nosniff');
    const inm = req.get('if-none-match');
    if (inm && (inm.trim() === '*' || inm.split(',').some((t) => t.trim().replace(/^W\//, '') === etag))) {
      res.status(304).end();
      return;
    }
    res.status(200).type('image/webp').set('Content-Length', String(data.length));
    if (req.method === 'HEAD') res.end();
    else res.end(data);
  });
  r.get('/assets/:id/thumbnail', serve);
  r.head('/assets/:id/thumbnail', serve);
  return r;
}
