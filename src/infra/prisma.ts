import { PrismaPg } from '@prisma/adapter-pg';
import pg, { Pool, type PoolConfig } from 'pg';
import { InfraError, SOCKET_ERROR_CODES, someCause, StoreFullError, StoreUnavailableError } from './errors';
import { PrismaClient } from '../generated/prisma/client';
import type { Logger } from './logger';

export type Db = PrismaClient;
/** The client handed to an interactive transaction callback (repositories only; services see `Transaction`). */
export type Tx = Parameters<Parameters<PrismaClient['$transaction']>[0]>[0];

declare const transactionBrand: unique symbol;
/**
 * A database transaction in progress, opaque outside the repositories: services get one from `Transactions.run`
 * and hand it to repository methods (and `JobQueue.send`), which alone look inside (`prismaOf`).
 */
export interface Transaction {
  readonly [transactionBrand]: true;
}

/** The one way to run several repository calls atomically. */
export class Transactions {
  /**
   * `maxWaitMs`: how long a transaction may wait for a pooled connection unless told otherwise
   * (DATABASE_CONNECT_TIMEOUT_MS, as for every other statement). Prisma's own default of 2 s made concurrent edits of
   * one owner answer 500: they queue on the owner's asset_owner_stats row holding their connections, and the edits
   * behind them waited for a connection longer than that on a loaded machine (listing-counts.test.ts, two instances,
   * ~40 concurrent changes).
   */
  constructor(
    private readonly prisma: PrismaClient,
    private readonly maxWaitMs?: number,
  ) {}

  /**
   * Runs `fn` in a transaction: committed when it resolves, rolled back when it throws (its error is rethrown).
   * `statementTimeoutMs` bounds each statement of this transaction only (the server cuts it: an operator's scrape
   * cannot hold a connection for long).
   */
  run<T>(
    fn: (tx: Transaction) => Promise<T>,
    opts: { timeoutMs?: number; maxWaitMs?: number; statementTimeoutMs?: number } = {},
  ): Promise<T> {
    const maxWait = opts.maxWaitMs ?? this.maxWaitMs;
    const limit = opts.statementTimeoutMs;
    return this.prisma.$transaction(
      async (tx) => {
        if (limit !== undefined)
          await tx.$queryRaw`SELECT set_config('statement_timeout', ${String(Math.max(1, Math.floor(limit)))}, true)`;
        return fn(tx as unknown as Transaction);
      },
      {
        ...(opts.timeoutMs !== undefined ? { timeout: opts.timeoutMs } : {}),
        ...(maxWait !== undefined ? { maxWait } : {}),
      },
    );
  }
}

/** For repositories: the Prisma client of `tx`, or of no transaction (`db`) when there is none. */
export function prismaOf(tx: Transaction): Tx;
export function prismaOf(tx: Transaction | undefined, db: Db): Tx | Db;
export function prismaOf(tx: Transaction | undefined, db?: Db): Tx | Db {
  return (tx as unknown as Tx | undefined) ?? db!;
}

export interface Database {
  prisma: PrismaClient;
  /** The pool behind Prisma, for session-level work Prisma cannot express (advisory locks held across I/O). */
  pool: Pool;
  transactions: Transactions;
  /** Readiness: one round trip on the request pool. */
  ping(): Promise<void>;
  /** Whether the database answered last time, and how many outages this process saw. */
  health: DatabaseHealth;
  close(): Promise<void>;
}

export interface DatabaseTimeouts {
  /** Server-side `statement_timeout` of every pooled connection (0: none). */
  statementTimeoutMs: number;
  /** Connecting, or waiting for a pooled connection. */
  connectTimeoutMs: number;
}

export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = { statementTimeoutMs: 8_000, connectTimeoutMs: 5_000 };

/**
 * Tracks database outages so they are logged once per transition (down, up) rather than once per request, and
 * counted (`outages`, `unavailableErrors`).
 */
export class DatabaseHealth {
  up = true;
  outages = 0;
  unavailableErrors = 0;
  constructor(private readonly logger?: Logger) {}

  failed(): void {
    this.unavailableErrors++;
    if (!this.up) return;
    this.up = false;
    this.outages++;
    this.logger?.warn('database unavailable', { outages: this.outages });
  }

