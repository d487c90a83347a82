import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';
import type { Principal } from '../../domain/assets/asset.types';
import { DomainError } from '../../domain/errors';
import type { UploadLease } from '../../domain/uploads/upload-lease';
import { ChunkQueue } from '../shared/body-stream';

/**
 * The body of the PATCH (or POST with data) that tus is handling, read straight from Node's request rather than the
 * web stream tus would make of it (node → web → node: a copy of every chunk and several stream hops, measured at
 * about a fifth of the service's CPU per GiB). `stop` is tus's own signal for the request (the lock's): it aborts
 * when another request asks for the upload, or when the client's request fails; the body then ends where it is.
 */
export interface DirectBody {
  req: IncomingMessage;
  stop?: AbortSignal;
}

/**
 * What the data store and the locker know of the request tus is handling: whose it is (the lease is only taken on
 * the owner's uploads), its body, and the upload's lease while the request holds it. The lease read the upload as it
 * took it, so the data store answers tus's `getUpload` and `write` from it: a PATCH is two statements, one that
 * takes the lease and reads the row, one that records the new offset and lets the lease go.
 */
export interface TusRequestContext {
  principal: Principal;
  /** The base URL the pipeline derived for this request (PUBLIC_URL, or Host and, with TRUST_PROXY, X-Forwarded-*). */
  baseUrl: string;
  body?: DirectBody;
  lease?: UploadLease;
  /** The upload this request created (a POST), to be discarded when the creation is not answered with its Location. */
  created?: string;
  /**
   * The data store's write while it runs, settled either way. tus's `writeToStore` can reject before the write has
   * finished (its stream pipeline fails as soon as the request does), and then lets go of the lock: the lock waits for
   * this first, so that the offset the write records goes out with the lease rather than after it.
   */
  writing?: Promise<void>;
}
export const requestContext = new AsyncLocalStorage<TusRequestContext>();

/** Bytes received and not yet taken by the ingest before the socket is paused (as for multipart uploads). */
const BODY_BUFFER = 2 * 1024 * 1024;

/** The chunks of `body.req` as they arrive, ending early (not failing) once `body.stop` aborts. */
export async function* requestBody(body: DirectBody): AsyncGenerator<Buffer> {
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
