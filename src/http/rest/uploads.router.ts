import { AsyncLocalStorage } from 'node:async_hooks';
import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { DataStore, Metadata, MemoryLocker, Server, Upload, type Lock, type Locker } from '@tus/server';
import { Router, type ErrorRequestHandler, type Request as ExpressRequest, type RequestHandler } from 'express';
import { NodeRequest } from 'srvx/node';
import type { Principal } from '../../domain/assets/asset.types';
import { isUuid, sanitizeFileName, validateCreateFields, validateHashField } from '../../domain/assets/validation';
import { DomainError, type ErrorCode } from '../../domain/errors';
import { assertJsonInput } from '../../domain/input';
import {
  UploadLeaseLostError,
  UploadLockedError,
  type UploadLease,
  type UploadLeases,
} from '../../domain/uploads/upload-lease';
import type { UploadFields, UploadService } from '../../domain/uploads/upload.service';
import { createInputOfText, parseJsonField, parseTagsField } from './asset-input';
import { authenticate, handle, principalOf } from './middleware';
import { baseUrlOfRes } from '../base-url';
import { closeAfterAnswer } from '../shared/errors';
import { keyFromHeaders, type RequestAuth } from '../shared/request-auth';
import { ChunkQueue } from './multipart';

/** Upload-Metadata keys (POST /api/assets' multipart fields); others (tus-js-client's filetype) are kept, unused. */
export function parseUploadMetadata(meta: Record<string, string | null | undefined>): UploadFields {
  // Every value is stored with the upload (jsonb): no NUL or lone surrogate (a 400, not a database error).
  assertJsonInput(meta, 'Upload-Metadata');
  const text = (k: string): string | undefined => {
    const v = meta[k];
    return v === undefined || v === null || v.trim() === '' ? undefined : v.trim();
  };
  const fields = validateCreateFields(
    createInputOfText(text, {
      tags: tagsOf(text('tags')),
      userMetadata: parseJsonField(
        text('user_metadata') === undefined ? undefined : [text('user_metadata')!],
        'user_metadata',
      ),
    }),
  );
  const hashText = text('hash');
  const hash: UploadFields['hash'] = hashText === undefined ? undefined : validateHashField(hashText);
  const fileName = text('filename') === undefined ? undefined : sanitizeFileName(text('filename')!);
  return { fields, fileName, hash };
}

/**
 * Upload-Metadata as tus reads it (comma-separated pairs of an ASCII key and an optional base64 value, each key once;
 * anything else is a 400), except for keys that name a property every JavaScript object has (`__proto__`,
 * `constructor`, `hasOwnProperty`...): tus's parser refuses those (it looks keys up with `in`), but they are no field
 * of ours, and unknown keys are ignored, as tusd ignores them. They are left out of `kept`, the header tus is then
 * given, so they are neither stored nor echoed by HEAD.
 */
export function readMetadataHeader(header: string): { meta: Record<string, string | null>; kept: string } {
  const meta: Record<string, string | null> = {};
  const seen = new Set<string>();
  const kept: string[] = [];
  for (const pair of header.split(',')) {
    const tokens = pair.split(' ');
    const [key, value] = tokens as [string, string | undefined];
    const valid =
      Metadata.validateKey(key) && (tokens.length === 1 || (tokens.length === 2 && Metadata.validateValue(value!)));
    if (!valid || seen.has(key)) throw new DomainError('INVALID_BODY', 'Upload-Metadata is not valid tus metadata');
    seen.add(key);
    if (key in Object.prototype) continue;
    meta[key] = value ? Buffer.from(value, 'base64').toString('utf8') : null;
    kept.push(pair);
  }
  return { meta, kept: kept.join(',') };
}

/** In Upload-Metadata `tags` is JSON array text (a header value has no repeated fields, as a multipart form has). */
function tagsOf(value: string | undefined): unknown {
  if (value === undefined) return undefined;
  if (!value.startsWith('['))
    throw new DomainError('INVALID_BODY', 'tags must be a JSON array of strings', { field: 'tags' });
  return parseTagsField([value]);
}

