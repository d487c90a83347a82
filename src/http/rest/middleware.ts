import express, { type Request, type RequestHandler, type Response } from 'express';
import { DomainError } from '../../domain/errors';
import { assertJsonInput, MAX_JSON_DEPTH } from '../../domain/input';
import { idParam } from '../shared/ids';
import { raising } from '../shared/raises';
import type { RequestAuth } from '../shared/request-auth';
import { routeScope } from '../shared/route-scopes';

/**
 * The key's owner as `res.locals.principal`, refused when the key lacks the route's scope (route-scopes.ts); the key
 * store is the database (503 when it cannot be reached). Mounted on /api: `req.path` is below it.
 */
export function authenticate(auth: RequestAuth): RequestHandler {
  return raising(['UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE'], async (req, res, next) => {
    try {
      res.locals.principal = await auth.authenticate(req, res, routeScope(req.method, req.path));
      next();
    } catch (err) {
      next(err);
    }
  });
}

/** JSON bodies only, parsed strictly; a body that is not a JSON object is INVALID_BODY. */
export function jsonBody(limit = '2mb'): RequestHandler[] {
  return [
    raising(['UNSUPPORTED_MEDIA_TYPE'], (req, _res, next) => {
      if (!req.is('application/json')) {
        next(new DomainError('UNSUPPORTED_MEDIA_TYPE', 'this route takes Content-Type: application/json'));
        return;
      }
      next();
    }),
    ...parsedJson(limit),
  ];
}

/**
 * A JSON body where one is sent (`Content-Type: application/json`), for a route that also takes other bodies (POST
 * /api/assets: multipart or JSON): any other request passes unread, with `req.body` unset.
 */
export function jsonBodyIfSent(limit = '2mb'): RequestHandler[] {
  return parsedJson(limit).map(
    (step): RequestHandler =>
      (req, res, next) =>
        req.is('application/json') ? step(req, res, next) : next(),
  );
}

function parsedJson(limit: string): RequestHandler[] {
  return [
    // The parser's errors as shared/errors.ts `toDomainError` reads them (an unknown charset is a 415); a body that
    // stalls is cut by the request guard.
    raising(
      ['INVALID_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'INVALID_BODY', 'REQUEST_TIMEOUT'],
      express.json({ limit, strict: false, type: () => true }),
    ),
    raising(['INVALID_BODY'], (req, _res, next) => {
      const b: unknown = req.body;
      if (b === null || typeof b !== 'object' || Array.isArray(b))
        next(new DomainError('INVALID_BODY', 'the body must be a JSON object'));
      else {
        // Every key and value at any depth (the fields' own validators then apply their exact limits).
        try {
          assertJsonInput(b, 'body', 'INVALID_BODY', MAX_JSON_DEPTH + 1);
          next();
        } catch (err) {
          next(err);
        }
      }
    }),
  ];
}

export const pathId = (req: Request, name = 'id'): string => idParam(req.params[name], name);

/**
 * `res.json(body)` for a 200 without ETag, as the hot reads answer: the same status, headers and bytes, without
 * Express's content-type parsing and charset lookup on every response (`npm run bench -- metadata`).
 */
export function sendJson(res: Response, body: unknown): void {
  const text = JSON.stringify(body);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** The same for a body serialized already (a cached page). */
export function sendJsonBytes(res: Response, body: Buffer | string): void {
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', typeof body === 'string' ? Buffer.byteLength(body) : body.length);
  res.end(body);
}
