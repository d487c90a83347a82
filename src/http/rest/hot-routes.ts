import type { NextFunction, Request, Response } from 'express';
import { isUuid } from '../../domain/assets/validation';
import { parseHash, type ParsedHash } from '../../domain/content/hashing';
import type { RequestAuth } from '../shared/request-auth';
import { routeLabel } from '../metrics';

/** A route the pipeline's table answers without walking the routers; the same answer is mounted as usual too. */
export interface HotRoute<P = unknown> {
  method: string;
  /** The route's template, as the router has it (the metrics' `route` label). */
  template: string;
  /** The path up to the one parameter, e.g. `/api/assets/`. */
  prefix: string;
  /**
   * The parameter, parsed as the router's handler parses it, when it is in its canonical spelling; any other spelling
   * goes to the routers.
   */
  parse(value: string): P | undefined;
  /** The route's answer (assets.router.ts), given the authenticated request and the parsed parameter. */
  answer(res: Response, param: P): Promise<void>;
}

/** An entry of the table: its parameter's type is between its `parse` and its `answer`. */
const entry = <P>(route: HotRoute<P>): HotRoute => route as HotRoute;

/** The table's entries for the two hottest reads (their answers are assets.router.ts's). */
export const hotRoute = {
  assetById: (answer: HotRoute<string>['answer']): HotRoute =>
    entry<string>({
      method: 'GET',
      template: '/api/assets/:id',
      prefix: '/api/assets/',
      // As idParam: a UUID, lower-cased.
      parse: (v) => (isUuid(v) ? v.toLowerCase() : undefined),
      answer,
    }),
  contentByHash: (answer: HotRoute<ParsedHash>['answer']): HotRoute =>
    entry<ParsedHash>({
      method: 'HEAD',
      template: '/api/assets/hash/:hash',
      prefix: '/api/assets/hash/',
      parse: parseHash,
      answer,
    }),
};

/**
 * The pipeline's route table, a step after the request's first steps (metrics, guard, request id): a request for one
 * of `routes` in its canonical spelling is authenticated by the same `RequestAuth` as `/api` (rate limits included),
 * then answered; an error goes on to the pipeline's error rendering like any other. The step returns whether it took
 * the request; every other request goes on to the routers. Express walks every layer of every router before a route it
 * matches (about 30 for GET /api/assets/{id}), a cost the hottest reads skip (`npm run bench -- metadata`).
 */
export function hotRoutes(
  table: HotRoute[],
  auth: RequestAuth,
): (req: Request, res: Response, next: NextFunction) => boolean {
  const run = async (
    route: HotRoute,
    param: unknown,
    req: Request,
    res: Response,
    next: NextFunction,
  ): Promise<void> => {
    try {
      res.locals.principal = await auth.authenticate(req, res);
      await route.answer(res, param);
    } catch (err) {
      next(err);
    }
  };
  return (req, res, next) => {
    const method = req.method;
    for (const route of table) {
      if (method !== route.method) continue;
      const path = req.path;
      if (!path.startsWith(route.prefix)) continue;
      const param = route.parse(path.slice(route.prefix.length));
      if (param === undefined) continue;
      routeLabel(res, route.template);
      void run(route, param, req, res, next);
      return true;
    }
    return false;
  };
}
