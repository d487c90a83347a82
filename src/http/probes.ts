import express, { type Express, type RequestHandler } from 'express';
import type { Container } from '../container';
import { DomainError } from '../domain/errors';
import { metricsHandler } from './metrics';
import { errorMiddleware } from './rest/errors';

/** `GET /healthz`: answered by the event loop alone, so a blocked loop fails it while a frozen database does not. */
export const healthz: RequestHandler = (_req, res) => {
  res.json({ status: 'ok' });
};

/** `GET /readyz`: 200 when every check passes, else 503 naming the failed checks only. */
export function readyz(c: Container): RequestHandler {
  return async (_req, res) => {
    const checks = await readiness(c);
    const ok = Object.values(checks).every((v) => v === 'ok');
    res.status(ok ? 200 : 503);
    if (!ok) res.set('Retry-After', '5');
    res.json({ status: ok ? 'ok' : 'unavailable', checks });
  };
}

/**
 * The HTTP of a `--role worker` process: the probes and metrics an orchestrator and Prometheus need (a worker's
 * downloads in flight, its pool, its event loop), and nothing else, so a worker never takes API traffic.
 */
export function createProbeApp(c: Container): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.get('/healthz', healthz);
  app.get('/readyz', readyz(c));
  if (c.metrics) app.get('/metrics', metricsHandler(c.metrics, c.config.metrics.token));
  app.use((req, _res, next) => {
    next(new DomainError('NOT_FOUND', `no route for ${req.method} ${req.path} on a worker instance`));
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
      fn()
        .then(
          (v) => resolve(v === false ? 'unavailable' : 'ok'),
          () => resolve('unavailable'),
        )
        .finally(() => clearTimeout(timer));
    });
  const [database, storage, queue] = await Promise.all([
    check(() => c.database.ping()),
    check(async () => {
      await c.blobStore.ping();
      const space = c.blobStore.capabilities.space;
      if (!space || c.config.storageMinFreeBytes <= 0) return true;
      return (await space.freeBytes()) >= c.config.storageMinFreeBytes;
    }),
    check(() => c.queue.ping()),
  ]);
  return { database, storage, queue };
}
