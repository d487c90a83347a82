import crypto from 'node:crypto';
import { Server } from '@tus/server';
import type { Request as ExpressRequest, RequestHandler } from 'express';
import type { Principal } from '../../domain/assets/asset.types';
import { isUuid } from '../../domain/assets/validation';
import { DomainError, type ErrorCode } from '../../domain/errors';
import type { UploadService } from '../../domain/uploads/upload.service';
import { baseUrlOfRes } from '../base-url';
import { handle, principalOf } from '../shared/handler';
import { closeAfterAnswer } from '../request-guard';
import { UploadDataStore } from './data-store';
import { UploadLocker } from './locker';
import { checkOurs, OFFSET_STREAM } from './checks';
import { parseUploadMetadata } from './metadata';
import { requestContext, type TusRequestContext } from './request-context';

/*
 * The tus protocol adapter: @tus/server answers tus 1.0 (creation, creation-with-upload, termination, expiration) at
 * /api/uploads with its data store (data-store.ts: UploadService's calls), its locker (locker.ts: the upload's lease)
 * and a request context (request-context.ts: whose request, its body read straight from Node). What is ours is
 * checked first (checks.ts), and every error that is ours (raised there, in the data store or at completion) goes to
 * the app's error middleware with the usual {code, message} JSON: another owner's upload is 404, metadata is validated
 * and Upload-Length limited at creation, Upload-Defer-Length is refused. Protocol errors (wrong offset, a
 * Tus-Resumable other than 1.0.0) keep tus's status with the same JSON body (`TUS_STATUS_CODES`). The routes are the
 * uploads router's (http/rest/uploads.router.ts).
 *
 * Cross-origin: none, as on every route of the service (its browser client is its own page): tus's
 * `Access-Control-Allow-Origin: *` is not sent.
 */

/** Whose request tus is handling (its hooks run inside the request's context). */
const principalOfTus = (): Principal => requestContext.getStore()!.principal;

/**
 * The web request tus is handed: the method, the whole path (tus takes the upload's id from its last segment) and the
 * headers, and no body: the data store reads the body straight from Node's request (request-context.ts).
 */
function webRequestOf(req: ExpressRequest, baseUrl: string, headers: Headers): Request {
  return new Request(new URL(req.originalUrl, baseUrl), { method: req.method, headers });
}

/** The request's headers as tus is to see them. */
function headersOf(req: ExpressRequest): Headers {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || URL_HEADERS.includes(k)) continue;
    headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  }
  return headers;
}

/**
 * Our code for each status tus answers with (anything else is unexpected: INTERNAL), so every 4xx has the usual
 * {code, message} body. tus's own 403s (a missing `Upload-Offset` or `Content-Type`) are bad requests.
 */
const TUS_STATUS_CODES: Record<number, ErrorCode> = {
  400: 'INVALID_REQUEST',
  403: 'INVALID_REQUEST',
  404: 'NOT_FOUND',
  409: 'UPLOAD_OFFSET_MISMATCH',
  410: 'UPLOAD_EXPIRED',
  412: 'TUS_VERSION_UNSUPPORTED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  423: 'UPLOAD_LOCKED',
  501: 'NOT_IMPLEMENTED',
};

/** The errors of the tus protocol itself (`ERRORS.*`, the locker's 423): a status and a text body, answered by tus. */
const isTusError = (err: unknown): boolean =>
  typeof err === 'object' &&
  err !== null &&
  !(err instanceof Error) &&
  typeof (err as { status_code?: unknown }).status_code === 'number';

/**
 * Headers tus would read to build URLs itself (and refuses a request over: `X-Forwarded-Proto: https, http`, as
 * a chain of proxies sends it, would be 400). URLs are built from the pipeline's base URL instead, which applies
 * PUBLIC_URL and TRUST_PROXY as every other route does.
 */
const URL_HEADERS = ['forwarded', 'x-forwarded-host', 'x-forwarded-proto'];

