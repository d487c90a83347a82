import type { ErrorRequestHandler, Request, Response } from 'express';
import type { DomainError } from '../../domain/errors';
import type { Logger } from '../../infra/logger';
import { asDomainError, bodyUnread, errorResponse } from '../shared/errors';

/** Express's rendering of an error (shared/errors.ts) on a REST route. */
export function sendError(res: Response, err: DomainError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const r = errorResponse(err);
  if (bodyUnread(res.req)) r.headers.Connection = 'close';
  res.set(r.headers).status(r.status).json(r.body);
}

export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req: Request, res: Response, _next) => {
    void _next;
    sendError(res, asDomainError(err, logger, { requestId: res.locals.requestId as string | undefined, method: req.method, path: req.path }));
  };
}