  answered(): void {
    if (this.up) return;
    this.up = true;
    this.logger?.info('database available again', { outages: this.outages });
  }
}

/**
 * The one place where database failures become infra's errors: a database that cannot be reached, drops the
 * connection, is shutting down, or does not answer in time is StoreUnavailableError (the client's 503); a database
 * whose disk is full is StoreFullError (507). Recognises pg errors, pg-pool timeouts and Prisma's wrappers (driver
 * adapter errors, P1001-style codes). Anything else is returned unchanged.
 */
export function translateDbError(err: unknown, health?: DatabaseHealth): unknown {
  if (err instanceof InfraError) return err;
  const kind = classifyDbError(err);
  if (kind === 'unavailable') {
    health?.failed();
    return new StoreUnavailableError('database');
  }
  if (kind === 'full') return new StoreFullError('database');
  return err;
}

/** Prisma's codes for "cannot reach / lost / timed out waiting for" the database. */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
const POOL_MESSAGES =
  /timeout exceeded when trying to connect|Connection terminated|Query read timeout|not queryable|Cannot use a pool after calling end|Client was closed/i;

function sqlStateKind(code: string): 'unavailable' | 'full' | undefined {
  if (code === '53100') return 'full';
  // 08: connection exception; 57P01-03: admin/crash shutdown, cannot connect now; 57014: statement timeout;
  // 53300: too many connections; 53200: out of memory.
  if (code.startsWith('08') || /^57P0[123]$/.test(code) || code === '57014' || code === '53300' || code === '53200')
    return 'unavailable';
  return undefined;
}

export function classifyDbError(err: unknown): 'unavailable' | 'full' | undefined {
  // `null`: the driver adapter named a state that is neither (the walk ends there).
  const kind = someCause(err, 6, (o, e): 'unavailable' | 'full' | null | undefined => {
    if (e instanceof StoreUnavailableError) return 'unavailable';
    if (e instanceof StoreFullError) return 'full';
    const adapter = o.meta?.driverAdapterError?.cause;
    if (adapter) {
      if (adapter.kind && ADAPTER_KINDS.has(adapter.kind)) return 'unavailable';
      const state = adapter.originalCode ?? adapter.code;
      if (state) return sqlStateKind(state) ?? null;
    }
    if (typeof o.code === 'string') {
      if (SOCKET_ERROR_CODES.has(o.code) || PRISMA_CODES.has(o.code)) return 'unavailable';
      if (/^[0-9A-Z]{5}$/.test(o.code)) {
        const k = sqlStateKind(o.code);
        if (k) return k;
      }
    }
    if (typeof o.message === 'string' && POOL_MESSAGES.test(o.message)) return 'unavailable';
    return undefined;
  });
  return kind ?? undefined;
}

/**
 * pg clients whose failures are translated (translateDbError) and whose successes mark the database healthy. Every
 * statement of the service passes here: Prisma's through its driver adapter, the repositories' direct pool reads,
 * and the session locks of GC. A query that times out on the client side (a frozen server) closes its connection,
 * so it is not reused.
 */
function guardedPool(config: PoolConfig, health: DatabaseHealth): Pool {
  class GuardedClient extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      // pg emits 'error' on a client whose connection breaks (after failing its queries). The pool listens only while
      // the client is idle; a checked-out client (a transaction, a session lock) without a listener would crash the
      // process. The failure reaches the caller through its query; the pool drops the broken client on release.
      this.on('error', () => undefined);
    }

    override query(...args: any[]): any {
      const onError = (err: unknown) => {
        if (err instanceof Error && /Query read timeout/.test(err.message)) this.destroyConnection();
        return translateDbError(err, health);
      };
      const last = args[args.length - 1];
      if (typeof last === 'function') {
        args[args.length - 1] = (err: unknown, res: unknown) => {
          if (err) last(onError(err), res);
          else {
            health.answered();
            last(err, res);
          }
        };
        return (super.query as (...a: unknown[]) => unknown)(...args);
      }
      const r = (super.query as (...a: unknown[]) => unknown)(...args) as Promise<unknown> | undefined;
      if (!r || typeof r.then !== 'function') return r;
      return r.then(
        (res) => {
          health.answered();
          return res;
        },
        (err) => {
          throw onError(err);
        },
      );
    }

    private destroyConnection(): void {
      (this as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    }
  }
  class GuardedPool extends Pool {
    /**
     * pool.query: a client that fails while its query runs (the server killed) rejects through the pool's own
     * 'error' listener, not through GuardedClient.query, so that path is translated here.
     */
    override query(...args: any[]): any {
      const translate = (err: unknown) => translateDbError(err, health);
      const last = args[args.length - 1];
      if (typeof last === 'function') {
        args[args.length - 1] = (err: unknown, res: unknown) => last(err ? translate(err) : err, res);
        return (super.query as (...a: unknown[]) => unknown)(...args);
      }
      return (super.query as (...a: unknown[]) => Promise<unknown>)(...args).catch((err: unknown) => {
        throw translate(err);
      });
    }

    override connect(cb?: any): any {
      if (typeof cb === 'function') {
        return super.connect((err, client, done) => cb(err ? translateDbError(err, health) : err, client, done));
      }
      return super.connect().catch((err: unknown) => {
        throw translateDbError(err, health);
      });
    }
  }
  return new GuardedPool({ ...config, Client: GuardedClient } as PoolConfig);
}

