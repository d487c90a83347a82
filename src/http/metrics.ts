import crypto from 'node:crypto';
import type { Express, Request, RequestHandler, Response } from 'express';
import { DomainError } from '../domain/errors';
import type { Logger } from '../infra/logger';
import { ABORTED_STATUS, UNMATCHED_ROUTE, type Metrics } from '../infra/metrics';

type Routed = Request & { route?: { path: unknown } };

/**
 * The first step of the pipeline (createApp): when a response is over, one histogram observation labelled with the
 * route template, method and status, and one access-log line at level info. The per-request work is a clock read, a
 * `close` listener and a label lookup; the template strings are computed once per route, on the first request (every
 * route is registered by then).
 */
export function observeRequests(
  app: Express,
  opts: { metrics?: Metrics; accessLog?: Logger },
): ((req: Request, res: Response) => void) | undefined {
  const { metrics, accessLog } = opts;
  if (!metrics && !accessLog) return undefined;
  let templates: WeakMap<object, string> | undefined;
  const routeOf = (req: Routed): string => {
    const route = req.route;
    if (!route) return UNMATCHED_ROUTE;
    templates ??= routeTemplates(app);
    let t = templates.get(route);
    if (t === undefined) {
      // A route added after start (not in the index): its mount as the request saw it.
      t = joinRoute(req.baseUrl ?? '', String(route.path));
      templates.set(route, t);
    }
    return t;
  };
  return (req, res) => {
    const start = performance.now();
    res.on('close', () => {
      const ms = performance.now() - start;
      const route = routeOf(req);
      const status = res.writableFinished ? res.statusCode : ABORTED_STATUS;
      metrics?.observeRequest(req.method, route, status, ms / 1000);
      accessLog?.info('request', {
        method: req.method,
        route,
        status,
        duration_ms: Math.round(ms * 1000) / 1000,
        request_id: res.getHeader('x-request-id'),
      });
    });
  };
}

/** A route's template under its mount: a router's own root route (`/`) is the mount path itself (`/graphql`). */
const joinRoute = (mount: string, path: string): string => (mount !== '' && path === '/' ? mount : mount + path);

/**
 * Each Express route's full template (its mount paths joined with its own path), indexed by the route object. Taken
 * from the router's stack once at start, so a request whose error unwound out of a mounted router (which restores
 * `req.baseUrl`) still gets its route's whole template.
 */
function routeTemplates(app: Express): WeakMap<object, string> {
  const out = new WeakMap<object, string>();
  type Layer = { route?: { path: unknown }; rawPath?: unknown; handle?: { stack?: Layer[] } };
  const walk = (stack: Layer[] | undefined, prefix: string, depth: number) => {
    if (!stack || depth > 8) return;
    for (const layer of stack) {
      if (layer.route) out.set(layer.route, joinRoute(prefix, String(layer.route.path)));
      else if (Array.isArray(layer.handle?.stack) && typeof layer.rawPath === 'string') {
        walk(layer.handle.stack, prefix + (layer.rawPath === '/' ? '' : layer.rawPath), depth + 1);
      }
    }
  };
  walk((app as unknown as { router?: { stack?: Layer[] } }).router?.stack, '', 0);
  return out;
}

/**
 * `GET /metrics`. With a token configured it takes `Authorization: Bearer <token>` (else 401);
 * without one it answers loopback clients only, and not a request relayed by a proxy (`Forwarded`/`X-Forwarded-For`
 * present), which would arrive from loopback too (else 403). No API key is involved.
 */
export function metricsHandler(metrics: Metrics, token: string | undefined): RequestHandler {
  const expected = token === undefined ? undefined : crypto.createHash('sha256').update(token).digest();
  return (req, res, next) => {
    if (expected) {
      const m = /^Bearer\s+(\S.*)$/i.exec(req.get('authorization') ?? '');
      const given = crypto
        .createHash('sha256')
        .update(m ? m[1]!.trim() : '')
        .digest();
      if (!m || !crypto.timingSafeEqual(given, expected)) {
        res.set('WWW-Authenticate', 'Bearer realm="metrics"');
        next(new DomainError('UNAUTHORIZED', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>'));
        return;
      }
    } else if (
      !isLoopback(req.socket.remoteAddress) ||
      req.get('forwarded') !== undefined ||
      req.get('x-forwarded-for') !== undefined
    ) {
      next(new DomainError('FORBIDDEN', 'GET /metrics answers loopback clients only unless METRICS_TOKEN is set'));
      return;
    }
    metrics.scrape().then(
      ({ contentType, text }) => {
        res.set('Content-Type', contentType);
        res.set('Cache-Control', 'no-store');
        res.send(text);
      },
      (err: unknown) => next(err),
    );
  };
}

export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}
