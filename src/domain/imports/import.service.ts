import crypto from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { IMPORT_ROOT_NAMES, type ImportRootName, type ImportRootsConfig } from '../../config';
import type { Logger } from '../../infra/logger';
import type { AuditService } from '../audit/audit.service';
import type { Transactions } from '../../infra/prisma';
import type { AssetService } from '../assets/asset.service';
import type { Principal } from '../assets/asset.types';
import { requireScope } from '../auth/scopes';
import type { ContentService } from '../content/content.service';
import { AlreadyExists, DomainError, isOwnStoreFailure } from '../errors';
import { JOB, type Queue } from '../job-map';
import type { TaskRepository } from '../tasks/task.repository';
import { BatchCollector, type ImportBatches } from './import-batch';
import { ImportReadError } from './import-read';
import { ImportReader, type Pending, type SavedFile } from './import-reader';
import { walkRoot, type FoundFile, type WalkProblem } from './import-walk';
import { InPlaceImporter, type InPlaceDeps, type InPlacePending, type SeenFiles } from './import-in-place';
import type { ImportRepository } from './import.repository';
import {
  EMPTY_PROGRESS,
  MAX_IMPORT_ERRORS,
  type ImportError,
  type ImportProgress,
  type ImportStatus,
  type SeedAnswer,
} from './import.types';

export interface ImportOptions {
  /** A run whose worker has not renewed it for this long is taken over (its worker died). */
  staleMs: number;
  /** How often the worker saves progress and looks for a cancel. */
  tickMs: number;
  /** Files read at a time. */
  concurrency: number;
}

export const DEFAULT_IMPORT_OPTIONS: ImportOptions = { staleMs: 10_000, tickMs: 1_000, concurrency: 4 };

const CANCELLED = 'cancelled';

/**
 * The server-side import of IMPORT_ROOTS (contract 6.4, ComfyUI's seed): one `seed_assets` task at a time per
 * deployment (the unique `import_run.active`), run by a pg-boss job on any instance, under a heartbeat so another
 * worker resumes it when its worker dies. Every regular file is read once, through the same content-addressed ingest
 * as uploads, and becomes an asset tagged and named by the shared ComfyUI mapping (comfy-folders.ts); a file that
 * has the size, mtime and inode it had when an earlier import stored it is not read again (`import_file`).
 */
