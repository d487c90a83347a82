import type { Prisma } from '../../generated/prisma/client';
import { isUniqueViolation, prismaOf, type Db, type Transaction, type Transactions } from '../../infra/prisma';
import { AlreadyExists } from '../errors';
import type { Page } from '../assets/asset.types';
import { exportRequestFromWire, exportRequestToWire, sameExportKey, type ExportRequestWire } from './export-request';
import type { ExportRequest, Task, TaskListQuery, TaskName, TaskResult, TaskStatus } from './task.types';

const WITH_TRANSFER = {
  transfer: { select: { bytesDownloaded: true, bytesTotal: true, updatedAt: true } },
  importRun: { select: { roots: true } },
} as const;
type TaskRow = Prisma.TaskGetPayload<{ include: typeof WITH_TRANSFER }>;

export const ACTIVE_STATUSES: TaskStatus[] = ['created', 'running'];
export const isActive = (s: string): boolean => s === 'created' || s === 'running';

export function toTask(r: TaskRow): Task {
  const live = isActive(r.status) && r.transfer ? r.transfer : r;
  const bytesDownloaded = Number(live.bytesDownloaded);
  const bytesTotal = live.bytesTotal === null ? null : Number(live.bytesTotal);
  const updateTime =
    r.transfer && isActive(r.status) && r.transfer.updatedAt > r.updateTime ? r.transfer.updatedAt : r.updateTime;
  return {
    id: r.id,
    ownerId: r.ownerId,
    // Always a string: the client's Idempotency-Key, else one derived from the task.
    idempotencyKey: r.idempotencyKey ?? derivedKey(r.taskName, r.id),
    taskName: r.taskName as TaskName,
    ...(r.exportRequest
      ? { exportRequest: exportRequestFromWire(r.exportRequest as unknown as ExportRequestWire) }
      : {}),
    ...(r.importRun ? { importRoots: r.importRun.roots } : {}),
    payload: {
      sourceUrl: r.sourceUrl,
      tags: r.tags ?? [],
      userMetadata: (r.userMetadata ?? {}) as Record<string, unknown>,
      previewId: r.previewId,
    },
    status: r.status as TaskStatus,
    createTime: r.createTime,
    updateTime,
    startedAt: r.startedAt,
    completedAt: r.completedAt,
    progress: {
      bytesDownloaded,
      bytesTotal,
      progress:
        r.status === 'completed'
          ? 1
          : bytesTotal
            ? Math.min(1, bytesDownloaded / bytesTotal)
            : bytesTotal === 0
              ? 1
              : null,
    },
    result: (r.result as TaskResult | null) ?? null,
    errorMessage: r.errorMessage,
  };
}

const derivedKey = (taskName: string, id: string) => `${taskName}:${id}`;
const DERIVED_KEY =
  /^(download_file|export_assets|seed_assets):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** A derived key names the task without a client key; any other key is matched as stored. */
function idempotencyWhere(key: string): Prisma.TaskWhereInput {
  const m = DERIVED_KEY.exec(key);
  return m
    ? { OR: [{ idempotencyKey: key }, { id: m[2], taskName: m[1], idempotencyKey: null }] }
    : { idempotencyKey: key };
}

export interface NewTask {
  id: string;
  ownerId: string;
  idempotencyKey: string | null;
  sourceUrl: string;
  tags: string[];
  userMetadata: Record<string, unknown>;
  previewId: string | null;
  transferId: string;
  running: boolean;
}

/** Task rows. Every read is scoped to an owner unless the caller is an admin listing all owners. */
export class TaskRepository {
  constructor(
    private readonly db: Db,
    private readonly transactions: Transactions,
  ) {}

  async find(ownerId: string | undefined, id: string, tx?: Transaction): Promise<Task | undefined> {
    const row = await prismaOf(tx, this.db).task.findFirst({
      where: { id, ...(ownerId === undefined ? {} : { ownerId }) },
      include: WITH_TRANSFER,
    });
    return row ? toTask(row) : undefined;
  }

  async findByIdempotencyKey(ownerId: string, key: string, tx?: Transaction): Promise<Task | undefined> {
    const row = await prismaOf(tx, this.db).task.findFirst({
      where: { ownerId, idempotencyKey: key },
      include: WITH_TRANSFER,
    });
    return row ? toTask(row) : undefined;
  }

  async findActiveForUrl(ownerId: string, sourceUrl: string, tx?: Transaction): Promise<Task | undefined> {
    const row = await prismaOf(tx, this.db).task.findFirst({
      where: { ownerId, sourceUrl, status: { in: ACTIVE_STATUSES } },
      orderBy: { createTime: 'desc' },
      include: WITH_TRANSFER,
    });
    return row ? toTask(row) : undefined;
  }

