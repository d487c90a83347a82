import type { Pool } from 'pg';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { TransferMeter } from '../domain/transfer-meter';
import type { BuildInfo } from './build-info';
import type { Logger } from './logger';

/** Where the scrape-time gauges read from; each is called at most once per scrape, under `SOURCE_TIMEOUT_MS`. */
export interface MetricSources {
  /** The request pool (Prisma's and the repositories'). */
  pool: Pool;
  tasks(timeoutMs: number): Promise<{ taskName: string; status: string; count: number }[]>;
  queues(): Promise<{ queue: string; queued: number; active: number; deferred: number; failed: number }[]>;
  gcBacklog(timeoutMs: number): Promise<{ contents: number; bytes: number }>;
  /** The build, for `assets_build_info`. */
  build: BuildInfo;
  /** One round trip to the database (`assets_database_up`). */
  databasePing(): Promise<unknown>;
  /** The blob store's free bytes, where the backend can tell (local disk); absent on S3. */
  storageFreeBytes?: () => Promise<number>;
}

/** A scrape waits at most this long for one database-backed gauge; a slow source leaves its gauge empty. */
export const SOURCE_TIMEOUT_MS = 2_000;

/** Seconds: 1 ms to 60 s, finer where the API's reads are (1-50 ms). */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The `route` label of a request no route took (unknown paths, and requests refused before routing). */
export const UNMATCHED_ROUTE = 'unmatched';
/** The `status` label of a response the client did not wait for. */
export const ABORTED_STATUS = 'aborted';
/** GraphQL operation labels: no named operation, a document that did not parse or validate, names over the cap. */
export const ANONYMOUS_OPERATION = '(anonymous)';
export const INVALID_OPERATION = '(invalid)';
export const OTHER_OPERATION = '(other)';
/** Distinct GraphQL operation names kept as labels; later new names count as OTHER_OPERATION. */
export const MAX_OPERATION_NAMES = 100;

const TASK_STATUSES = ['created', 'running', 'completed', 'failed', 'cancelled'];

/**
 * The service's Prometheus metrics in a registry of its own, so several services in one process
 * (tests) do not share counters. Request metrics are observed by the HTTP layer, bytes by the domain through
 * `TransferMeter`; the database-backed gauges are read when scraped.
 */
export class Metrics implements TransferMeter {
  readonly registry = new Registry();
  private readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly graphqlDuration: Histogram<'operation' | 'outcome'>;
  /**
   * Each series' child (prom-client's `labels()`), found by the values the caller holds: `observe(labels, v)` would
   * validate and hash a label object on every request.
   */
  private readonly httpSeries = new Map<string, Histogram.Internal<'method' | 'route' | 'status'>>();
  private readonly graphqlSeries = new Map<string, Histogram.Internal<'operation' | 'outcome'>>();
  private readonly bytes: Record<'uploaded' | 'downloaded' | 'served', Counter>;
  private readonly inFlight: Record<'upload' | 'download', Gauge>;
  private readonly sourceErrors: Counter<'source'>;
  private readonly operationNames = new Set<string>();
  /** This scrape's reads of each source, shared by the gauges that source feeds. */
  private readonly cached = new Map<string, Promise<unknown>>();

