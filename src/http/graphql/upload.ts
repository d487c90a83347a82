import type { NextFunction, Request, Response } from 'express';
import { processRequest } from 'graphql-upload-minimal';
import { DomainError } from '../../domain/errors';
import { closeAfterAnswer } from '../request-guard';

/**
 * GraphQL multipart requests (https://github.com/jaydenseric/graphql-multipart-request-spec). Only the `operations`
 * and `map` parts are parsed here; the file part stays a live stream that the resolver pipes into the content ingest
 * (hashed and written while it arrives, never buffered). Without a CSRF preflight header the request is left for
 * Apollo to refuse, unparsed.
 */
export function graphqlMultipart(opts: { maxBytes: number }) {
  return (req: Request, res: Response, next: NextFunction): void => {
    // A look at the header before type-is parses it: most requests are JSON.
    if (!/multipart/i.test(req.headers['content-type'] ?? '') || !req.is('multipart/form-data')) {
      next();
      return;
    }
    // Whatever the outcome, never leave the rest of a request body unread on a kept-alive connection.
    res.once('finish', () => {
      if (!req.complete) {
        req.unpipe();
        req.resume();
      }
    });
    const declared = Number(req.get('content-length'));
    if (Number.isFinite(declared) && declared > opts.maxBytes + 1024 * 1024) {
      closeAfterAnswer(res);
      next(new DomainError('PAYLOAD_TOO_LARGE', `the body is larger than the limit of ${opts.maxBytes} bytes`));
      return;
    }
    if (!req.get('apollo-require-preflight') && !req.get('x-apollo-operation-name')) {
      req.body = {};
      next();
      return;
    }
    processRequest(req, res, { maxFiles: 1, maxFieldSize: 2 * 1024 * 1024 }).then(
      (body) => {
        req.body = body;
        next();
      },
      (err: { status?: number; message?: string }) => next(uploadError(err)),
    );
  };
}

/**
 * The errors graphql-upload-minimal rejects an Upload with (type-graphql awaits the Upload argument before the
 * resolver runs, so they reach the resolvers' error interceptor): MISSING_FILE, PAYLOAD_TOO_LARGE or INVALID_BODY.
 */
export function uploadErrorOf(err: unknown): DomainError | undefined {
  const e = err as { status?: unknown; expose?: unknown; message?: string };
  if (!(err instanceof Error) || typeof e.status !== 'number' || e.expose !== true) return undefined;
  return uploadError(e as { status: number; message: string });
}

function uploadError(err: { status?: number; message?: string }): DomainError {
  if (err instanceof DomainError) return err;
  const message = err?.message ?? 'malformed multipart request';
  if (err?.status === 413) return new DomainError('PAYLOAD_TOO_LARGE', message);
  if (/File missing/i.test(message))
    return new DomainError('MISSING_FILE', 'the multipart request has no file for the Upload argument');
  if (err?.status === 499) return new DomainError('INVALID_BODY', 'the client aborted the upload');
  return new DomainError('INVALID_BODY', `malformed multipart request: ${message}`);
}
