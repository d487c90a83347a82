import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import type { Config } from './config';
import { buildContainer, type Container } from './container';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './infra/embedded-postgres';
import type { Logger } from './infra/logger';
import type { Tracing } from './infra/tracing';
import { migrate } from './infra/migrate';
import { answerClientErrors } from './http/client-error';
import { RequestGuard } from './http/request-guard';
import { createProbeApp } from './http/probes';

export interface RunningService {
  container: Container;
  server: http.Server;
  /** Base URL of the HTTP server (a worker's serves its probes and metrics only). */
  url: string;
  /** The start-up reconciliation of blobs and rows, which runs in the background (tests wait for it). */
  reconciled: Promise<unknown>;
  stop(): Promise<void>;
}

/**
 * Starts the whole service: database (embedded when DATABASE_URL is unset), migrations, container, job workers
 * (role all|worker) and HTTP (role all|api; a worker's serves /healthz, /readyz and /metrics only). `stop()` drains
 * in-flight requests and jobs, then closes everything. `tracing` (started by src/main.ts before this module loaded) is
 * handed to the parts that make spans of their own: the job queue and GraphQL.
 */
export async function startService(config: Config, logger: Logger, tracing?: Tracing): Promise<RunningService> {
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = config.databaseUrl;
  fs.mkdirSync(config.dataDir, { recursive: true });
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres({ dir: path.join(config.dataDir, 'postgres'), database: 'assets', logger });
    databaseUrl = embedded.url;
  }
  let container: Container | undefined;
  try {
    await migrate(databaseUrl, logger);
    container = await buildContainer(config, logger, databaseUrl, tracing);
    await container.queue.start({ workers: config.role !== 'api' });
    if (config.role !== 'api') logger.info('workers started', { role: config.role });
    // Blobs a crash left without a row: reconciled now, in the background (safe beside other instances).
    const reconciling = container.content
      .reconcileAtStart()
      .catch((err) => logger.warn('start-up reconciliation failed', { err: (err as Error).message }));
    const guard = new RequestGuard(config.bodyIdleTimeoutMs, config.sendIdleTimeoutMs, {
      bytesPerSecond: config.bodyMinBytesPerSecond,
      windowMs: config.bodyMinRateWindowMs,
    });
    // A worker serves only its probes and metrics (http/probes.ts) on PORT, so an orchestrator can check it.
    const app = config.role === 'worker' ? createProbeApp(container) : await createApp(container, { guard });
    // No overall request time limit (uploads of many GiB take long); a stalled body is cut by the guard instead.
    const server = http.createServer({ requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 65_000 }, app);
    answerClientErrors(server, guard);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => resolve());
    });
    const addr = server.address() as AddressInfo;
    const url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
    logger.info('listening', { url, role: config.role });
    const c = container;
    let stopping: Promise<void> | undefined;
    return {
      container: c,
      server,
      url,
      reconciled: reconciling,
      stop: () =>
        (stopping ??= (async () => {
          await closeServer(server, config.shutdownGraceMs, guard);
          guard.close();
          await reconciling;
          await c.close();
          if (embedded) await embedded.stop();
          logger.info('stopped');
        })()),
    };
  } catch (err) {
    await container?.close().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    throw err;
  }
}

/**
 * Stops accepting connections and lets in-flight requests finish (up to `graceMs`); then answers those still running
 * 503 with `Connection: close` (RequestGuard.abortAll), and a moment later closes whatever is left.
 */
function closeServer(server: http.Server, graceMs: number, guard: RequestGuard): Promise<void> {
  return new Promise((resolve) => {
    let last: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      guard.abortAll();
      last = setTimeout(() => server.closeAllConnections(), 2_000);
      last.unref();
    }, graceMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      if (last) clearTimeout(last);
      // Handlers whose request was cut remove their temporary files on the next turns of the loop.
      setTimeout(resolve, 50);
    });
    server.closeIdleConnections();
  });
}
