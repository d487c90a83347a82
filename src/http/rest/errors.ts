import type { ErrorRequestHandler, NextFunction, Request, Response } from 'express';
import type { DomainError } from '../../domain/errors';
import type { Logger } from '../../infra/logger';
import { closeAfterAnswer, endAnswer } from '../request-guard';
import { asDomainError, bodyUnread, errorResponse } from '../shared/errors';
import { raising } from '../shared/raises';

const REPRESENTATION_HEADERS = [
  'Content-Type',
  'Content-Disposition',
  'Content-Range',
  'Content-Length',
  'ETag',
  'Accept-Ranges',
];

/** Express's rendering of an error (shared/errors.ts) on a REST route. */
export function sendError(res: Response, err: DomainError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const r = errorResponse(err);
  if (bodyUnread(res.req)) closeAfterAnswer(res);
  // A route that failed after describing the representation it meant to send (content: its type, file name, ETag)
  // answers the error as JSON, not as that file: none of those headers belong to the error.
  for (const h of REPRESENTATION_HEADERS) res.removeHeader(h);
  res.set(r.headers).status(r.status);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  endAnswer(res, JSON.stringify(r.body));
}

/** The last step of every request that failed: anything that is not a domain error is INTERNAL. */
export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return raising(['INTERNAL'], (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    void _next;
    sendError(
      res,
      asDomainError(err, logger, {
        requestId: res.locals.requestId as string | undefined,
        method: req.method,
        path: req.path,
      }),
    );
  });
}
