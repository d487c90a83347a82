import type http from 'node:http';
import { errorResponse } from './shared/errors';
import { DomainError } from '../domain/errors';

/**
 * Time limits around the request listener that no route can express on its own:
 * - a request body that sends no byte for `bodyIdleTimeoutMs` is cut: 408 REQUEST_TIMEOUT with `Connection: close`
 *   when no answer has started, else the socket is destroyed. The handler reading the body then sees it aborted and
 *   removes what it wrote (temporary blobs).
 * - on shutdown, requests still running when the grace period ends are answered 503 SERVICE_UNAVAILABLE with
 *   `Connection: close` (or cut, if their answer had started) instead of being reset without an answer.
 *
 * Progress is read from the socket's byte counter by one shared timer, so a request costs a Set insertion, not a
 * timer of its own, and the body stream is never touched (no extra 'data' listener, no flowing-mode change).
 */
export class RequestGuard {
  private readonly inFlight = new Map<http.IncomingMessage, { res: http.ServerResponse; bytes: number; since: number }>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly bodyIdleTimeoutMs: number) {}

  /** The pipeline's step (createApp): every request is tracked from its start until its response is over. */
  readonly step = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    this.track(req, res);
  };

  private track(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.inFlight.set(req, { res, bytes: req.socket.bytesRead, since: Date.now() });
    // A response closes once: `on` spares the wrapper `once` makes per request.
    res.on('close', () => this.inFlight.delete(req));
    if (this.bodyIdleTimeoutMs > 0 && !this.timer) {
      this.timer = setInterval(() => this.checkStalls(), Math.max(50, Math.min(1_000, this.bodyIdleTimeoutMs / 4)));
      this.timer.unref();
    }
  }

  private checkStalls(): void {
    const now = Date.now();
    for (const [req, t] of this.inFlight) {
      if (req.complete || req.socket.destroyed) continue;
      const bytes = req.socket.bytesRead;
      if (bytes !== t.bytes) {
        t.bytes = bytes;
        t.since = now;
      } else if (now - t.since >= this.bodyIdleTimeoutMs) {
        this.inFlight.delete(req);
        answerAndClose(t.res, new DomainError('REQUEST_TIMEOUT', `the request body sent no byte for ${Math.round(this.bodyIdleTimeoutMs / 1000)} s`));
      }
    }
    if (this.inFlight.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Shutdown: every request still running gets 503 (or is cut when its answer has started). */
  abortAll(): void {
    for (const [req, t] of this.inFlight) {
      this.inFlight.delete(req);
      answerAndClose(t.res, new DomainError('SERVICE_UNAVAILABLE', 'the service is shutting down; retry later', { retry_after: 5 }));
    }
  }

  get size(): number {
    return this.inFlight.size;
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

function answerAndClose(res: http.ServerResponse, err: DomainError): void {
  const socket = res.req.socket;
  if (res.headersSent || res.writableEnded) {
    socket.destroy();
    return;
  }
  const r = errorResponse(err);
  const text = JSON.stringify(r.body);
  try {
    res.writeHead(r.status, { ...r.headers, Connection: 'close', 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
    // Node forgets a request once its answer is finished: destroy it ourselves, so the handler still reading the
    // body sees it aborted and removes what it wrote.
    res.end(text, () => res.req.destroy());
  } catch {
    socket.destroy();
    return;
  }
  // A client that does not read the answer must not hold the socket either.
  setTimeout(() => socket.destroy(), 2_000).unref();
}
