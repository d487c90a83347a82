import fs from 'node:fs';
import path from 'node:path';
import express, { type Express, Router } from 'express';
import type { Container } from './container';
import { DomainError } from './domain/errors';
import { baseUrlOf } from './http/base-url';
import { graphqlRouter } from './http/graphql/graphql.router';
import { assetsRouter } from './http/rest/assets.router';
import { contentRouter } from './http/rest/content.router';
import { downloadsRouter } from './http/rest/downloads.router';
import { errorMiddleware } from './http/rest/errors';
import { methodNotAllowed } from './http/rest/method-not-allowed';
import { authenticate } from './http/rest/middleware';
import { requestId } from './http/shared/request-id';
import { exportDownloadRouter, exportsRouter } from './http/rest/exports.router';
import { tagsRouter } from './http/rest/tags.router';
import { tasksRouter } from './http/rest/tasks.router';
import { thumbnailRouter } from './http/rest/thumbnail.router';
import { uploadsRouter } from './http/rest/uploads.router';
import { uiRouter } from './http/ui/ui.router';
import { metricsHandler } from './http/metrics';

/** Every route of the service but the fast lane's (async: the GraphQL schema is built first). */
export async function createApp(c: Container): Promise<Express> {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // GET /api/assets/{id} and HEAD /api/assets/hash/{hash} are answered before this app (http/rest/fast-lane.ts):
  // middleware added here for /api must be added there too.
  app.use(requestId());
  app.use((req, res, next) => {
    res.locals.baseUrl = baseUrlOf(req, c.config);
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const checks = await readiness(c);
    const ok = Object.values(checks).every((v) => v === 'ok');
    res.status(ok ? 200 : 503);
    if (!ok) res.set('Retry-After', '5');
    res.json({ status: ok ? 'ok' : 'unavailable', checks });
  });
  if (c.metrics) app.get('/metrics', metricsHandler(c.metrics, c.config.metrics.token));
  app.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').send(openapiText());
  });

  // The asset browser's page and files: open (the page asks for the key).
  app.use(uiRouter());
  // The signed archive URL and /graphql authenticate themselves.
  app.use(exportDownloadRouter({ exports: c.exports }));
  app.use(await graphqlRouter(c));

  const api = Router();
  api.use(authenticate(c.requestAuth));
  api.use(assetsRouter({ assets: c.assets, content: c.content, downloads: c.downloads }));
  api.use(
    contentRouter({
      assets: c.assets,
      presignedDownloads: c.config.storage.backend === 's3' && c.config.storage.presignedDownloads,
      meter: c.metrics,
    }),
  );
  api.use(thumbnailRouter({ assets: c.assets, thumbnails: c.thumbnails }));
  api.use(tagsRouter({ assets: c.assets }));
  api.use(downloadsRouter({ downloads: c.downloads }));
  api.use(tasksRouter({ tasks: c.tasks }));
  api.use(uploadsRouter({ uploads: c.uploads, logger: c.logger, publicUrl: c.config.publicUrl }));
  api.use(exportsRouter({ exports: c.exports, publicUrl: c.config.publicUrl }));
  app.use('/api', api);

  app.use(methodNotAllowed(app));
  app.use((req, _res, next) => {
    next(new DomainError('NOT_FOUND', `no route for ${req.method} ${req.path}`));
  });
  app.use(errorMiddleware(c.logger));
  return app;
}

/** How long each readiness check may take: a frozen dependency answers "unavailable", not a hang. */
const READINESS_CHECK_MS = 1_500;

/**
 * The checks of /readyz: each is `ok` or `unavailable`, never error text or an address (the
 * route needs no key). The storage check also fails when the free space is below STORAGE_MIN_FREE_BYTES.
 */
async function readiness(c: Container): Promise<Record<'database' | 'storage' | 'queue', 'ok' | 'unavailable'>> {
  const check = (fn: () => Promise<unknown>) =>
    new Promise<'ok' | 'unavailable'>((resolve) => {
      const timer = setTimeout(() => resolve('unavailable'), READINESS_CHECK_MS);
      fn().then(
        (v) => resolve(v === false ? 'unavailable' : 'ok'),
        () => resolve('unavailable'),
      ).finally(() => clearTimeout(timer));
    });
  const [database, storage, queue] = await Promise.all([
    check(() => c.database.ping()),
    check(async () => {
      await c.blobStore.ping();
      if (!c.blobStore.freeBytes || c.config.storageMinFreeBytes <= 0) return true;
      return (await c.blobStore.freeBytes()) >= c.config.storageMinFreeBytes;
    }),
    check(() => c.queue.ping()),
  ]);
  return { database, storage, queue };
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