  constructor(
    sources: MetricSources,
    private readonly logger: Logger,
  ) {
    const registers = [this.registry];
    // Process CPU, memory, file descriptors, heap spaces, GC durations and event-loop lag (nodejs_eventloop_lag_*).
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 20 });

    this.httpDuration = new Histogram({
      name: 'assets_http_request_duration_seconds',
      help: 'HTTP requests by route template (never a raw path), method and status: latency in seconds; _count is the request count.',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.graphqlDuration = new Histogram({
      name: 'assets_graphql_operation_duration_seconds',
      help: `GraphQL operations by operation name (${ANONYMOUS_OPERATION}, ${INVALID_OPERATION}, and ${OTHER_OPERATION} past ${MAX_OPERATION_NAMES} names) and outcome (ok, error).`,
      labelNames: ['operation', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.bytes = {
      uploaded: new Counter({
        name: 'assets_uploaded_bytes_total',
        help: 'Bytes received from clients into the content ingest (uploads).',
        registers,
      }),
      downloaded: new Counter({
        name: 'assets_downloaded_bytes_total',
        help: 'Bytes fetched from providers (download tasks and URL uploads).',
        registers,
      }),
      served: new Counter({
        name: 'assets_served_bytes_total',
        help: 'Content bytes sent to clients (GET /api/assets/{id}/content).',
        registers,
      }),
    };
    this.inFlight = {
      upload: new Gauge({
        name: 'assets_uploads_in_flight',
        help: 'Uploads whose bytes are being received by this process.',
        registers,
      }),
      download: new Gauge({
        name: 'assets_downloads_in_flight',
        help: 'Downloads from providers being received by this process.',
        registers,
      }),
    };
    this.sourceErrors = new Counter({
      name: 'assets_metrics_source_errors_total',
      help: 'Scrapes whose database-backed gauge could not be read in time (its series are absent from that scrape).',
      labelNames: ['source'],
      registers,
    });

    // The Prometheus idiom for a build's identity: one series of value 1 whose labels say what runs, so a rolling
    // upgrade shows as instances changing label, and alerts can join on it. An unknown commit is an empty label.
    new Gauge({
      name: 'assets_build_info',
      help: 'The build this process runs: version (package.json), git commit and Node.js version; always 1.',
      labelNames: ['version', 'commit', 'node_version'],
      registers,
    }).set(
      { version: sources.build.version, commit: sources.build.commit ?? '', node_version: sources.build.nodeVersion },
      1,
    );

    const { pool } = sources;
    new Gauge({
      name: 'assets_db_pool_connections',
      help: 'Connections of the request pool by state (in_use, idle).',
      labelNames: ['state'],
      registers,
      collect() {
        this.set({ state: 'in_use' }, pool.totalCount - pool.idleCount);
        this.set({ state: 'idle' }, pool.idleCount);
      },
    });
    new Gauge({
      name: 'assets_db_pool_max_connections',
      help: 'Size limit of the request pool (DATABASE_POOL_SIZE).',
      registers,
      collect() {
        this.set(pool.options.max ?? 10);
      },
    });
    new Gauge({
      name: 'assets_db_pool_waiting_requests',
      help: 'Queries waiting for a free connection of the request pool.',
      registers,
      collect() {
        this.set(pool.waitingCount);
      },
    });

    const read = <T>(source: string, load: () => Promise<T>) => this.read(source, load);
    new Gauge({
      name: 'assets_tasks',
      help: 'Tasks of all owners by task name and status (read from the database at scrape time).',
      labelNames: ['task_name', 'status'],
      registers,
      async collect() {
        const rows = await read('tasks', () => sources.tasks(SOURCE_TIMEOUT_MS));
        this.reset();
        if (!rows) return;
        for (const status of TASK_STATUSES) this.set({ task_name: 'download_file', status }, 0);
        for (const r of rows) this.set({ task_name: r.taskName, status: r.status }, r.count);
      },
    });
    new Gauge({
      name: 'assets_job_queue_jobs',
      help: 'Background jobs per pg-boss queue by state (ready, deferred, active, failed), as pg-boss last counted them.',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        const rows = await read('queues', () => sources.queues());
        this.reset();
        for (const q of rows ?? []) {
          this.set({ queue: q.queue, state: 'ready' }, Math.max(0, q.queued - q.deferred));
          this.set({ queue: q.queue, state: 'deferred' }, q.deferred);
          this.set({ queue: q.queue, state: 'active' }, q.active);
          this.set({ queue: q.queue, state: 'failed' }, q.failed);
        }
      },
    });
    // What the alert rules (deploy/prometheus/alerts.yml) need beyond request metrics: whether this instance reaches
    // the database, and the free space /readyz compares with STORAGE_MIN_FREE_BYTES (so an alert can fire before it).
    new Gauge({
      name: 'assets_database_up',
      help: 'Whether the database answered a round trip within 2 s at this scrape (1) or not (0).',
      registers,
      async collect() {
        this.set((await read('database', () => sources.databasePing().then(() => true))) ? 1 : 0);
      },
    });
    const { storageFreeBytes } = sources;
    if (storageFreeBytes)
      new Gauge({
        name: 'assets_storage_free_bytes',
        help: 'Free bytes of the local blob store (fs backend), as /readyz reads them.',
        registers,
        async collect() {
          const free = await read('storage_space', storageFreeBytes);
          this.reset();
          if (free !== undefined) this.set(free);
        },
      });
    const gc = () => read('content_gc', () => sources.gcBacklog(SOURCE_TIMEOUT_MS));
    new Gauge({
      name: 'assets_content_gc_backlog_contents',
      help: 'Stored contents no asset refers to, awaiting garbage collection (grace period running or due).',
      registers,
      async collect() {
        const b = await gc();
        this.reset();
        if (b) this.set(b.contents);
      },
    });
    new Gauge({
      name: 'assets_content_gc_backlog_bytes',
      help: 'Bytes of the contents awaiting garbage collection.',
      registers,
      async collect() {
        const b = await gc();
        this.reset();
        if (b) this.set(b.bytes);
      },
    });
  }

  /** One HTTP request: `route` is a template (a small fixed set), never a raw path. */
  observeRequest(method: string, route: string, status: number | typeof ABORTED_STATUS, seconds: number): void {
    // Route templates and methods never hold a space: the key is unambiguous.
    const key = `${method} ${status} ${route}`;
    let series = this.httpSeries.get(key);
    if (series === undefined)
      this.httpSeries.set(key, (series = this.httpDuration.labels({ method, route, status: String(status) })));
    series.observe(seconds);
  }

  /** One GraphQL operation; `name` undefined for an anonymous operation, null when the document was not usable. */
  observeOperation(name: string | null | undefined, ok: boolean, seconds: number): void {
    const operation = this.operationLabel(name);
    const key = `${ok ? 'ok' : 'error'} ${operation}`;
    let series = this.graphqlSeries.get(key);
    if (series === undefined)
      this.graphqlSeries.set(key, (series = this.graphqlDuration.labels({ operation, outcome: ok ? 'ok' : 'error' })));
    series.observe(seconds);
  }

  begin(kind: 'upload' | 'download'): () => void {
    const gauge = this.inFlight[kind];
    gauge.inc();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      gauge.dec();
    };
  }

  add(flow: 'uploaded' | 'downloaded' | 'served', bytes: number): void {
    if (bytes > 0) this.bytes[flow].inc(bytes);
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; text: string }> {
    this.cached.clear();
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }

  private operationLabel(name: string | null | undefined): string {
    if (name === null) return INVALID_OPERATION;
    if (!name) return ANONYMOUS_OPERATION;
    if (this.operationNames.has(name)) return name;
    if (this.operationNames.size >= MAX_OPERATION_NAMES) return OTHER_OPERATION;
    this.operationNames.add(name);
    return name;
  }

  /** `load()` once per scrape for all gauges of a source, under a timeout; undefined (and counted) when it fails. */
  private read<T>(source: string, load: () => Promise<T>): Promise<T | undefined> {
    const hit = this.cached.get(source);
    if (hit) return hit as Promise<T | undefined>;
    let timer: NodeJS.Timeout | undefined;
    const value = Promise.race([
      load(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer in ${SOURCE_TIMEOUT_MS} ms`)), SOURCE_TIMEOUT_MS);
      }),
    ])
      .catch((err: unknown) => {
        this.sourceErrors.inc({ source });
        this.logger.warn('a metrics source could not be read', { source, err });
        return undefined;
      })
      .finally(() => clearTimeout(timer));
    this.cached.set(source, value);
    return value;
  }
}
