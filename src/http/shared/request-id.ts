import crypto from 'node:crypto';
import type { RequestHandler } from 'express';

/** The request id: the client's `X-Request-Id` when it is a sane token, else a new UUID. */
export function requestIdFrom(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && /^[\w.-]{1,128}$/.test(incoming) ? incoming : crypto.randomUUID();
}

/** Sets `res.locals.requestId` and the `X-Request-Id` answer header, for every route behind it. */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    const id = requestIdFrom(req.get('x-request-id'));
    res.locals.requestId = id;
    res.set('X-Request-Id', id);
    next();
  };
}
