import { type RequestHandler, Router } from 'express';
import type { AssetService } from '../../domain/assets/asset.service';
import type { Principal } from '../../domain/assets/asset.types';
import type { ReadGrants } from '../../domain/secrets/read-grants';
import type { ThumbnailService } from '../../domain/thumbnails/thumbnail.service';
import { baseUrlOfRes } from '../base-url';
import type { RequestAuth } from '../shared/request-auth';
import { handle } from '../shared/handler';
import { pathId } from './middleware';
import { stringParam } from '../schema/query';
import { sendThumbnail } from './thumbnail.router';

/** The principal of a request a grant authorises: the grant's owner, no key, reading only. */
const grantee = (ownerId: string): Principal => ({ ownerId, scopes: ['read'], keyId: 'grant' });

const accessOf = (query: unknown): string | undefined => {
  const access = (query as Record<string, unknown>).access;
  return access === undefined ? undefined : String(access);
};

/**
 * What a read grant (`?access=<grant>`, domain/secrets/read-grants.ts) authorises, and nothing else: GET and HEAD of
 * the content and the thumbnail of the grant owner's assets (`<img src>`, `<video>`, `<a download>` on any origin).
 * Mounted at `/api/assets` before /api's key check; a request without `access` goes on to the keyed routes, and every
 * other route (writes, listings, metadata, another owner's asset) ignores `access` and asks for the key.
 */
export function grantedMediaRouter(deps: {
  grants: ReadGrants;
  thumbnails: ThumbnailService;
  content: RequestHandler;
}): Router {
  const r = Router();
  const thumbnail: RequestHandler = (req, res, next) => {
    const access = accessOf(req.query);
    if (access === undefined) {
      next();
      return;
    }
    (async () => {
      const ownerId = await deps.grants.ownerOf(access);
      sendThumbnail(req, res, await deps.thumbnails.open(ownerId, pathId(req)));
    })().catch(next);
  };
  const content: RequestHandler = (req, res, next) => {
    const access = accessOf(req.query);
    if (access === undefined) {
      next();
      return;
    }
    deps.grants.ownerOf(access).then((ownerId) => {
      res.locals.principal = grantee(ownerId);
      deps.content(req, res, next);
    }, next);
  };
  r.get('/:id/thumbnail', thumbnail);
  r.head('/:id/thumbnail', thumbnail);
  r.get('/:id/content', content);
  r.head('/:id/content', content);
  return r;
}

/**
 * `GET|HEAD /api/s/{id}` (`short_url`): a durable link to an asset's content. With the owner's key, or a read grant
 * of the owner (the asset browser's session), 302 to the content URL with a freshly minted grant; without either,
 * 401; another owner's asset, 404. `disposition` is passed on.
 */
export function shortUrlRouter(deps: { grants: ReadGrants; assets: AssetService; auth: RequestAuth }): Router {
  const r = Router();
  const serve = handle(async (req, res) => {
    const access = accessOf(req.query);
    const principal =
      access === undefined
        ? await deps.auth.authenticate(req, res, 'read')
        : grantee(await deps.grants.ownerOf(access));
    const asset = await deps.assets.get(principal, pathId(req));
    const inline =
      stringParam(req.query as Record<string, unknown>, 'disposition') === 'inline' ? '&disposition=inline' : '';
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(
      302,
      `${baseUrlOfRes(res)}/api/assets/${asset.id}/content?access=${deps.grants.mint(principal.ownerId).token}${inline}`,
    );
  });
  r.get('/:id', serve);
  r.head('/:id', serve);
  return r;
}