export class ImportService {
  private readonly worker = `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;

  constructor(
    private readonly d: {
      config: ImportRootsConfig;
      transactions: Transactions;
      repo: ImportRepository;
      tasks: TaskRepository;
      assets: AssetService;
      content: ContentService;
      batches: ImportBatches;
      /** In-place roots (contract 6.4); absent: every root is copied. */
      inPlace?: InPlaceDeps;
      queue: Queue;
      logger: Logger;
      /** Records an admin's import into, or cancel of, another owner's assets (IMPORT_ROOTS_OWNER's). */
      audit?: AuditService;
    },
    private readonly o: ImportOptions = DEFAULT_IMPORT_OPTIONS,
  ) {
    this.reader = new ImportReader({ content: d.content, assets: d.assets });
    this.inPlaceReader = d.inPlace && new InPlaceImporter({ content: d.content, assets: d.assets, inPlace: d.inPlace });
  }

  private readonly reader: ImportReader;
  private readonly inPlaceReader: InPlaceImporter | undefined;

  /** The reader of root `name`'s files when it is an in-place root. */
  private inPlaceOf(name: string): InPlaceImporter | undefined {
    return this.d.config.inPlace.has(name as ImportRootName) ? this.inPlaceReader : undefined;
  }

  private get configured(): ImportRootName[] {
    return IMPORT_ROOT_NAMES.filter((n) => this.d.config.roots[n] !== undefined);
  }

  /** Admin keys, and the keys of IMPORT_ROOTS_OWNER (whose route's own scope, read or write, the route checked). */
  private allow(principal: Principal): void {
    if (principal.ownerId !== this.d.config.owner)
      requireScope(principal, 'admin', "importing the server's folders (unless the key is IMPORT_ROOTS_OWNER's)");
  }

  /** POST /api/assets/seed. `roots`: the body's list (absent: every configured root). */
  async seed(principal: Principal, rawRoots: unknown, wait: boolean): Promise<SeedAnswer> {
    if (this.configured.length === 0) return { status: 'completed', progress: { ...EMPTY_PROGRESS }, errors: [] };
    this.allow(principal);
    const roots = this.rootsOf(rawRoots);
    if (roots.length === 0) return { status: 'completed', progress: { ...EMPTY_PROGRESS }, errors: [] };
    const taskId = crypto.randomUUID();
    const ownerId = this.d.config.owner ?? principal.ownerId;
    try {
      await this.d.transactions.run(async (tx) => {
        await this.d.repo.insertTask({ id: taskId, ownerId, roots }, tx);
        await this.d.repo.insertRun({ taskId, ownerId, roots }, tx);
        await this.d.queue.send(JOB.importSeed, { taskId }, { tx });
      });
    } catch (err) {
      if (err instanceof AlreadyExists) return { status: 'already_running', ...(await this.runningTaskId()) };
      throw err;
    }
    this.d.queue.wake(JOB.importSeed);
    if (ownerId !== principal.ownerId)
      await this.d.audit?.recordBy(principal, {
        action: 'import.start',
        targetOwner: ownerId,
        targetId: taskId,
        details: { roots },
      });
    if (!wait) return { status: 'started', taskId };
    for (;;) {
      const run = await this.d.repo.run(taskId);
      if (!run) throw new DomainError('TASK_NOT_FOUND', `task ${taskId} not found`);
      if (!run.active) {
        const status =
          run.taskStatus === 'completed' ? 'completed' : run.taskStatus === 'cancelled' ? 'cancelled' : 'failed';
        return { status, progress: run.progress, errors: run.errors, taskId };
      }
      await sleep(200);
    }
  }

  private async runningTaskId(): Promise<{ taskId?: string }> {
    const run = await this.d.repo.current();
    return run?.active ? { taskId: run.taskId } : {};
  }

  private rootsOf(raw: unknown): ImportRootName[] {
    if (raw === undefined || raw === null) return this.configured;
    if (
      !Array.isArray(raw) ||
      !raw.every((r) => typeof r === 'string' && (IMPORT_ROOT_NAMES as readonly string[]).includes(r))
    ) {
      throw new DomainError('INVALID_BODY', `roots must be a list of ${IMPORT_ROOT_NAMES.join(', ')}`, {
        field: 'roots',
      });
    }
    // Names the deployment does not import from are nothing to seed, as ComfyUI answers for a folder it lacks.
    return this.configured.filter((n) => (raw as string[]).includes(n));
  }

  /** GET /api/assets/seed/status. */
  async status(principal: Principal): Promise<ImportStatus> {
    if (this.configured.length === 0) return { state: 'IDLE', errors: [] };
    this.allow(principal);
    const run = await this.d.repo.current();
    if (!run) return { state: 'IDLE', errors: [] };
    const stopping = run.cancelRequested || (run.taskStatus !== 'created' && run.taskStatus !== 'running');
    return {
      state: !run.active ? 'IDLE' : stopping ? 'CANCELLING' : 'RUNNING',
      progress: run.progress,
      errors: run.errors,
    };
  }

  /** POST /api/assets/seed/cancel: `cancelling` when an import runs (it stops within a tick), else `idle`. */
  async cancel(principal: Principal): Promise<{ status: 'cancelling' | 'idle' }> {
    if (this.configured.length === 0) return { status: 'idle' };
    this.allow(principal);
    const cancelling = await this.d.repo.requestCancel();
    const owner = this.d.config.owner;
    if (cancelling && owner !== undefined && owner !== principal.ownerId)
      await this.d.audit?.recordBy(principal, { action: 'import.cancel', targetOwner: owner });
    return { status: cancelling ? 'cancelling' : 'idle' };
  }

  /**
   * POST /api/assets/prune (ComfyUI's route): deletes this owner's assets whose in-place file is missing, i.e. tagged
   * `missing` by an import or a read that found the file gone or changed. The files themselves are never touched.
   */
  async prune(principal: Principal): Promise<{ status: 'completed'; marked: number }> {
    requireScope(principal, 'write', 'pruning assets');
    let marked = 0;
    for (const id of (await this.d.inPlace?.repo.missingAssets(principal.ownerId)) ?? []) {
      try {
        await this.d.assets.delete(principal, id);
        marked++;
      } catch (err) {
        // Deleted meanwhile, or immutable (only an admin may change that): left as it is.
        if (!(err instanceof DomainError)) throw err;
      }
    }
    return { status: 'completed', marked };
  }

  /** The sweep job (`importSweepJob`): hands runs whose worker died to a job again. */
  async sweep(): Promise<void> {
    try {
      for (const taskId of await this.d.repo.staleRuns(this.o.staleMs)) {
        await this.d.queue.send(JOB.importSeed, { taskId }, { singletonKey: `seed:${taskId}` });
        this.d.queue.wake(JOB.importSeed);
      }
    } catch (err) {
      this.d.logger.warn('could not look for imports whose worker died', { err: (err as Error).message });
    }
  }

  /** The job: imports the run of one task, unless another live worker holds it. */
  async run(taskId: string): Promise<void> {
    const { repo, tasks, logger } = this.d;
    if (!(await repo.claim(taskId, this.worker, this.o.staleMs))) return;
    const run = await repo.run(taskId);
    if (!run?.active) return;
    await tasks.start(taskId);
    const log = logger.child({ task_id: taskId });
    const progress: ImportProgress = { ...EMPTY_PROGRESS };
    const errors: ImportError[] = [];
    const report = (e: ImportError): void => void (errors.length < MAX_IMPORT_ERRORS && errors.push(e));
    // A file skipped for a reason of its own: its code, or INTERNAL (logged) for what no code names.
    const skipped = (treePath: string, err: unknown): void => {
      if (err instanceof ImportReadError || err instanceof DomainError)
        return report({ path: treePath, code: err.code, message: err.message });
      log.warn('a file could not be imported', { path: treePath, err });
      report({ path: treePath, code: 'INTERNAL', message: (err as Error).message });
    };
    let stop = run.cancelRequested;
    let held = true;
    let processedBytes = 0;
    let totalBytes = 0;
    // What was stored, written to import_file in batches (each tick, every 500 files, at the end).
    const saved: SavedFile[] = [];
    const tick = async (): Promise<void> => {
      await this.flushSaved(run.ownerId, saved);
      const beat = await repo.heartbeat(taskId, this.worker, progress, errors);
      held = beat.held;
      stop ||= beat.stop;
      await tasks.progressOf(taskId, processedBytes, totalBytes);
    };
    const ticker = setInterval(
      () => void tick().catch((err) => log.warn('could not save import progress', { err: (err as Error).message })),
      this.o.tickMs,
    );
    let pendingBatch: BatchCollector<Pending> | undefined;
    try {
      const files: FoundFile[] = [];
      const problems: WalkProblem[] = [];
      for (const name of run.roots as ImportRootName[]) {
        const dir = this.d.config.roots[name];
        if (dir === undefined)
          problems.push({ treePath: name, code: 'ROOT_MISSING', message: `root ${name} is no longer in IMPORT_ROOTS` });
        else await walkRoot(name, dir, files, problems);
      }
      progress.total = files.length + problems.length;
      totalBytes = files.reduce((n, f) => n + Number(f.size), 0);
      for (const p of problems) {
        report({ path: p.treePath, code: p.code, message: p.message });
        progress.scanned++;
        progress.skipped++;
      }
      const known = await repo.importedFiles(run.ownerId);
      const mine = await repo.assetHashes(run.ownerId);
      // A committed batch, file by file: whether it made an asset (undefined: skipped, and reported), its content and
      // what import_file is to remember of it.
      const settle = async (made: (boolean | undefined)[], files: { blake3: string; saved: SavedFile }[]) => {
        made.forEach((created, i) => {
          progress.scanned++;
          if (created) progress.created++;
          else progress.skipped++;
          if (created !== undefined) {
            mine.add(files[i]!.blake3);
            saved.push(files[i]!.saved);
          }
        });
        if (saved.length >= 500) await this.flushSaved(run.ownerId, saved);
      };
      const batch = new BatchCollector<Pending>(async (items) =>
        settle(
          await this.commitBatch(run.ownerId, items, skipped, log),
          items.map((i) => ({ blake3: i.ingested.digest.blake3, saved: i.saved })),
        ),
      );
      pendingBatch = batch;
      // In-place files in batches of their own: their content rows, locations and assets in one transaction each.
      const inPlaceBatch = new BatchCollector<InPlacePending>(async (items) =>
        settle(
          await this.commitInPlaceBatch(run.ownerId, items, mine, skipped, log),
          items.map((p) => ({ blake3: p.digest.blake3, saved: p.saved })),
        ),
      );
      const halted = (): boolean => stop || !held;
      // The in-place files this seed saw, by content (a stale location of the same bytes moves to one of them).
      const seen: SeenFiles = new Map();
      let next = 0;
      let failing = false;
      const worker = async (): Promise<void> => {
        while (next < files.length && !stop && held && !failing) {
          const f = files[next++]!;
          let settled = true;
          try {
            const rootName = f.treePath.slice(0, f.treePath.indexOf('/'));
            const here = this.inPlaceOf(rootName);
            if (here) {
              const r = await here.readOne(
                run.ownerId,
                rootName,
                f,
                known.get(f.treePath),
                mine,
                progress,
                halted,
                seen,
              );
              if ('pending' in r) {
                settled = false;
                await inPlaceBatch.add(r.pending);
              } else if (r.created) progress.created++;
              else progress.skipped++;
              continue;
            }
            const read = await this.reader.readOne(run.ownerId, f, known.get(f.treePath), mine, progress, halted);
            if (typeof read === 'boolean') {
              if (read) progress.created++;
              else progress.skipped++;
            } else {
              settled = false;
              await batch.add(read);
            }
          } catch (err) {
            if (isOwnStoreFailure(err)) {
              failing = true;
              throw err;
            }
            progress.skipped++;
            skipped(f.treePath, err);
          } finally {
            if (settled) progress.scanned++;
            processedBytes += Number(f.size);
          }
        }
      };
      // Every reader ends before the run does, also when one fails (the others then stop at their next file).
      const ended = await Promise.allSettled(Array.from({ length: this.o.concurrency }, worker));
      const failed = ended.find((e) => e.status === 'rejected');
      if (failed) throw failed.reason;
      await batch.flush();
      await inPlaceBatch.flush();
      // The drift check of each in-place root, once its walk is whole (a stopped seed leaves the tags as they were).
      if (!stop && held)
        for (const name of run.roots as ImportRootName[]) await this.inPlaceOf(name)?.reconcile(name, seen);
      clearInterval(ticker);
      await this.flushSaved(run.ownerId, saved);
      if (!held) return; // another worker took the run over: it finishes it
      await tick().catch(() => undefined);
      if (stop) {
        await this.end(taskId, progress, errors, CANCELLED);
        log.info('import cancelled', { ...progress });
        return;
      }
      await this.d.transactions.run(async (tx) => {
        await tasks.complete(
          taskId,
          {
            success: true,
            assetId: null,
            assetHash: null,
            filename: null,
            bytesDownloaded: progress.bytesRead,
            seed: { ...progress, errors },
          },
          tx,
        );
        await repo.finish(taskId, progress, errors, tx);
      });
      log.info('import finished', { ...progress, errors: errors.length });
    } catch (err) {
      clearInterval(ticker);
      await pendingBatch?.drop((f) => this.drop(f));
      if (!held) return;
      log.warn('import failed', { err });
      await this.end(taskId, progress, errors, `import failed: ${(err as Error).message}`);
    } finally {
      if (held && progress.created > 0) await this.thumbnailsNow(log);
    }
  }

  /**
   * The thumbnails of what the import stored: its batches queue none, so making them never takes the CPU the reading
   * needs; the backfill finds every new image (and video) once the import has ended. A crash before this is covered
   * by the backfill every start runs.
   */
  private async thumbnailsNow(log: Logger): Promise<void> {
    try {
      await this.d.queue.send(JOB.thumbnailBackfill, {});
      this.d.queue.wake(JOB.thumbnailBackfill);
    } catch (err) {
      log.warn('could not queue the thumbnails of the import; the next start makes them', {
        err: (err as Error).message,
      });
    }
  }

  private async flushSaved(ownerId: string, saved: SavedFile[]): Promise<void> {
    await this.d.repo.saveFiles(ownerId, saved.splice(0, saved.length));
  }

  private async end(taskId: string, progress: ImportProgress, errors: ImportError[], why: string): Promise<void> {
    await this.d.transactions.run(async (tx) => {
      const status = why === CANCELLED ? 'cancelled' : 'failed';
      await this.d.tasks.fail(
        { id: taskId },
        why === CANCELLED ? 'cancelled by the user' : why,
        { bytes: progress.bytesRead, total: null },
        tx,
        status,
      );
      await this.d.repo.finish(taskId, progress, errors, tx);
    });
  }

  /**
   * The assets of a batch of read files, in one transaction; when it fails for another reason than the database or
   * the store (one file's content refused, say), each file is made on its own so only that one is skipped. Per file:
   * whether it made a new asset, undefined when it was skipped (reported). Temporary blobs are gone afterwards.
   */
  private async commitBatch(
    ownerId: string,
    items: Pending[],
    skipped: (treePath: string, err: unknown) => void,
    log: Logger,
  ): Promise<(boolean | undefined)[]> {
    try {
      const made = await this.d.batches.commit(ownerId, items);
      await Promise.all(items.map((i) => this.d.content.discard(i.ingested)));
      return made;
    } catch (err) {
      if (isOwnStoreFailure(err)) {
        await Promise.all(items.map((i) => this.drop(i)));
        throw err;
      }
      log.info('a batch of the import failed; making its files one at a time', { err: (err as Error).message });
    }
    const made: (boolean | undefined)[] = [];
    for (const [i, item] of items.entries()) {
      try {
        made.push((await this.d.assets.importFile(ownerId, { ingested: item.ingested }, item.file)).created);
      } catch (err) {
        if (isOwnStoreFailure(err)) {
          await Promise.all(items.slice(i + 1).map((rest) => this.drop(rest)));
          throw err;
        }
        made.push(undefined);
        skipped(item.saved.path, err);
        // The reader put its bytes under their content address; a create refused before its own precommit (a
        // quota) leaves them there without a row.
        await this.d.content.abandon(item.ingested.digest.blake3);
      }
    }
    return made;
  }

  /**
   * The contents and assets of a batch of read in-place files, in one transaction; when it fails for another reason
   * than the database, each file is made on its own so only a refused one is skipped (reported). Per file: whether it
   * made a new asset, undefined when it was skipped.
   */
  private async commitInPlaceBatch(
    ownerId: string,
    items: InPlacePending[],
    mine: Set<string>,
    skipped: (treePath: string, err: unknown) => void,
    log: Logger,
  ): Promise<(boolean | undefined)[]> {
    try {
      return await this.d.batches.commitInPlace(ownerId, items);
    } catch (err) {
      if (isOwnStoreFailure(err)) throw err;
      log.info('a batch of the import failed; making its files one at a time', { err: (err as Error).message });
    }
    const made: (boolean | undefined)[] = [];
    for (const p of items) {
      try {
        made.push(await this.inPlaceReader!.commitOne(ownerId, p, mine));
      } catch (err) {
        if (isOwnStoreFailure(err)) throw err;
        made.push(undefined);
        skipped(p.saved.path, err);
      }
    }
    return made;
  }

  /** A read file whose asset will not be made: its temporary blob, and its blob unless a content row has it. */
  private async drop(item: Pending): Promise<void> {
    await this.d.content.discard(item.ingested);
    await this.d.content.abandon(item.ingested.digest.blake3);
  }
}
