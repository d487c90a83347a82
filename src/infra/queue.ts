import type { PgBoss as PgBossType } from 'pg-boss';
import type { Logger } from './logger';
import type { TraceCarrier, Tracing } from './tracing';
import { Prisma } from '../generated/prisma/client';
import { classifyDbError, prismaOf, type DatabaseHealth, type Transaction } from './prisma';

/** A job's options and handler; `T` is the data it carries. */
export interface JobOptions<T> {
  handler: (data: T, job: { id: string; retryCount: number; signal: AbortSignal }) => Promise<void>;
  /**
   * Takes up to this many jobs per fetch and hands their data to `handleBatch` at once (instead of `handler` one by
   * one): for jobs whose work is done better in bulk (content GC).
   */
  batchSize?: number;
  handleBatch?: (items: T[]) => Promise<void>;
  /** Concurrent jobs of this kind per process. */
  concurrency?: number;
  retryLimit?: number;
  retryDelaySeconds?: number;
  retryBackoff?: boolean;
  expireInSeconds?: number;
  heartbeatSeconds?: number;
  /**
   * Cron expression: the job is also sent on this schedule, once across all instances (pg-boss's schedule). Its
   * finest step is a minute.
   */
  cron?: string;
  /** Sent once (a singleton, with no data) each time this process starts working on jobs. */
  sendAtStart?: boolean;
  pollingIntervalSeconds?: number;
}

/**
 * A job as a named unit (a `<name>.job.ts` beside its domain): its name in the job map `M`, and a factory that makes
 * its options and handler from the services `S` it needs. The composition root registers every unit of src/jobs.ts.
 */
export interface Job<S, M extends object, K extends keyof M & string> {
  readonly name: K;
  define(services: S): JobOptions<M[K]>;
}

/** Any one job of the map `M` (a union, one member per name): what a list of jobs holds. */
export type AnyJob<S, M extends object> = { [K in keyof M & string]: Job<S, M, K> }[keyof M & string];

/** A handler that runs `work` and logs how many things it did (removed, filled), when it did any. */
export function countingHandler(logger: Logger, message: string, work: () => Promise<number>): () => Promise<void> {
  return async () => {
    const n = await work();
    if (n > 0) logger.info(message, { count: n });
  };
}

export interface SendOptions {
  /** Enqueue inside this transaction: the job exists if and only if the transaction commits. */
  tx?: Transaction;
  startAfterSeconds?: number;
  singletonKey?: string;
  id?: string;
}

/**
 * The job queue (pg-boss 12 on the service's PostgreSQL), typed by a job map `M` (name → data): a job can only be sent
 * by a name of the map, with that name's data.
 */
export class JobQueue<M extends object> {
  private readonly definitions = new Map<string, JobOptions<object> & { name: string }>();
  /** pg-boss worker id of each job name this process works on. */
  private readonly workerIds = new Map<string, string>();
  private started = false;

  private constructor(
    private readonly boss: PgBossType,
    private readonly logger: Logger,
    private readonly tracing: Tracing | undefined,
  ) {}

  /**
   * `health`: the service's database health, so an outage seen by the queue's polling is logged once, not per poll.
   * `tracing`: a job sent inside a trace carries its context in its data, and its worker's span joins that trace.
   */
  static async create<M extends object>(
    databaseUrl: string,
    logger: Logger,
    health?: DatabaseHealth,
    tracing?: Tracing,
  ): Promise<JobQueue<M>> {
    // pg-boss is an ES module; Node >= 22.12 loads it with require().
    const { PgBoss } = await import('pg-boss');
    const boss = new PgBoss({ connectionString: databaseUrl, schema: 'pgboss', max: 4 });
    boss.on('error', (err: unknown) => {
      if (health && classifyDbError(err) === 'unavailable') health.failed();
      else logger.error('job queue error', { err });
    });
    return new JobQueue<M>(boss, logger, tracing);
  }

  /** Registers the jobs this process knows (their queues are made at start, and with workers, worked on). */
  register<S>(jobs: readonly AnyJob<S, M>[], services: S): void {
    for (const job of jobs) {
      if (this.definitions.has(job.name)) throw new Error(`job ${job.name} is registered twice`);
      // Each job's handler takes its own name's data; pg-boss hands it back as the sender gave it.
      this.definitions.set(job.name, { name: job.name, ...(job.define(services) as JobOptions<object>) });
    }
  }