type TusRequest = { runtime?: { node?: { req: ExpressRequest } } };
const principalFromTus = (req: unknown): Principal => principalOf((req as TusRequest).runtime!.node!.req.res!);

/**
 * The body of the PATCH (or POST with data) that tus is handling, read straight from Node's request rather than the
 * web stream tus would make of it (node → web → node: a copy of every chunk and several stream hops, measured at
 * about a fifth of the service's CPU per GiB). `stop` is tus's own signal for the request (the lock's): it aborts
 * when another request asks for the upload, or when the client's request fails; the body then ends where it is.
 */
interface DirectBody {
  req: IncomingMessage;
  stop?: AbortSignal;
}

/**
 * What the data store and the locker know of the request tus is handling: whose it is (the lease is only taken on
 * the owner's uploads), its body, and the upload's lease while the request holds it. The lease read the upload as it
 * took it, so the data store answers tus's `getUpload` and `write` from it: a PATCH is two statements, one that
 * takes the lease and reads the row, one that records the new offset and lets the lease go.
 */
interface TusRequestContext {
  principal: Principal;
  /** The base URL the pipeline derived for this request (PUBLIC_URL, or Host and, with TRUST_PROXY, X-Forwarded-*). */
  baseUrl: string;
  body?: DirectBody;
  lease?: UploadLease;
  /** The upload this request created (a POST), to be discarded when the creation is not answered with its Location. */
  created?: string;
}
const requestContext = new AsyncLocalStorage<TusRequestContext>();

/** Bytes received and not yet taken by the ingest before the socket is paused (as for multipart uploads). */
const BODY_BUFFER = 2 * 1024 * 1024;

/** The chunks of `body.req` as they arrive, ending early (not failing) once `body.stop` aborts. */
async function* requestBody(body: DirectBody): AsyncGenerator<Buffer> {
  const { req, stop } = body;
  if (stop?.aborted) return;
  const queue = new ChunkQueue(
    BODY_BUFFER,
    () => req.pause(),
    () => req.resume(),
  );
  const onData = (chunk: Buffer) => queue.push(chunk);
  const onEnd = () => queue.end();
  const onClose = () => {
    if (!req.complete) queue.destroy(new DomainError('INVALID_BODY', 'the client aborted the upload'));
  };
  const onError = (err: Error) => queue.destroy(new DomainError('INVALID_BODY', `the upload failed: ${err.message}`));
  const onStop = () => {
    req.off('data', onData);
    req.pause();
    queue.end();
  };
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('close', onClose);
  req.on('error', onError);
  stop?.addEventListener('abort', onStop, { once: true });
  try {
    yield* queue;
  } finally {
    stop?.removeEventListener('abort', onStop);
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('close', onClose);
    req.off('error', onError);
    if (!req.complete) req.pause();
  }
}

/** The tus data store: the protocol's storage calls, answered by UploadService (PostgreSQL + the blob store). */
class UploadDataStore extends DataStore {
  /** The owner of an upload being created, set by onUploadCreate (it sees the request; `create` does not). */
  readonly owners = new WeakMap<Upload, Principal>();

  constructor(private readonly uploads: UploadService) {
    super();
    this.extensions = ['creation', 'creation-with-upload', 'termination', 'expiration'];
  }

  override async create(upload: Upload): Promise<Upload> {
    const principal = this.owners.get(upload);
    if (!principal) throw new Error('upload created without an owner');
    const rec = await this.uploads.create(principal, upload.id, upload.size!, upload.metadata ?? {});
    const ctx = requestContext.getStore();
    if (ctx) ctx.created = upload.id;
    upload.creation_date = rec.createdAt.toISOString();
    return upload;
  }

