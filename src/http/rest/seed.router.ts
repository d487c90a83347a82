import { Router, type RequestHandler } from 'express';
import type { ImportService } from '../../domain/imports/import.service';
import type { SeedAnswer } from '../../domain/imports/import.types';
import { checkBody } from '../schema/check';
import { oneOf } from '../schema/query';
import { SeedRequest } from '../schema/rest';
import { handle, principalOf } from '../shared/handler';
import { jsonBody } from './middleware';
import { seedProgressJson } from './task.presenter';

function answerJson(a: SeedAnswer): Record<string, unknown> {
  const task = a.taskId ? { task_id: a.taskId } : {};
  if (!('progress' in a)) return { status: a.status, ...task };
  return { status: a.status, progress: seedProgressJson(a.progress), errors: a.errors, ...task };
}

/** A JSON object body, or none at all (ComfyUI's frontend may send none: every root is meant). */
function optionalJsonBody(): RequestHandler {
  const chain = jsonBody();
  return (req, res, next) => {
    if (
      req.get('content-length') === '0' ||
      (req.get('content-length') === undefined && req.get('transfer-encoding') === undefined)
    ) {
      req.body = {};
      return next();
    }
    const step =
      (i: number) =>
      (err?: unknown): void => {
        if (err !== undefined || i === chain.length) return next(err);
        chain[i]!(req, res, step(i + 1));
      };
    step(0)();
  };
}

/** ComfyUI's seed routes (contract 6.4): import IMPORT_ROOTS, its status, and cancel. */
export function seedRouter(deps: { imports: ImportService }): Router {
  const r = Router();
  r.post(
    '/assets/seed',
    optionalJsonBody(),
    handle(async (req, res) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      checkBody(SeedRequest, body);
      // A boolean given once (openapi.yaml's `wait`); an empty value is the default, as for every parameter.
      const wait = oneOf(req.query as Record<string, unknown>, 'wait', ['true', 'false'] as const, 'false') === 'true';
      const a = await deps.imports.seed(principalOf(res), body.roots, wait);
      const status = a.status === 'started' ? 202 : a.status === 'already_running' ? 409 : 200;
      if (a.taskId && a.status === 'started') res.location(`/api/tasks/${a.taskId}`);
      res.status(status).json(answerJson(a));
    }),
  );
  r.get(
    '/assets/seed/status',
    handle(async (_req, res) => {
      const s = await deps.imports.status(principalOf(res));
      res
        .set('Cache-Control', 'no-store')
        .json({ state: s.state, ...(s.progress ? { progress: seedProgressJson(s.progress) } : {}), errors: s.errors });
    }),
  );
  r.post(
    '/assets/prune',
    handle(async (_req, res) => {
      res.json(await deps.imports.prune(principalOf(res)));
    }),
  );
  r.post(
    '/assets/seed/cancel',
    handle(async (_req, res) => {
      res.json(await deps.imports.cancel(principalOf(res)));
    }),
  );
  return r;
}
