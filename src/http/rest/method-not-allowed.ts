import type { Express, RequestHandler } from 'express';
import { DomainError } from '../../domain/errors';

/** The parts of express 5's router layers read here (the same ones test/helpers/route-table.ts walks). */
interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
  /** The matched part of the path (the mount prefix of a router), or false. */
  match(path: string): { path: string } | false;
}

/**
 * The methods of the resource at `path` in the app's route table (RFC 9110 `Allow`), HEAD wherever GET is: those of
 * its literal routes when it has any, since a literal route (/api/assets/export) is its own resource whatever a
 * template beside it (/api/assets/:id) takes; else those of the templates it matches. `*` for an `all()` route
 * (GraphQL); empty when no route has the path. Read from the app's own routes, so they cannot drift from what is
 * served.
 */
function allowedOn(app: Express, path: string): Set<string> {
  const literal = new Set<string>();
  const templated = new Set<string>();
  collect((app as unknown as { router: { stack: Layer[] } }).router.stack, path, literal, templated);
  return literal.size > 0 ? literal : templated;
}

/**
 * The answer to OPTIONS from the route table: 204 with `Allow`. Express's routers answer OPTIONS too, but each from
 * the routes of its own stack once that is walked, so a router holding /assets/:id answered for /assets/download
 * (another router's literal route) with the template's methods: this step comes before them. Mounted behind
 * authentication on /api (an /api request without a key stays 401) and once more at the end of the pipeline for the
 * open routes; a CORS step placed earlier answers browsers' preflights before either. Paths no route has, and
 * `all()` routes, go on.
 */
export function answerOptions(app: Express): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'OPTIONS') {
      next();
      return;
    }
    const allow = allowedOn(app, req.baseUrl + req.path);
    if (allow.size === 0 || allow.has('*')) {
      next();
      return;
    }
    res.setHeader('Allow', [...allow].sort().join(', '));
    res.status(204).end();
  };
}

/**
 * 405 for a request no route answered whose path is a route's under other methods, with `Allow` listing them
 * (RFC 9110 15.5.6), and OPTIONS for the routes no earlier step answered (answerOptions); mounted after every router,
 * so unknown paths still fall through to the 404.
 */
export function methodNotAllowed(app: Express): RequestHandler {
  const options = answerOptions(app);
  return (req, res, next) => {
    if (req.method === 'OPTIONS') {
      options(req, res, next);
      return;
    }
    const allow = allowedOn(app, req.path);
    // `all()` routes (GraphQL) take every method: nothing is "not allowed" there. A route of this method that passed
    // the request on (a file it does not have) means "not found", not "not allowed".
    if (allow.size === 0 || allow.has('*') || allow.has(req.method)) {
      next();
      return;
    }
    const methods = [...allow].sort();
    next(
      new DomainError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${req.path}; use ${methods.join(', ')}`, {
        allow: methods,
      }),
    );
  };
}

function collect(stack: Layer[], path: string, literal: Set<string>, templated: Set<string>): void {
  for (const layer of stack) {
    if (layer.route) {
      if (!layer.match(path)) continue;
      const out = /[:*]/.test(layer.route.path) ? templated : literal;
      for (const [m, on] of Object.entries(layer.route.methods)) if (on) out.add(m === '_all' ? '*' : m.toUpperCase());
      if (layer.route.methods.get) out.add('HEAD');
    } else if (Array.isArray(layer.handle?.stack)) {
      const m = layer.match(path);
      if (m) collect(layer.handle.stack, path.slice(m.path.length) || '/', literal, templated);
    }
  }
}