  override async getUpload(id: string): Promise<Upload> {
    const ctx = requestContext.getStore();
    const held = ctx?.lease?.record.id === id ? ctx.lease.record : undefined;
    const rec = held ?? (await this.uploads.find(ctx?.principal, id));
    if (!rec) throw new DomainError('NOT_FOUND', `upload ${id} not found`);
    // No metadata: no Upload-Metadata header on HEAD (tus would answer an empty one, which is not valid tus metadata).
    const metadata = Object.keys(rec.metadata).length > 0 ? rec.metadata : undefined;
    return new Upload({
      id,
      size: rec.length,
      offset: rec.offset,
      metadata,
      creation_date: rec.createdAt.toISOString(),
    });
  }

  override async write(stream: Readable, id: string, offset: number): Promise<number> {
    // `stream` is empty when the router kept the body for us (see DirectBody).
    const ctx = requestContext.getStore();
    return this.uploads.append(id, offset, ctx?.body ? requestBody(ctx.body) : stream, ctx?.lease);
  }

  override async remove(id: string): Promise<void> {
    await this.uploads.remove(undefined, id);
  }

  override getExpiration(): number {
    return this.uploads.expiryMs;
  }

  override async deleteExpired(): Promise<number> {
    return this.uploads.sweepExpired();
  }
}

/**
 * tus's lock on an upload: its in-process MemoryLocker (which asks a local holder to wrap up), then the upload's lease
 * in PostgreSQL, so two instances never write the same upload at once. Busy for too long: 423 (tus clients retry).
 */
class UploadLocker implements Locker {
  private readonly local = new MemoryLocker({ acquireLockTimeout: 90_000 });

  constructor(private readonly leases: UploadLeases) {}

  newLock(id: string): Lock {
    const local = this.local.newLock(id);
    const leases = this.leases;
    const ctx = requestContext.getStore();
    let lease: UploadLease | undefined;
    return {
      async lock(signal, requestRelease) {
        // tus's signal for this request: it aborts once the lock is to be let go (or the client failed).
        if (ctx?.body) ctx.body.stop = signal;
        await local.lock(signal, requestRelease);
        try {
          lease = await leases.acquire(id, {
            ownerId: ctx?.principal.ownerId,
            signal,
            onReleaseRequested: () => void requestRelease(),
          });
        } catch (err) {
          await local.unlock();
          throw err instanceof UploadLockedError ? BUSY : err;
        }
        if (ctx) ctx.lease = lease;
      },
      async unlock() {
        try {
          await lease?.release();
        } catch (err) {
          // The lease lapsed and another request took the upload: this one's offset was not recorded.
          throw err instanceof UploadLeaseLostError ? BUSY : err;
        } finally {
          if (ctx && ctx.lease === lease) ctx.lease = undefined;
          await local.unlock();
        }
      },
    };
  }
}

const BUSY = { status_code: 423, body: 'The upload is busy with another request; retry\n' };

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

/** The errors of the tus protocol itself (`ERRORS.*`, the 423 above): a status and a text body, answered by tus. */
const isTusError = (err: unknown): boolean =>
  typeof err === 'object' &&
  err !== null &&
  !(err instanceof Error) &&
  typeof (err as { status_code?: unknown }).status_code === 'number';

/** The tus media type of PATCH bodies (and of creation-with-upload bodies). */
const OFFSET_STREAM = 'application/offset+octet-stream';

/**
 * Headers tus would read to build URLs itself (and refuses a request over: `X-Forwarded-Proto: https, http`, as
 * a chain of proxies sends it, would be 400). URLs are built from the pipeline's base URL instead, which applies
 * PUBLIC_URL and TRUST_PROXY as every other route does.
 */
const URL_HEADERS = ['forwarded', 'x-forwarded-host', 'x-forwarded-proto'];

/**
 * Resumable uploads: tus 1.0 (creation, creation-with-upload, termination, expiration) by
 * @tus/server at /api/uploads, behind the API key. What is ours is checked here first, and every error that is ours
 * (raised here, in the data store or at completion) is answered by the app's error middleware with the usual
 * {code, message} JSON: another owner's upload is 404, metadata is validated and Upload-Length limited at creation,
 * Upload-Defer-Length is refused. Protocol errors (wrong offset, a Tus-Resumable other than 1.0.0) keep tus's status
 * with the same JSON body (`TUS_STATUS_CODES`). `capabilities` answers `OPTIONS` (tus's capabilities: Tus-Version,
 * Tus-Extension, Tus-Max-Size) without a key, as tus servers do (it reads nothing stored; a key that is sent is
 * checked all the same); `keyed` is every other request, mounted behind authentication.
 *
 * Cross-origin: none, as on every route of the service (its browser client is its own page): tus's
 * `Access-Control-Allow-Origin: *` is not sent.
 */
