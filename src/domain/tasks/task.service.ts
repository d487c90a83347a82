import type { Transactions } from '../../infra/prisma';
import type { Page, Principal } from '../assets/asset.types';
import type { DownloadRepository } from '../downloads/download.repository';
import { DomainError } from '../errors';
import { isActive, type TaskRepository } from './task.repository';
import type { Task, TaskListQuery } from './task.types';
import { requireScope } from '../auth/scopes';

export const CANCELLED_MESSAGE = 'cancelled by the user';

/**
 * Tasks for REST and GraphQL: owner-scoped reads (another owner's task does not exist) and cancel.
 * Cancelling the last task of a transfer cancels the transfer; its worker stops within a tick and its partial file
 * is removed.
 */
export class TaskService {
  constructor(
    private readonly transactions: Transactions,
    private readonly tasks: TaskRepository,
    private readonly transfers: DownloadRepository,
    private readonly onTransferCancelled: (transferId: string) => Promise<void>,
  ) {}

  async get(principal: Principal, id: string): Promise<Task> {
    const task = await this.tasks.find(principal.ownerId, id);
    if (!task) throw notFound(id);
    return task;
  }

  list(principal: Principal, query: TaskListQuery): Promise<Page<Task>> {
    if (query.allOwners) requireScope(principal, 'admin', 'listing the tasks of every owner');
    return this.tasks.list(query.allOwners ? undefined : principal.ownerId, query);
  }

  /** Cancels a created/running task (status `cancelled`); a finished one is TASK_NOT_CANCELLABLE. */
  async cancel(principal: Principal, id: string): Promise<Task> {
    const before = await this.get(principal, id);
    if (!isActive(before.status)) throw notCancellable(before.id, before.status);
    const cancelledTransfer = await this.transactions.run(async (tx) => {
      await this.transfers.lockUrl(before.payload.sourceUrl, tx);
      const row = await this.tasks.lockForUpdate(principal.ownerId, id, tx);
      if (!row) return undefined;
      if (!isActive(row.status)) throw notCancellable(id, row.status);
      const transfer = row.transferId ? await this.transfers.get(row.transferId) : undefined;
      const progress = { bytes: transfer?.bytesDownloaded ?? 0, total: transfer?.bytesTotal ?? null };
      await this.tasks.fail({ id }, CANCELLED_MESSAGE, progress, tx, 'cancelled');
      if (!row.transferId || (await this.tasks.countActiveOfTransfer(row.transferId, tx)) > 0) return undefined;
      return (await this.transfers.finish(row.transferId, 'cancelled', CANCELLED_MESSAGE, tx))
        ? row.transferId
        : undefined;
    });
    if (cancelledTransfer) await this.onTransferCancelled(cancelledTransfer);
    return this.get(principal, id);
  }
}

const notCancellable = (id: string, status: string) =>
  new DomainError(
    'TASK_NOT_CANCELLABLE',
    `task ${id} has already finished (${status}); only created or running tasks can be cancelled`,
  );
const notFound = (id: string) => new DomainError('TASK_NOT_FOUND', `task ${id} not found`);
