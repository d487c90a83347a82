import { Router } from 'express';
import type { TaskService } from '../../domain/tasks/task.service';
import { TASK_STATUSES, type TaskStatus } from '../../domain/tasks/task.types';
import { DomainError } from '../../domain/errors';
import { handle, principalOf } from '../shared/handler';
import { pathId } from './middleware';
import { dateParam, intParam, listParam, oneOf, stringParam } from '../schema/query';
import { taskJson } from './task.presenter';

/** GET /api/tasks, GET /api/tasks/{task_id}, DELETE /api/tasks/{task_id}. */
export function tasksRouter(deps: { tasks: TaskService }): Router {
  const r = Router();

  r.get(
    '/tasks',
    handle(async (req, res) => {
      const q = req.query as Record<string, unknown>;
      // Comma-separated or repeated, as the tag filters: repeats cost nothing (there are five statuses, kept once), so
      // no count is refused; the request head's limit (431) bounds the list.
      const statuses = [...new Set(listParam(q, 'status', Number.POSITIVE_INFINITY).map((s) => s.toLowerCase()))];
      const bad = statuses.find((s) => !TASK_STATUSES.includes(s as TaskStatus));
      if (bad !== undefined) {
        throw new DomainError('INVALID_QUERY', `status must be one or more of ${TASK_STATUSES.join(', ')}`, {
          parameter: 'status',
        });
      }
      const query = {
        taskName: stringParam(q, 'task_name'),
        idempotencyKey: stringParam(q, 'idempotency_key'),
        statuses: statuses as TaskStatus[],
        createdAfter: dateParam(q, 'created_after'),
        createdBefore: dateParam(q, 'created_before'),
        sortOrder: oneOf(q, 'sort_order', ['asc', 'desc'] as const, 'desc'),
        offset: intParam(q, 'offset', 0, 0, 1_000_000_000),
        limit: intParam(q, 'limit', 20, 1, 100),
      };
      const page = await deps.tasks.list(principalOf(res), query);
      res.json({
        tasks: page.items.map((t) => taskJson(t)),
        pagination: { offset: query.offset, limit: query.limit, total: page.total, has_more: page.hasMore },
      });
    }),
  );

  r.get(
    '/tasks/:task_id',
    handle(async (req, res) => {
      res.json(taskJson(await deps.tasks.get(principalOf(res), pathId(req, 'task_id'))));
    }),
  );

  r.delete(
    '/tasks/:task_id',
    handle(async (req, res) => {
      res.json(taskJson(await deps.tasks.cancel(principalOf(res), pathId(req, 'task_id'))));
    }),
  );

  return r;
}