  /** Creates the schema and queues; with `workers`, also starts handling jobs and schedules. */
  async start(opts: { workers: boolean }): Promise<void> {
    await this.boss.start();
    this.started = true;
    for (const def of this.definitions.values()) {
      await this.boss.createQueue(def.name, {
        retryLimit: def.retryLimit ?? 3,
        retryDelay: def.retryDelaySeconds ?? 5,
        retryBackoff: def.retryBackoff ?? true,
        expireInSeconds: def.expireInSeconds ?? 900,
        ...(def.heartbeatSeconds ? { heartbeatSeconds: def.heartbeatSeconds } : {}),
      } as Parameters<PgBossType['createQueue']>[1]);
    }
    if (!opts.workers) return;
    for (const def of this.definitions.values()) {
      if (def.cron) await this.boss.schedule(def.name, def.cron, {}, { singletonKey: def.name });
      const workerId = await this.boss.work<object>(
        def.name,
        {
          localConcurrency: def.concurrency ?? 1,
          batchSize: def.handleBatch ? (def.batchSize ?? 100) : 1,
          pollingIntervalSeconds: def.pollingIntervalSeconds ?? 1,
        },
        async (jobs) => {
          // A worker that found a job looks for the next one as soon as it is done, instead of after its polling
          // interval: a backlog (thumbnails of a bulk upload, GC after a mass delete) drains at the speed of the
          // jobs, not one job per interval. Once a fetch finds nothing, the worker polls at its interval again.
          this.wakeWorker(def.name);
          const run = () => this.handle(def, jobs);
          if (!this.tracing) return run();
          const traced = jobs.map((j) => ({ id: j.id, carrier: carrierOf(j.data) }));
          return this.tracing.work(def.name, traced, run);
        },
      );
      this.workerIds.set(def.name, workerId);
    }
    for (const def of this.definitions.values()) {
      if (!def.sendAtStart) continue;
      await this.enqueue(def.name, {}, { singletonKey: def.name });
      // Its worker takes it now, not at its next poll (up to a second into every start).
      this.wakeWorker(def.name);
    }
  }

  /** Runs the handler of `def` on the jobs of one fetch (all at once with `handleBatch`, else one by one). */
  private async handle(
    def: JobOptions<object> & { name: string },
    jobs: { id: string; data: object | undefined; signal: AbortSignal }[],
  ): Promise<void> {
    if (def.handleBatch) {
      try {
        await def.handleBatch(jobs.map((j) => dataOf(j.data)));
      } catch (err) {
        this.logger.warn('job batch failed', { job: def.name, count: jobs.length, err: (err as Error).message });
        throw err;
      }
      return;
    }
    for (const job of jobs) {
      const log = this.logger.child({ job: def.name, job_id: job.id });
      try {
        await def.handler(dataOf(job.data), {
          id: job.id,
          retryCount: (job as { retryCount?: number }).retryCount ?? 0,
          signal: job.signal,
        });
      } catch (err) {
        // A database outage is logged once by DatabaseHealth; here only the job's name and the message.
        log.warn('job failed', { err: classifyDbError(err) === 'unavailable' ? (err as Error).message : err });
        throw err;
      }
    }
  }

  /**
   * Makes this process's (first) worker of `name` look for jobs now instead of at its next poll, up to a second away.
   * Call it after the transaction that sent the job has committed. If that worker is busy, the others and the
   * workers of other processes still find the job by polling.
   */
  wake(name: keyof M & string): void {
    this.wakeWorker(name);
  }

  private wakeWorker(name: string): void {
    const id = this.workerIds.get(name);
    if (id) this.boss.notifyWorker(id);
  }

  async send<K extends keyof M & string>(name: K, data: M[K], opts: SendOptions = {}): Promise<string | null> {
    return this.enqueue(name, data as object, opts);
  }

  private async enqueue(name: string, data: object, opts: SendOptions): Promise<string | null> {
    if (!this.definitions.has(name)) throw new Error(`unknown job ${name}`);
    if (!this.tracing) return this.sendNow(name, data, opts);
    return this.tracing.enqueue(name, (carrier) => this.sendNow(name, withCarrier(data, carrier), opts));
  }

