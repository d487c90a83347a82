import type { Request, RequestHandler, Response } from 'express';
import { isUuid } from '../../domain/assets/validation';
import { parseHash } from '../../domain/content/hashing';
import { routeLabel } from '../metrics';

/** A route the pipeline's table answers without walking the routers; the same handler is mounted as usual too. */
export interface HotRoute {
  method: string;
  /** The route's template, as the router has it (the metrics' `route` label). */
  template: string;
  /** The path up to the one parameter, e.g. `/api/assets/`. */
  prefix: string;
  param: string;
  /** Whether the parameter is in its canonical spelling; any other spelling goes to the routers. */
  accepts(value: string): boolean;
  handler(req: Request, res: Response): Promise<void>;
}

/** The table's entries for the two hottest reads (their handlers are assets.router.ts's). */
export const hotRoute = {
  assetById: (handler: HotRoute['handler']): HotRoute => ({ method: 'GET', template: '/api/assets/:id', prefix: '/api/assets/', param: 'id', accepts: isUuid, handler }),
  contentByHash: (handler: HotRoute['handler']): HotRoute => ({
    method: 'HEAD',
    template: '/api/assets/hash/:hash',
    prefix: '/api/assets/hash/',
    param: 'hash',
    accepts: (v) => parseHash(v) !== undefined,
    handler,
  }),
};

/**
 * A step of the pipeline, after the request's first steps (metrics, guard, request id): a request for one of `routes`
 * in its canonical spelling runs the same authentication step as `/api` (rate limits included), then the route's
 * handler; an error goes on to the pipeline's error rendering like any other. Every other request goes on to the
 * routers. Express walks every layer of every router before a route it matches (about 30 for GET /api/assets/{id});
 * skipping that walk took the CPU per request of the hottest read from 1.30 to 1.16 of the former second listener's
 * (BENCHMARKS.md, third round).
 */
export function hotRoutes(routes: HotRoute[], authenticate: RequestHandler): RequestHandler {
  return (req, res, next) => {
    const path = req.path;
    for (const route of routes) {
      if (req.method !== route.method || !path.startsWith(route.prefix)) continue;
      const value = path.slice(route.prefix.length);
      if (!route.accepts(value)) continue;
      routeLabel(res, route.template);
      req.params = { [route.param]: value };
      void authenticate(req, res, (err?: unknown) => {
        if (err) next(err);
        else route.handler(req, res).catch(next);
      });
      return;
    }
    next();
  };
}