export function createDatabase(
  url: string,
  poolSize: number,
  opts: { logger?: Logger; timeouts?: DatabaseTimeouts } = {},
): Database {
  const t = opts.timeouts ?? DEFAULT_DATABASE_TIMEOUTS;
  const health = new DatabaseHealth(opts.logger);
  const pool = guardedPool(
    {
      connectionString: url,
      max: poolSize,
      idleTimeoutMillis: 30_000,
      connectionTimeoutMillis: t.connectTimeoutMs,
      // The server cancels a statement after statement_timeout; a server that does not answer at all (frozen) is cut
      // by the client a second later. Statements are short: long transfers never hold a statement open.
      ...(t.statementTimeoutMs > 0
        ? { statement_timeout: t.statementTimeoutMs, query_timeout: t.statementTimeoutMs + 1_000 }
        : {}),
    },
    health,
  );
  // An idle client that loses its connection emits 'error' on the pool; without a listener that would crash.
  pool.on('error', () => undefined);
  const base = new PrismaClient({ adapter: new PrismaPg(pool) });
  // Prisma wraps what the pool throws in its own error classes; unwrap ours here, for every operation.
  const prisma = base.$extends({
    query: {
      async $allOperations({ args, query }) {
        try {
          return await query(args);
        } catch (err) {
          throw translateDbError(err, health);
        }
      },
    },
  }) as unknown as PrismaClient;
  const translated = withTranslatedTransactions(prisma, health);
  return {
    prisma: translated,
    pool,
    transactions: new Transactions(translated, t.connectTimeoutMs),
    ping: async () => {
      await pool.query('SELECT 1');
    },
    health,
    close: async () => {
      await base.$disconnect();
      await pool.end().catch(() => undefined);
    },
  };
}

/** `$transaction` translated too: a transaction that cannot begin or commit fails like any statement. */
function withTranslatedTransactions(prisma: PrismaClient, health: DatabaseHealth): PrismaClient {
  const original = prisma.$transaction.bind(prisma) as (...a: unknown[]) => Promise<unknown>;
  Object.defineProperty(prisma, '$transaction', {
    value: (...args: unknown[]) =>
      original(...args).catch((err: unknown) => {
        throw translateDbError(err, health);
      }),
  });
  return prisma;
}

/** PostgreSQL error code of a failure raised through Prisma or pg, if any. */
export function pgErrorCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    const o = e as {
      code?: unknown;
      cause?: unknown;
      meta?: { driverAdapterError?: { cause?: { originalCode?: string; kind?: string } } };
    };
    const original = o.meta?.driverAdapterError?.cause?.originalCode;
    if (original) return original;
    if (typeof o.code === 'string' && /^[0-9A-Z]{5}$/.test(o.code)) return o.code;
    if (o.code === 'P2002') return '23505';
    if (o.code === 'P2003') return '23503';
    e = o.cause;
  }
  return undefined;
}

export const isUniqueViolation = (err: unknown): boolean => pgErrorCode(err) === '23505';

/** A stable 64-bit advisory-lock key for a content hash (the first 16 hex digits, as a signed bigint). */
export function contentLockKey(blake3Hex: string): bigint {
  return BigInt.asIntN(64, BigInt('0x' + blake3Hex.slice(0, 16)));
}