export function uploadsRouters(deps: { uploads: UploadService; auth: RequestAuth }): {
  version: RequestHandler;
  capabilities: RequestHandler[];
  keyed: Router;
} {
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
    onUploadCreate: async (req, upload) => {
      store.owners.set(upload, principalFromTus(req));
      return {};
    },
    onUploadFinish: async (req, upload) => {
      const principal = principalFromTus(req);
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

  const serve = handle(async (req, res) => {
    const principal = principalOf(res);
    const id = req.params.id as string | undefined;
    let extraHeaders: Record<string, string> = {};
    // A creation's Upload-Metadata without the pairs that are ignored (see readMetadataHeader).
    let keptMetadata: string | undefined;
    if (req.method !== 'OPTIONS') {
      // Every answer but OPTIONS' names the protocol version, errors of ours included (tus 1.0, "Tus-Resumable").
      res.set('Tus-Resumable', '1.0.0');
      if (req.get('tus-resumable') !== '1.0.0') {
        throw new DomainError(
          'TUS_VERSION_UNSUPPORTED',
          'send Tus-Resumable: 1.0.0 (the tus version this server speaks)',
        );
      }
    }
    // The media type as RFC 9110 has it (case-insensitive, parameters aside); tus itself takes only the exact text.
    const offsetStream = req.is(OFFSET_STREAM) === OFFSET_STREAM;
    if (req.method === 'PATCH' && !offsetStream) {
      throw new DomainError('UNSUPPORTED_MEDIA_TYPE', `a PATCH takes Content-Type: ${OFFSET_STREAM}`);
    }
    if (req.method === 'OPTIONS') {
      // Capabilities only.
    } else if (id !== undefined && req.method === 'PATCH') {
      // Whose upload it is, is checked by the statement that takes its lease (another owner's is NOT_FOUND there).
      if (!isUuid(id)) throw new DomainError('NOT_FOUND', `upload ${id} not found`);
    } else if (id !== undefined) {
      const rec = isUuid(id) ? await uploads.find(principal, id.toLowerCase()) : undefined;
      if (!rec) throw new DomainError('NOT_FOUND', `upload ${id} not found`);
      if (req.method === 'HEAD' && rec.offset === rec.length) {
        // The last PATCH's answer may have been lost (or the instance died before the asset was made): finish now.
        const done = await uploads.finish(principal, rec.id, parseUploadMetadata(rec.metadata));
        extraHeaders = { 'Asset-Id': done.assetId, 'Asset-Created': String(done.created) };
      } else if (req.method === 'HEAD') {
        // As the creation and every PATCH answer it (tus expiration: when the unfinished upload goes).
        extraHeaders = { 'Upload-Expires': rec.expiresAt.toUTCString() };
      }
    } else if (req.method === 'POST') {
      const deferred = req.get('upload-defer-length');
      if (deferred !== undefined) {
        // As tusd and @tus/server answer a client that asks for an extension they do not offer (a malformed
        // request stays a 400): tus-js-client's `uploadLengthDeferred`.
        if (deferred !== '1' || req.get('upload-length') !== undefined) {
          throw new DomainError('INVALID_REQUEST', 'send either Upload-Length or Upload-Defer-Length: 1');
        }
        throw new DomainError(
          'NOT_IMPLEMENTED',
          'creation-defer-length is not offered: send Upload-Length (the size must be known at creation)',
        );
      }
      const length = Number(req.get('upload-length'));
      if (Number.isSafeInteger(length) && length > uploads.maxUploadBytes) {
        throw new DomainError(
          'PAYLOAD_TOO_LARGE',
          `the content is larger than the limit of ${uploads.maxUploadBytes} bytes`,
          {
            max_bytes: uploads.maxUploadBytes,
          },
        );
      }
      const header = req.get('upload-metadata');
      // An empty header is no metadata, as tusd reads it (tus's own parser refuses it).
      const read =
        header === undefined ? undefined : header.trim() === '' ? { meta: {}, kept: '' } : readMetadataHeader(header);
      parseUploadMetadata(read?.meta ?? {});
      keptMetadata = read?.kept;
    }
    // tus sees the whole path (srvx reads `req.url` when tus asks); the app's logs see it as Express left it.
    const mountedUrl = req.url;
    req.url = req.originalUrl;
    const request = new NodeRequest({ req, res }) as unknown as Request;
    for (const h of URL_HEADERS) request.headers.delete(h);
    if (offsetStream) request.headers.set('content-type', OFFSET_STREAM);
    if (keptMetadata === '') request.headers.delete('upload-metadata');
    else if (keptMetadata !== undefined) request.headers.set('upload-metadata', keptMetadata);
    const ctx: TusRequestContext = { principal, baseUrl: baseUrlOfRes(res) };
    if (req.method === 'PATCH' || req.method === 'POST') {
      // tus is given no body (it then hands the data store an empty stream); the data store reads `req` instead.
      Object.defineProperty(request, 'body', { value: null });
      ctx.body = { req };
    }
    let response: Response;
    try {
      response = await requestContext.run(ctx, () => tus.handleWeb(request));
    } finally {
      req.url = mountedUrl;
    }
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

  const r = Router();
  r.post('/uploads', serve);
  // tus-js-client's `overridePatchMethod` (for proxies that drop PATCH or DELETE): a POST naming the method it stands
  // for in X-HTTP-Method-Override goes on as that method to its route below; any other POST to an upload is a 405.
  const overridden = new WeakSet<ExpressRequest>();
  r.post('/uploads/:id', (req, _res, next) => {
    const method = req.get('x-http-method-override')?.trim().toUpperCase();
    if (method === 'PATCH' || method === 'DELETE' || method === 'HEAD') {
      overridden.add(req);
      req.method = method;
      next();
      return;
    }
    const allow = ['DELETE', 'HEAD', 'OPTIONS', 'PATCH', 'POST'];
    next(
      new DomainError(
        'METHOD_NOT_ALLOWED',
        `a POST to an upload takes X-HTTP-Method-Override: PATCH, DELETE or HEAD; use ${allow.join(', ')}`,
        { allow },
      ),
    );
  });
  r.head('/uploads/:id', serve);
  r.patch('/uploads/:id', serve);
  r.delete('/uploads/:id', serve);
  // An error is answered to the request as sent: a POST standing for a HEAD gets its {code, message} body (as a HEAD,
  // Express would announce the body's length and send none, and the next answer on the connection would be read as it).
  // (Mounted without a path, which would read as a route of its own; it sees only the errors of this router's routes.)
  r.use(((err, req, _res, next) => {
    if (overridden.has(req)) req.method = 'POST';
    next(err);
  }) as ErrorRequestHandler);
  // Discovery needs no key, but a key that is sent is checked: a client (the CLI's push) learns that its key is wrong
  // before it sends or hashes anything.
  const keyed = authenticate(deps.auth);
  const keyIfSent: RequestHandler = (req, res, next) => {
    if (keyFromHeaders(req.headers['x-api-key'], req.headers.authorization) === undefined) next();
    else keyed(req, res, next);
  };
  // tus 1.0: every answer names the protocol version, the service's own (401, 429, 404, 405 ...) included. Mounted
  // without a path (a path-mounted middleware would read as a route of its own): `url` is relative to /api here.
  const version: RequestHandler = (req, res, next) => {
    if (req.url.startsWith('/uploads')) res.setHeader('Tus-Resumable', '1.0.0');
    next();
  };
  return { version, capabilities: [keyIfSent, serve], keyed: r };
}
