import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import { DomainError } from '../../domain/errors';

/**
 * tus-js-client's `overridePatchMethod` (for proxies that drop PATCH or DELETE): a POST naming the method it stands
 * for in X-HTTP-Method-Override goes on as that method (`override`, on POST /uploads/:id, before the routes of those
 * methods); any other POST to an upload is a 405. `restore`, the router's error handler: an error is answered to the
 * request as sent, so a POST standing for a HEAD gets its {code, message} body (as a HEAD, Express would announce the
 * body's length and send none, and the next answer on the connection would be read as it).
 */
export function methodOverride(): { override: RequestHandler; restore: ErrorRequestHandler } {
  const overridden = new WeakSet<Request>();
  const override: RequestHandler = (req, _res, next) => {
    const method = req.get('x-http-method-override')?.trim().toUpperCase();
    if (method === 'PATCH' || method === 'DELETE' || method === 'HEAD') {
      overridden.add(req);
      req.method = method;
      next();
      return;
    }
    const allow = ['DELETE', 'HEAD', 'OPTIONS', 'PATCH', 'POST'];
    next(
      new DomainError(
        'METHOD_NOT_ALLOWED',
        `a POST to an upload takes X-HTTP-Method-Override: PATCH, DELETE or HEAD; use ${allow.join(', ')}`,
        { allow },
      ),
    );
  };
  const restore: ErrorRequestHandler = (err, req, _res, next) => {
    if (overridden.has(req)) req.method = 'POST';
    next(err);
  };
  return { override, restore };
}