  /**
   * Serialises, for the transaction, everything that starts an export under one identity (an owner's request, or an
   * owner's Idempotency-Key): identical requests arriving together, on one instance or many sharing the database,
   * take turns, so the first inserts its task and the others find it.
   */
  async lockExportIdentity(ownerId: string, identity: string, tx: Transaction): Promise<void> {
    await prismaOf(tx)
      .$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`export:${ownerId}\n${identity}`}, 0))`;
  }

  /** This owner's queued or running export of the same request (ids and name filters in any order), if any. */
  async findActiveExport(ownerId: string, request: ExportRequest, tx?: Transaction): Promise<Task | undefined> {
    const rows = await prismaOf(tx, this.db).task.findMany({
      // sourceUrl '' is every export: the (owner_id, source_url, status) index finds an owner's active ones.
      where: { ownerId, sourceUrl: '', taskName: 'export_assets', status: { in: ACTIVE_STATUSES } },
      orderBy: { createTime: 'desc' },
      take: 100,
      include: WITH_TRANSFER,
    });
    const key = sameExportKey(request);
    const row = rows.find(
      (r) =>
        r.exportRequest &&
        sameExportKey(exportRequestFromWire(r.exportRequest as unknown as ExportRequestWire)) === key,
    );
    return row ? toTask(row) : undefined;
  }

  async list(ownerId: string | undefined, q: TaskListQuery): Promise<Page<Task>> {
    const where: Prisma.TaskWhereInput = {
      ...(ownerId === undefined ? {} : { ownerId }),
      ...(q.taskName ? { taskName: q.taskName } : {}),
      ...(q.idempotencyKey ? idempotencyWhere(q.idempotencyKey) : {}),
      ...(q.statuses.length ? { status: { in: q.statuses } } : {}),
      ...(q.createdAfter || q.createdBefore
        ? {
            createTime: {
              ...(q.createdAfter ? { gt: q.createdAfter } : {}),
              ...(q.createdBefore ? { lt: q.createdBefore } : {}),
            },
          }
        : {}),
    };
    const [total, rows] = await this.transactions.run(async (tx) => {
      const db = prismaOf(tx);
      const count = await db.task.count({ where });
      const page = await db.task.findMany({
        where,
        orderBy: [{ createTime: q.sortOrder }, { id: q.sortOrder }],
        skip: q.offset,
        take: q.limit,
        include: WITH_TRANSFER,
      });
      return [count, page] as const;
    });
    return { items: rows.map(toTask), total, hasMore: q.offset + rows.length < total };
  }

  /** A task with the same idempotency key exists already (a concurrent request won): AlreadyExists. */
  async insert(t: NewTask, tx: Transaction): Promise<Task> {
    const row = await prismaOf(tx)
      .task.create({
        data: {
          id: t.id,
          ownerId: t.ownerId,
          idempotencyKey: t.idempotencyKey,
          sourceUrl: t.sourceUrl,
          tags: t.tags,
          userMetadata: t.userMetadata as Prisma.InputJsonValue,
          previewId: t.previewId,
          transferId: t.transferId,
          status: t.running ? 'running' : 'created',
          startedAt: t.running ? new Date() : null,
        },
        include: WITH_TRANSFER,
      })
      .catch(takenKey(t.idempotencyKey));
    return toTask(row);
  }

  /** An export_assets task, its job sent in the same transaction; AlreadyExists when its idempotency key is taken. */
  async insertExport(
    t: { id: string; ownerId: string; idempotencyKey: string | null; request: ExportRequest; bytesTotal: number },
    tx: Transaction,
  ): Promise<Task> {
    const row = await prismaOf(tx, this.db)
      .task.create({
        data: {
          id: t.id,
          ownerId: t.ownerId,
          idempotencyKey: t.idempotencyKey,
          taskName: 'export_assets',
          sourceUrl: '',
          exportRequest: exportRequestToWire(t.request) as unknown as Prisma.InputJsonValue,
          bytesTotal: BigInt(t.bytesTotal),
        },
        include: WITH_TRANSFER,
      })
      .catch(takenKey(t.idempotencyKey));
    return toTask(row);
  }

  /** Marks a created task running (export tasks; downloads go through their transfer). */
  async start(id: string): Promise<void> {
    await this.db.task.updateMany({
      where: { id, status: 'created' },
      data: { status: 'running', startedAt: new Date(), updateTime: new Date() },
    });
  }

  /** Progress of an active task; false when it is no longer active (cancelled). */
  async progress(id: string, bytes: number): Promise<boolean> {
    const n = await this.db.task.updateMany({
      where: { id, status: { in: ACTIVE_STATUSES } },
      data: { bytesDownloaded: BigInt(bytes), updateTime: new Date() },
    });
    return n.count > 0;
  }

  /** Progress of an active task with a known total (imports). */
  async progressOf(id: string, bytes: number, total: number): Promise<void> {
    await this.db.task.updateMany({
      where: { id, status: { in: ACTIVE_STATUSES } },
      data: { bytesDownloaded: BigInt(bytes), bytesTotal: BigInt(total), updateTime: new Date() },
    });
  }

  /** Locks an owner's task row for a state change; undefined when it is not theirs. */
  async lockForUpdate(
    ownerId: string,
    id: string,
    tx: Transaction,
  ): Promise<{ status: string; transferId: string | null; sourceUrl: string } | undefined> {
    const rows = await prismaOf(tx, this.db).$queryRaw<
      { status: string; transferId: string | null; sourceUrl: string }[]
    >`
      SELECT status, transfer_id::text AS "transferId", source_url AS "sourceUrl" FROM task
      WHERE id = ${id}::uuid AND owner_id = ${ownerId} FOR UPDATE`;
    return rows[0];
  }

  /** Active tasks of a transfer, oldest first. */
  async activeOfTransfer(transferId: string, tx?: Transaction): Promise<Task[]> {
    const rows = await prismaOf(tx, this.db).task.findMany({
      where: { transferId, status: { in: ACTIVE_STATUSES } },
      orderBy: { createTime: 'asc' },
      include: WITH_TRANSFER,
    });
    return rows.map(toTask);
  }

  async countActiveOfTransfer(transferId: string, tx: Transaction): Promise<number> {
    return prismaOf(tx, this.db).task.count({ where: { transferId, status: { in: ACTIVE_STATUSES } } });
  }

  async markRunning(transferId: string, tx?: Transaction): Promise<void> {
    await prismaOf(tx, this.db).task.updateMany({
      where: { transferId, status: 'created' },
      data: { status: 'running', startedAt: new Date(), updateTime: new Date() },
    });
  }

  /** Completes an active task; false when it was cancelled meanwhile. */
  async complete(id: string, result: TaskResult, tx?: Transaction): Promise<boolean> {
    const now = new Date();
    const n = await prismaOf(tx, this.db).task.updateMany({
      where: { id, status: { in: ACTIVE_STATUSES } },
      data: {
        status: 'completed',
        result: result as unknown as Prisma.InputJsonValue,
        bytesDownloaded: BigInt(result.bytesDownloaded),
        bytesTotal: BigInt(result.bytesDownloaded),
        completedAt: now,
        updateTime: now,
        errorMessage: null,
      },
    });
    return n.count > 0;
  }

  /** Fails active tasks (one, or every one of a transfer), keeping the progress they reached. */
  async fail(
    where: { id: string } | { transferId: string },
    message: string,
    progress: { bytes: number; total: number | null },
    tx?: Transaction,
    status: 'failed' | 'cancelled' = 'failed',
  ): Promise<void> {
    const now = new Date();
    await prismaOf(tx, this.db).task.updateMany({
      where: { ...where, status: { in: ACTIVE_STATUSES } },
      data: {
        status,
        errorMessage: message,
        bytesDownloaded: BigInt(progress.bytes),
        bytesTotal: progress.total === null ? null : BigInt(progress.total),
        completedAt: now,
        updateTime: now,
        startedAt: undefined,
      },
    });
  }

  /**
   * Tasks of every owner by kind and status, for the operator's metrics: one grouped scan, cut by the server after
   * `timeoutMs` so a scrape cannot hold a connection for long.
   */
  async countByStatus(timeoutMs: number): Promise<{ taskName: string; status: string; count: number }[]> {
    const rows = await this.transactions.run(
      async (tx) =>
        prismaOf(tx).$queryRaw<{ task_name: string; status: string; n: number }[]>`
        SELECT task_name, status, count(*)::int AS n FROM task GROUP BY task_name, status`,
      { statementTimeoutMs: timeoutMs },
    );
    return rows.map((r) => ({ taskName: r.task_name, status: r.status, count: r.n }));
  }
}

/** A unique violation on insert: the idempotency key is another task's (AlreadyExists); anything else as it is. */
const takenKey =
  (key: string | null) =>
  (err: unknown): never => {
    throw isUniqueViolation(err) ? new AlreadyExists(`task with idempotency key ${key}`, { cause: err }) : err;
  };
