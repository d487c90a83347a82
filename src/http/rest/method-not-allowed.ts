import type { Express, RequestHandler } from 'express';
import { DomainError } from '../../domain/errors';

/** The parts of express 5's router layers read here (the same ones test/integration/openapi.test.ts walks). */
interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
  /** The matched part of the path (the mount prefix of a router), or false. */
  match(path: string): { path: string } | false;
}

/**
 * 405 for a request no route answered whose path is a route's under other methods, with `Allow` listing them
 * (RFC 9110 15.5.6); mounted after every router, so unknown paths still fall through to the 404. The methods come from
 * the app's own routes, so they cannot drift from what is served.
 */
export function methodNotAllowed(app: Express): RequestHandler {
  const root = (app as unknown as { router: { stack: Layer[] } }).router;
  return (req, _res, next) => {
    const literal = new Set<string>();
    const templated = new Set<string>();
    collect(root.stack, req.path, literal, templated);
    // A literal route (/api/assets/export) is its own resource, whatever a template beside it (/api/assets/:id) takes.
    const allow = literal.size > 0 ? literal : templated;
    // `all()` routes (GraphQL) take every method: nothing is "not allowed" there. A route of this method that passed
    // the request on (a file it does not have) means "not found", not "not allowed".
    if (allow.size === 0 || allow.has('*') || allow.has(req.method)) {
      next();
      return;
    }
    const methods = [...allow].sort();
    next(new DomainError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${req.path}; use ${methods.join(', ')}`, { allow: methods }));
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
