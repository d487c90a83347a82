import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';
import { PrismaClient } from '../generated/prisma/client';

export type Db = PrismaClient;
/** The client handed to an interactive transaction callback. */
export type Tx = Parameters<Parameters<PrismaClient['$transaction']>[0]>[0];

export interface Database {
  prisma: PrismaClient;
  /** The pool behind Prisma, for session-level work Prisma cannot express (advisory locks held across I/O). */
  pool: Pool;
  close(): Promise<void>;
}

export function createDatabase(url: string, poolSize: number): Database {
  const pool = new Pool({ connectionString: url, max: poolSize, idleTimeoutMillis: 30_000, connectionTimeoutMillis: 10_000 });
  // An idle client that loses its connection emits 'error' on the pool; without a listener that would crash.
  pool.on('error', () => undefined);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    prisma,
    pool,
    close: async () => {
      await prisma.$disconnect();
      await pool.end().catch(() => undefined);
    },
  };
}

/** PostgreSQL error code of a failure raised through Prisma or pg, if any. */
export function pgErrorCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    const o = e as { code?: unknown; cause?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: string; kind?: string } } } };
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
export const isForeignKeyViolation = (err: unknown): boolean => pgErrorCode(err) === '23503';

/** A stable 64-bit advisory-lock key for a content hash (the first 16 hex digits, as a signed bigint). */
export function contentLockKey(blake3Hex: string): bigint {
  return BigInt.asIntN(64, BigInt('0x' + blake3Hex.slice(0, 16)));
}
