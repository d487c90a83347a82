import fs from 'node:fs';
import path from 'node:path';
import express, { type Express, type Request, type Response, Router } from 'express';
import type { Container } from './container';
import { DomainError } from './domain/errors';
import { baseUrlOf } from './http/base-url';
import { graphqlRouter } from './http/graphql/graphql.router';
import { assetsRouter } from './http/rest/assets.router';
import { contentHandler, contentRouter, type ContentDeps } from './http/rest/content.router';
import { grantedMediaRouter, shortUrlRouter } from './http/rest/granted.router';
import { downloadsRouter } from './http/rest/downloads.router';
import { errorMiddleware } from './http/rest/errors';
import { answerOptions, methodNotAllowed } from './http/rest/method-not-allowed';
import { authenticate } from './http/rest/middleware';
import { requestIdFrom } from './http/shared/request-id';
import { exportDownloadRouter, exportsRouter } from './http/rest/exports.router';
import { jobsRouter } from './http/rest/jobs.router';
import { keysRouter } from './http/rest/keys.router';
import { auditRouter } from './http/rest/audit.router';
import { quotasRouter } from './http/rest/quotas.router';
import { seedRouter } from './http/rest/seed.router';
import { tagsRouter } from './http/rest/tags.router';
import { featuresHandler } from './http/rest/features.router';
import { tasksRouter } from './http/rest/tasks.router';
import { thumbnailRouter } from './http/rest/thumbnail.router';
import { uploadsRouters } from './http/rest/uploads.router';
import { headerCapsRefusal } from './http/header-caps';
import { uiRouter } from './http/ui/ui.router';
import { metricsHandler, observeRequests } from './http/metrics';
import type { RequestGuard } from './http/request-guard';
import { corsStep } from './http/cors';
import { versionHandler } from './http/version';
import { healthz, readyz } from './http/probes';

/** A step every request takes first, before any route (synchronous; a throw goes to error rendering). */
type RequestStep = (req: Request, res: Response) => void;

/** The steps around the routes that belong to the process, not to one app (server.ts passes them). */
export interface PipelineOptions {
  /** Body stalls and shutdown (server.ts owns it, as it closes the server). */
  guard?: RequestGuard;
}

/**
 * The one request pipeline: every request, whatever its route, passes these steps in this order:
 * metrics and access log → request guard → request id and base URL → CORS (`http/cors.ts`: its headers, and
 * preflights answered, before any authentication) → short URLs, GraphQL (which authenticates itself), signed
 * export downloads, and content and thumbnails read with a grant → `/api`: rate
 * limit, authentication and the route's scope (`http/shared/request-auth.ts`, `route-scopes.ts`) → the REST routers → the open routes (health, readiness,
 * metrics, OpenAPI, UI) → 405/404 → error rendering (`http/rest/errors.ts`).
 */
