import type http from 'node:http';
import type { Express } from 'express';
import type { AssetService } from '../../domain/assets/asset.service';
import type { Principal } from '../../domain/assets/asset.types';
import { isUuid } from '../../domain/assets/validation';
import { parseHash } from '../../domain/content/hashing';
import type { Logger } from '../../infra/logger';
import { baseUrlOf } from '../base-url';
import { assetJson } from './asset.presenter';
import { asDomainError, bodyUnread, errorResponse } from '../shared/errors';
import { requestIdFrom } from '../shared/request-id';
import { markRoute } from '../metrics';
import type { RequestAuth } from '../shared/request-auth';

/**
 * The two hottest read routes, `GET /api/assets/{id}` and `HEAD /api/assets/hash/{hash}`, answered before Express.
 *
 * Under 64 connections Express's per-request work (prototype swaps, the router's walk over every layer with
 * path-to-regexp, `res.json`'s content-type handling) was about a fifth of the CPU of a primary-key read:
 * 181–187 → 147 µs per request measured from /proc (BENCHMARKS.md, figure 4, change 8). Everything else is the code the
 * Express routes run: the same request id, key lookup, service call, presenter and error table, and a test
 * (fast-lane.test.ts) compares the two answers header by header. Only the canonical spelling is taken here (a
 * literal UUID or `algo:hex`, any query string); every other request, including percent-encoded or trailing-slash
 * forms, goes to Express, which answers it the same way.
 *
 * Middleware added to `createApp` for /api (CORS, rate limits, access logs) must be added here too.
 */
export function withFastLane(
  deps: { assets: AssetService; auth: RequestAuth; logger: Logger; config: { publicUrl: string | undefined; trustProxy: boolean } },
  app: Express,
): http.RequestListener {
  return (req, res) => {
    const matched = match(req.method, req.url);
    if (!matched) {
      app(req, res);
      return;
    }
    const [template, route] = matched;
    markRoute(req, template);
    const requestId = requestIdFrom(req.headers['x-request-id']);
    res.setHeader('X-Request-Id', requestId);
    deps.auth
      .authenticate(req, res)
      .then((principal) => route(deps.assets, principal, res, baseUrlOf(req, deps.config)))
      .catch((err: unknown) => {
        if (res.headersSent) {
          res.destroy();
          return;
        }
        const path = req.url!.split('?', 1)[0];
        const r = errorResponse(asDomainError(err, deps.logger, { requestId, method: req.method, path }));
        // As in sendError: an answer given before the body was read closes the connection.
        if (bodyUnread(req)) r.headers.Connection = 'close';
        for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
        sendJson(res, r.status, r.body);
      });
  };
}

type Route = (assets: AssetService, principal: Principal, res: http.ServerResponse, baseUrl: string) => Promise<void>;
/** The templates Express's routes for the same requests have (the metrics' `route` label). */
const BY_ID_TEMPLATE = '/api/assets/:id';
const BY_HASH_TEMPLATE = '/api/assets/hash/:hash';

const BY_ID = '/api/assets/';
const BY_HASH = '/api/assets/hash/';

function match(method: string | undefined, url: string | undefined): [template: string, route: Route] | undefined {
  if (!url) return undefined;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (method === 'GET' && path.startsWith(BY_ID)) {
    const id = path.slice(BY_ID.length);
    if (!isUuid(id)) return undefined;
    return [BY_ID_TEMPLATE, async (assets, principal, res, baseUrl) => sendJson(res, 200, assetJson(await assets.get(principal, id.toLowerCase()), baseUrl))];
  }
  if (method === 'HEAD' && path.startsWith(BY_HASH)) {
    const hash = parseHash(path.slice(BY_HASH.length));
    if (!hash) return undefined;
    return [
      BY_HASH_TEMPLATE,
      async (assets, _principal, res) => {
        res.statusCode = (await assets.contentExists(hash)) ? 200 : 404;
        res.end();
      },
    ];
  }
  return undefined;
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