  private sendNow(name: string, data: object, opts: SendOptions): Promise<string | null> {
    return this.boss.send(name, data, {
      ...(opts.startAfterSeconds ? { startAfter: opts.startAfterSeconds } : {}),
      ...(opts.singletonKey ? { singletonKey: opts.singletonKey } : {}),
      ...(opts.id ? { id: opts.id } : {}),
      ...(opts.tx ? { db: prismaExecutor(opts.tx) } : {}),
    });
  }

  /** Many jobs of one name in one insert: a backfill's page, or the thumbnails of an import's batch (`tx`). */
  async sendMany<K extends keyof M & string>(
    name: K,
    jobs: readonly { data: M[K]; singletonKey?: string }[],
    opts: { tx?: Transaction } = {},
  ): Promise<void> {
    if (!this.definitions.has(name)) throw new Error(`unknown job ${name}`);
    if (jobs.length === 0) return;
    const insert = (carrier: TraceCarrier | undefined) =>
      this.boss.insert(
        name,
        jobs.map((j) => ({
          data: withCarrier(j.data as object, carrier),
          ...(j.singletonKey ? { singletonKey: j.singletonKey } : {}),
        })),
        opts.tx ? { db: prismaExecutor(opts.tx) } : undefined,
      );
    await (this.tracing ? this.tracing.enqueue(name, insert) : insert(undefined));
  }

  async cancel(name: keyof M & string, id: string): Promise<void> {
    await this.boss.cancel(name, id);
  }

  /** Jobs per queue of this service's job names, as pg-boss last counted them (its cached counts: one cheap read). */
  async depths(): Promise<{ queue: string; queued: number; active: number; deferred: number; failed: number }[]> {
    if (!this.started) return [];
    const queues = await this.boss.getQueues([...this.definitions.keys()]);
    return queues.map((q) => ({
      queue: q.name,
      queued: q.queuedCount,
      active: q.activeCount,
      deferred: q.deferredCount,
      failed: q.failedCount,
    }));
  }

  /** Readiness: the queue's own connection pool reaches its schema. */
  async ping(): Promise<void> {
    if (!this.started) throw new Error('the job queue is not running');
    await this.boss.getDb().executeSql('SELECT 1');
  }

  get raw(): PgBossType {
    return this.boss;
  }

  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.boss.stop({ graceful: true, timeout: 10_000, close: true });
  }
}

/**
 * The field of a job's data that carries its sender's trace context (pg-boss 12 has no metadata of its own beside the
 * data). Only jobs sent inside a trace have it; handlers never see it (`dataOf`).
 */
const TRACE_FIELD = '_trace';

function withCarrier(data: object, carrier: TraceCarrier | undefined): object {
  return carrier ? { ...data, [TRACE_FIELD]: carrier } : data;
}

function carrierOf(data: object | undefined): TraceCarrier | undefined {
  const c = (data as Record<string, unknown> | undefined)?.[TRACE_FIELD] as Partial<TraceCarrier> | undefined;
  return typeof c?.traceparent === 'string' ? (c as TraceCarrier) : undefined;
}

/** A job's data as its sender gave it: without the trace context (which a job sent by a traced instance may carry). */
function dataOf(data: object | undefined): object {
  if (!data || !(TRACE_FIELD in data)) return data ?? {};
  const { [TRACE_FIELD]: _carrier, ...rest } = data as Record<string, unknown>;
  void _carrier;
  return rest;
}

/** pg-boss's `db` option over a transaction: its positional SQL (`$1`, `$2`, ...) as a parameterised Prisma.Sql. */
function prismaExecutor(tx: Transaction) {
  return {
    executeSql: async (text: string, values: unknown[] = []) => ({
      rows: (await prismaOf(tx).$queryRaw(positionalSql(text, values))) as unknown[],
    }),
  };
}

/** `SELECT $1, $2` with values → the same statement with the same parameters, as a Prisma.Sql (never interpolated). */
export function positionalSql(text: string, values: readonly unknown[]): Prisma.Sql {
  const strings: string[] = [];
  const params: unknown[] = [];
  let last = 0;
  for (const m of text.matchAll(/\$(\d+)/g)) {
    strings.push(text.slice(last, m.index));
    const i = Number(m[1]) - 1;
    if (i < 0 || i >= values.length)
      throw new Error(`the job queue's SQL names parameter $${m[1]} of ${values.length}`);
    params.push(values[i]);
    last = m.index + m[0].length;
  }
  strings.push(text.slice(last));
  return new Prisma.Sql(strings, params as Prisma.Sql['values']);
}