export async function createApp(c: Container, opts: PipelineOptions = {}): Promise<Express> {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  const accessLog = c.config.logLevel === 'debug' || c.config.logLevel === 'info' ? c.logger : undefined;
  // The first steps are plain functions run by one layer: each Express layer a request walks costs a match, a closure
  // and a `next` call, and every request takes these.
  const first: RequestStep[] = [];
  const observe = observeRequests(app, { metrics: c.metrics, accessLog });
  if (observe) first.push(observe);
  if (opts.guard) first.push(opts.guard.step);
  first.push((req, res) => {
    const id = requestIdFrom(req.headers['x-request-id']);
    res.locals.requestId = id;
    res.setHeader('X-Request-Id', id);
    res.locals.baseUrl = baseUrlOf(req, c.config);
  });
  const cors = corsStep(c.config.corsOrigins);
  app.use((req, res, next) => {
    for (const step of first) step(req, res);
    if (cors?.(req, res)) return;
    next(headerCapsRefusal(req));
  });

  // The short URLs (a key or a grant), GraphQL (which authenticates itself), then signed export downloads, and content
  // and thumbnails read with a grant (their signature is the credential). GraphQL and the short URLs are mounted at
  // their paths: any other request passes each with one path match instead of entering its router. Every signature
  // and grant is in the query string: a request without one leaves the signed routes at their first step, before
  // their prefix is matched or stripped (`npm run bench -- metadata`). The metrics' route templates are the same
  // (mount path + route path).
  const content: ContentDeps = {
    assets: c.assets,
    presignedDownloads: c.config.storage.backend === 's3' && c.config.storage.presignedDownloads,
    meter: c.metrics,
  };
  app.use('/api/s', shortUrlRouter({ grants: c.grants, assets: c.assets, auth: c.requestAuth }));
  // GraphQL at its path: every other request passes it with one path match instead of entering its router.
  app.use('/graphql', await graphqlRouter(c));
  // (A mounted router, so that its routes are in the app's route table: OPTIONS, 405s and openapi.test read it.)
  const signed = Router();
  signed.use((req, _res, next) => next(req.url.includes('?') ? undefined : 'router'));
  signed.use(
    '/api/assets',
    exportDownloadRouter({ exports: c.exports }),
    grantedMediaRouter({ grants: c.grants, thumbnails: c.thumbnails, content: contentHandler(content) }),
  );
  app.use(signed);

  const api = Router();
  const uploads = uploadsRouters({ uploads: c.uploads, auth: c.requestAuth });
  // tus: every answer under /api/uploads names the protocol version, those of authentication included; the
  // capabilities (OPTIONS) are discovery, answered without a key as tus servers do (a key sent is checked).
  api.use(uploads.version);
  api.options('/uploads', uploads.capabilities);
  api.options('/uploads/:id', uploads.capabilities);
  api.get('/features', featuresHandler);
  api.use(authenticate(c.requestAuth));
  // OPTIONS from the whole route table, before the routers answer it from their own routes only.
  api.use(answerOptions(app));
  api.use(assetsRouter({ assets: c.assets, content: c.content, downloads: c.downloads }));
  api.use(contentRouter(content));
  api.use(thumbnailRouter({ thumbnails: c.thumbnails, grants: c.grants }));
  api.use(tagsRouter({ assets: c.assets }));
  api.use(jobsRouter({ assets: c.assets }));
  api.use(downloadsRouter({ downloads: c.downloads }));
  api.use(tasksRouter({ tasks: c.tasks }));
  api.use(uploads.keyed);
  api.use(exportsRouter({ exports: c.exports }));
  api.use(seedRouter({ imports: c.imports }));
  api.use(keysRouter({ apiKeys: c.apiKeys }));
  api.use(auditRouter({ audit: c.audit }));
  api.use(quotasRouter({ quotas: c.quotas }));
  app.use('/api', api);

  // The open routes, after /api (their paths are disjoint, and API requests then skip their layers).
  app.get('/healthz', healthz);
  app.get('/readyz', readyz(c));
  app.get('/version', versionHandler(c));
  if (c.metrics) app.get('/metrics', metricsHandler(c.metrics, c.config.metrics.token));
  app.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').send(openapiText());
  });
  // The asset browser's page and files: open (the page asks for the key).
  app.use(uiRouter());

  app.use(methodNotAllowed(app));
  app.use((req, _res, next) => {
    next(new DomainError('NOT_FOUND', `no route for ${req.method} ${req.path}`));
  });
  app.use(errorMiddleware(c.logger));
  return app;
}

let openapiCache: string | undefined;
function openapiText(): string {
  if (openapiCache === undefined) {
    let dir = __dirname;
    for (let i = 0; i < 4 && !fs.existsSync(path.join(dir, 'openapi.yaml')); i++) dir = path.dirname(dir);
    openapiCache = fs.readFileSync(path.join(dir, 'openapi.yaml'), 'utf8');
  }
  return openapiCache;
}