/** The one handler of every tus request (OPTIONS, POST, HEAD, PATCH, DELETE), behind the router's authentication. */
export function tusHandler(deps: { uploads: UploadService }): RequestHandler {
  const { uploads } = deps;
  const store = new UploadDataStore(uploads);
  const tus = new Server({
    path: '/api/uploads',
    datastore: store,
    locker: new UploadLocker(uploads.leases),
    maxSize: uploads.maxUploadBytes,
    exposedHeaders: ['Asset-Id', 'Asset-Created'],
    allowedOrigins: () => false,
    namingFunction: () => crypto.randomUUID(),
    getFileIdFromRequest: (_req, last) => (last && isUuid(last) ? last.toLowerCase() : undefined),
    generateUrl: (_req, o) => `${requestContext.getStore()!.baseUrl}${o.path}/${o.id}`,
    onUploadCreate: async (_req, upload) => {
      store.owners.set(upload, principalOfTus());
      return {};
    },
    onUploadFinish: async (_req, upload) => {
      const principal = principalOfTus();
      const done = await uploads.finish(principal, upload.id, parseUploadMetadata(upload.metadata ?? {}));
      return { headers: { 'Asset-Id': done.assetId, 'Asset-Created': String(done.created) } };
    },
    // Ours (domain errors, failures of the database or the store) go to the app's error middleware instead, through
    // `serve` below: the same {code, message} body and status table as every other route.
    onResponseError: (req, err) => {
      if (isTusError(err)) return undefined;
      failures.set(req, err);
      return { status_code: 500, body: '' };
    },
  });
  const failures = new WeakMap<object, unknown>();

  return handle(async (req, res) => {
    const principal = principalOf(res);
    const { offsetStream, extraHeaders, keptMetadata } = await checkOurs(req, res, uploads);
    const headers = headersOf(req);
    if (offsetStream) headers.set('content-type', OFFSET_STREAM);
    if (keptMetadata === '') headers.delete('upload-metadata');
    else if (keptMetadata !== undefined) headers.set('upload-metadata', keptMetadata);
    const ctx: TusRequestContext = { principal, baseUrl: baseUrlOfRes(res) };
    // tus is given no body (it then hands the data store an empty stream); the data store reads `req` instead.
    if (req.method === 'PATCH' || req.method === 'POST') ctx.body = { req };
    const request = webRequestOf(req, ctx.baseUrl, headers);
    const response = await requestContext.run(ctx, () => tus.handleWeb(request));
    // Gone, or its connection already ended (the parser refused what followed the head, and said so): no answer of
    // this request reaches the client.
    // The request's socket: an answer queued behind an earlier one of the same connection (pipelined) has none yet.
    const clientGone = req.socket.destroyed || !req.socket.writable;
    if (ctx.created && (failures.has(request) || response.status >= 400 || clientGone)) {
      // A creation that failed after the upload was recorded (its data too long for Upload-Length, the disk full), or
      // whose answer cannot reach the client (gone mid-body: tus then ends the body where it is and succeeds): the
      // client has no Location to resume it with, so nothing of it is kept. Best effort: what cannot be removed now
      // (the database away) goes with the expiry sweep.
      await uploads.remove(principal, ctx.created).catch(() => undefined);
    }
    if (failures.has(request)) {
      // The body may be unread (a PATCH that failed early): do not keep this connection for another request.
      if (response.headers.get('connection') === 'close' || !req.complete) closeAfterAnswer(res);
      throw failures.get(request);
    }
    for (const [k, v] of Object.entries(extraHeaders)) response.headers.set(k, v);
    // CORS is the pipeline's (http/cors.ts), for listed origins only: tus's own Access-Control-* headers are left out.
    response.headers.forEach((v, k) => k.startsWith('access-control-') || res.setHeader(k, v));
    if (response.status >= 400) {
      // tus's own text answer: the same status (and headers), our {code, message} body, rendered by the error
      // middleware as on every route. An unexpected one (tus's 500s, e.g. its lock timed out) is logged there as
      // INTERNAL with the request id.
      const code = TUS_STATUS_CODES[response.status];
      const text = (await response.text()).trim() || `tus answered ${response.status}`;
      if (!code) throw new Error(`tus answered ${response.status}: ${text}`);
      throw new DomainError(code, text);
    }
    res.status(response.status).end();
  });
}
