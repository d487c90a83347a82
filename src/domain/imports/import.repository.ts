import type { Prisma } from '../../generated/prisma/client';
import { isUniqueViolation, prismaOf, type Db, type Transaction } from '../../infra/prisma';
import { AlreadyExists } from '../errors';
import { EMPTY_PROGRESS, type ImportError, type ImportProgress } from './import.types';

export interface ImportRunRow {
  taskId: string;
  ownerId: string;
  roots: string[];
  active: boolean;
  cancelRequested: boolean;
  progress: ImportProgress;
  errors: ImportError[];
  taskStatus: string;
}

/** What an import stored of one file: read again only when size, mtime or inode moved. */
export interface ImportedFile {
  size: bigint;
  mtimeNs: bigint;
  inode: string;
  contentHash: string;
}

const progressOf = (v: unknown): ImportProgress => ({ ...EMPTY_PROGRESS, ...((v ?? {}) as Partial<ImportProgress>) });

/** Import runs (`import_run`, one per seed_assets task) and the files imports stored (`import_file`). */
export class ImportRepository {
  constructor(private readonly db: Db) {}

  /**
   * The task and its run, in the caller's transaction. Another run still active (on any instance): AlreadyExists, from
   * the unique index on `active`.
   */
  async insertRun(r: { taskId: string; ownerId: string; roots: string[] }, tx: Transaction): Promise<void> {
    const db = prismaOf(tx);
    try {
      await db.importRun.create({ data: { taskId: r.taskId, ownerId: r.ownerId, roots: r.roots, active: true } });
    } catch (err) {
      if (isUniqueViolation(err)) throw new AlreadyExists('a running import', { cause: err });
      throw err;
    }
  }

  async insertTask(t: { id: string; ownerId: string; roots: string[] }, tx: Transaction): Promise<void> {
    await prismaOf(tx).task.create({
      data: {
        id: t.id,
        ownerId: t.ownerId,
        idempotencyKey: null,
        taskName: 'seed_assets',
        sourceUrl: '',
        status: 'created',
      },
    });
  }

  private async one(where: Prisma.ImportRunWhereInput): Promise<ImportRunRow | undefined> {
    const r = await this.db.importRun.findFirst({
      where,
      orderBy: { task: { createTime: 'desc' } },
      include: { task: { select: { status: true } } },
    });
    return r
      ? {
          taskId: r.taskId,
          ownerId: r.ownerId,
          roots: r.roots,
          active: r.active === true,
          cancelRequested: r.cancelRequested,
          progress: progressOf(r.progress),
          errors: (r.errors ?? []) as unknown as ImportError[],
          taskStatus: r.task.status,
        }
      : undefined;
  }

  /** The running import, else the last one. */
  async current(): Promise<ImportRunRow | undefined> {
    return (await this.one({ active: true })) ?? this.one({});
  }

  run(taskId: string): Promise<ImportRunRow | undefined> {
    return this.one({ taskId });
  }

  /**
   * Takes the run for this worker: when it is active and no other worker has renewed it for `staleMs` (its worker
   * died). False when another worker holds it.
   */
  async claim(taskId: string, worker: string, staleMs: number): Promise<boolean> {
    const n = await this.db.$executeRaw`
      UPDATE import_run SET worker = ${worker}, heartbeat_at = now() WHERE task_id = ${taskId}::uuid AND active
        AND (worker IS NULL OR worker = ${worker} OR heartbeat_at < now() - make_interval(secs => ${staleMs / 1000}))`;
    return n > 0;
  }

  /**
   * Saves the figures and renews this worker's hold. Answers whether to go on: false when another worker took the
   * run, and `stop` when a cancel was asked for (seed/cancel, or the task cancelled through /api/tasks).
   */
  async heartbeat(
    taskId: string,
    worker: string,
    progress: ImportProgress,
    errors: ImportError[],
  ): Promise<{ held: boolean; stop: boolean }> {
    const rows = await this.db.$queryRaw<{ cancel: boolean; status: string }[]>`
      UPDATE import_run r SET heartbeat_at = now(), progress = ${JSON.stringify(progress)}::jsonb, errors = ${JSON.stringify(errors)}::jsonb
      FROM task t WHERE r.task_id = ${taskId}::uuid AND t.id = r.task_id AND r.active AND r.worker = ${worker}
      RETURNING r.cancel_requested AS cancel, t.status`;
    const r = rows[0];
    return r
      ? { held: true, stop: r.cancel || (r.status !== 'created' && r.status !== 'running') }
      : { held: false, stop: true };
  }

  /** Ends the run (another may start), with its last figures. */
  async finish(taskId: string, progress: ImportProgress, errors: ImportError[], tx?: Transaction): Promise<void> {
    await prismaOf(tx, this.db).importRun.updateMany({
      where: { taskId },
      data: {
        active: null,
        progress: progress as unknown as Prisma.InputJsonValue,
        errors: errors as unknown as Prisma.InputJsonValue,
      },
    });
  }

  /** Asks the running import to stop; its task id, or undefined when none runs. */
  async requestCancel(): Promise<string | undefined> {
    const rows = await this.db.importRun.updateManyAndReturn({
      where: { active: true },
      data: { cancelRequested: true },
      select: { taskId: true },
    });
    return rows[0]?.taskId;
  }

  /** Active runs whose worker has not renewed them for `staleMs`: their worker died. */
  async staleRuns(staleMs: number): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ id: string }[]>`
      SELECT task_id::text AS id FROM import_run WHERE active AND heartbeat_at < now() - make_interval(secs => ${staleMs / 1000})`;
    return rows.map((r) => r.id);
  }

  /** What earlier imports stored of this owner's files, by tree path. */
  async importedFiles(ownerId: string): Promise<Map<string, ImportedFile>> {
    const rows = await this.db.importFile.findMany({
      where: { ownerId },
      select: { path: true, size: true, mtimeNs: true, inode: true, contentHash: true },
    });
    return new Map(
      rows.map((r) => [
        r.path,
        { size: r.size, mtimeNs: r.mtimeNs, inode: r.inode, contentHash: r.contentHash.trim() },
      ]),
    );
  }

  /** The content hashes of this owner's assets. */
  async assetHashes(ownerId: string): Promise<Set<string>> {
    const rows = await this.db.asset.findMany({ where: { ownerId }, select: { contentHash: true } });
    return new Set(rows.map((r) => r.contentHash.trim()));
  }

  /**
   * Records files an import stored, many in one statement. These rows only spare a later import a read, so their
   * commit does not wait for its WAL flush (`synchronous_commit = off`): a crash may lose the last of them, and those
   * files are then read once more.
   */
  async saveFiles(ownerId: string, files: ({ path: string } & ImportedFile)[]): Promise<void> {
    if (files.length === 0) return;
    await this.db.$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL synchronous_commit = off`;
      await tx.$executeRaw`
        INSERT INTO import_file (owner_id, path, size, mtime_ns, inode, content_hash, imported_at)
        SELECT ${ownerId}, p, s, m, i, h, now()
        FROM unnest(${files.map((f) => f.path)}::text[], ${files.map((f) => f.size.toString())}::bigint[],
          ${files.map((f) => f.mtimeNs.toString())}::bigint[], ${files.map((f) => f.inode)}::text[],
          ${files.map((f) => f.contentHash)}::text[]) AS u(p, s, m, i, h)
        ON CONFLICT (owner_id, path) DO UPDATE SET size = EXCLUDED.size, mtime_ns = EXCLUDED.mtime_ns,
          inode = EXCLUDED.inode, content_hash = EXCLUDED.content_hash, imported_at = EXCLUDED.imported_at`;
    });
  }
}
