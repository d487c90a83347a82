import type http from 'node:http';
import type { Socket } from 'node:net';
import { bodyUnread, errorResponse } from './shared/errors';
import { DomainError } from '../domain/errors';
import { READ_SIZE } from '../infra/blob-store/file-body';

/**
 * Time limits around the request listener that no route can express on its own:
 * - a request body that sends no byte for `bodyIdleTimeoutMs` is cut: 408 REQUEST_TIMEOUT with `Connection: close`
 *   when no answer has started, else the socket is destroyed. The handler reading the body then sees it aborted and
 *   removes what it wrote (temporary blobs).
 * - a request body that arrives slower than `minRate.bytesPerSecond` on average over a window of `minRate.windowMs`
 *   (mod_reqtimeout's MinRate) is cut the same way: a client sending a byte every few seconds is never idle, yet
 *   holds a socket, a temporary blob and an upload slot for as long as it likes. A window in which the body waits
 *   unread in the request's buffer (the service is behind, not the client) is not judged.
 * - an answer the client reads no byte of for `sendIdleTimeoutMs` while the service has more to send (the socket's
 *   buffers full) is cut: the socket is destroyed, so the file or store stream behind it is released. nginx's
 *   `send_timeout` (60 s) does the same; a paused video resumes with a `Range` request.
 * - on shutdown, requests still running when the grace period ends are answered 503 SERVICE_UNAVAILABLE with
 *   `Connection: close` (or cut, if their answer had started) instead of being reset without an answer.
 * - an answer that closes its connection while the body is still arriving is a lingering close (`closeAfterAnswer`,
 *   then `endAnswer`): the answer goes out at once, the rest of the body is read and dropped for a bounded time and
 *   size, then the connection closes, so a client still sending reads the answer instead of a reset.
 *
 * Progress is read from the socket's byte counter by one shared timer, so a request costs a Set insertion, not a
 * timer of its own, and the body stream is never touched (no extra 'data' listener, no flowing-mode change).
 */
/** The slowest reader a large answer written in one piece is granted time for: 16 KB/s (bytes per ms). */
const SLOWEST_READER_BYTES_PER_MS = 16;

interface Tracked {
  res: http.ServerResponse;
  /** Bytes read from the socket at the last progress, and when. */
  bytes: number;
  since: number;
  /** Bytes read from the socket when the current rate window began, and when. */
  windowBytes: number;
  windowSince: number;
  sent: number;
  sentSince: number;
}

export interface BodyMinRate {
  bytesPerSecond: number;
  windowMs: number;
}

export class RequestGuard {
  private readonly inFlight = new Map<http.IncomingMessage, Tracked>();
  /** Each connection's latest request (its entry in inFlight while it is answered). */
  private readonly latest = new WeakMap<object, http.IncomingMessage>();
  private timer: NodeJS.Timeout | undefined;

  /** How often the shared timer looks (a quarter of the shorter limit, 50 ms to 1 s); 0: never (no limits). */
  private readonly tickMs: number;

  constructor(
    private readonly bodyIdleTimeoutMs: number,
    private readonly sendIdleTimeoutMs = 0,
    private readonly minRate: BodyMinRate = { bytesPerSecond: 0, windowMs: 0 },
  ) {
    const limit = Math.min(
      bodyIdleTimeoutMs > 0 ? bodyIdleTimeoutMs : Infinity,
      sendIdleTimeoutMs > 0 ? sendIdleTimeoutMs : Infinity,
      minRate.bytesPerSecond > 0 ? minRate.windowMs : Infinity,
    );
    this.tickMs = limit === Infinity ? 0 : Math.max(50, Math.min(1_000, limit / 4));
  }

  /** The pipeline's step (createApp): every request is tracked from its start until its response is over. */
  readonly step = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    this.track(req, res);
  };

  private track(req: http.IncomingMessage, res: http.ServerResponse): void {
    const now = Date.now();
    const bytes = req.socket.bytesRead;
    this.inFlight.set(req, {
      res,
      bytes,
      since: now,
      windowBytes: bytes,
      windowSince: now,
      sent: req.socket.bytesWritten,
      sentSince: now,
    });
    this.latest.set(req.socket, req);
    // A response closes once: `on` spares the wrapper `once` makes per request.
    res.on('close', () => this.inFlight.delete(req));
    if (this.tickMs > 0 && !this.timer) {
      this.timer = setInterval(() => this.checkStalls(), this.tickMs);
      this.timer.unref();
    }
  }

  private checkStalls(): void {
    const now = Date.now();
    for (const [req, t] of this.inFlight) {
      if (req.socket.destroyed) continue;
      if (req.complete || (this.bodyIdleTimeoutMs === 0 && this.minRate.bytesPerSecond === 0)) {
        this.checkSending(req, t, now);
        continue;
      }
      const bytes = req.socket.bytesRead;
      if (bytes !== t.bytes) {
        t.bytes = bytes;
        t.since = now;
      } else if (this.bodyIdleTimeoutMs > 0 && now - t.since >= this.bodyIdleTimeoutMs) {
        this.inFlight.delete(req);
        answerAndClose(
          t.res,
          new DomainError(
            'REQUEST_TIMEOUT',
            `the request body sent no byte for ${Math.round(this.bodyIdleTimeoutMs / 1000)} s`,
          ),
        );
        continue;
      }
      this.checkRate(req, t, bytes, now);
    }
    if (this.inFlight.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private checkRate(req: http.IncomingMessage, t: Tracked, bytes: number, now: number): void {
    const { bytesPerSecond, windowMs } = this.minRate;
    if (bytesPerSecond === 0) return;
    if (req.readableLength > 0) {
      t.windowBytes = bytes;
      t.windowSince = now;
      return;
    }
    const elapsed = now - t.windowSince;
    if (elapsed < windowMs) return;
    const rate = ((bytes - t.windowBytes) * 1000) / elapsed;
    if (rate < bytesPerSecond) {
      this.inFlight.delete(req);
      const message = `the request body arrived at ${Math.floor(rate)} bytes/s over ${Math.round(elapsed / 1000)} s, under the minimum of ${bytesPerSecond}`;
      answerAndClose(t.res, new DomainError('REQUEST_TIMEOUT', message));
      return;
    }
    t.windowBytes = bytes;
    t.windowSince = now;
  }

  /**
   * The answer's side: cut a client that takes no byte while bytes wait for it (not one waiting for the service).
   * Node shows progress only per write the kernel has taken whole (`bytesWritten` moves when the next write is handed
   * over), not per byte: content goes out in writes of READ_SIZE, but an answer written in one piece (a large JSON
   * page) is one write, so the part of what waits beyond READ_SIZE gets extra time at SLOWEST_READER_BYTES_PER_MS.
   */
  private checkSending(req: http.IncomingMessage, t: Tracked, now: number): void {
    if (this.sendIdleTimeoutMs === 0) return;
    const socket = req.socket;
    const sent = socket.bytesWritten;
    const waiting = socket.writableLength;
    if (sent !== t.sent || (waiting === 0 && !t.res.writableNeedDrain)) {
      t.sent = sent;
      t.sentSince = now;
    } else if (
      now - t.sentSince >=
      this.sendIdleTimeoutMs + Math.max(0, waiting - READ_SIZE) / SLOWEST_READER_BYTES_PER_MS
    ) {
      this.inFlight.delete(req);
      socket.destroy();
    }
  }

  /** The connection's latest request while it is being answered (http/client-error.ts orders its refusals after it). */
  answering(socket: object): { req: http.IncomingMessage; res: http.ServerResponse } | undefined {
    const req = this.latest.get(socket);
    const t = req && this.inFlight.get(req);
    return t ? { req: req!, res: t.res } : undefined;
  }

  /** Shutdown: every request still running gets 503 (or is cut when its answer has started). */
  abortAll(): void {
    for (const [req, t] of this.inFlight) {
      this.inFlight.delete(req);
      answerAndClose(
        t.res,
        new DomainError('SERVICE_UNAVAILABLE', 'the service is shutting down; retry later', { retry_after: 5 }),
      );
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
    res.writeHead(r.status, {
      ...r.headers,
      Connection: 'close',
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(text),
    });
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

/** How long and how much of a request body is still read after an answer that closes the connection. */
const LINGER = { ms: 5_000, bytes: 64 * 1024 * 1024 };

/** Answers that close their connection while the request body is still arriving (closeAfterAnswer). */
const lingerPending = new WeakSet<http.ServerResponse>();

/**
 * The answer (not sent yet) closes the connection: `Connection: close`, and a lingering close (endAnswer) when the
 * request body is still arriving. For every transport (REST errors, GraphQL's refusals, tus).
 */
export function closeAfterAnswer(res: http.ServerResponse): void {
  if (res.headersSent) return;
  res.setHeader('Connection', 'close');
  if (bodyUnread(res.req)) lingerPending.add(res);
}

/**
 * Sends `body` as the whole answer and ends the response. An answer that closes its connection while the request
 * body is still arriving gets a lingering close, as web servers do: the answer is written at once (with its length),
 * the rest of the body is read and dropped until the client ends it, for at most LINGER.ms and LINGER.bytes, and
 * only then is the response ended, which closes the connection. Ended at once, Node would destroy the socket as soon
 * as the answer is written: the client, still sending, would get a reset instead of the answer (a reset discards
 * what its kernel had not yet handed to it).
 */
export function endAnswer(res: http.ServerResponse, body: string | Buffer = ''): void {
  const req = res.req;
  if (res.headersSent) {
    res.end(body);
    return;
  }
  res.setHeader('Content-Length', Buffer.byteLength(body));
  if (!lingerPending.has(res) || req.complete || req.socket.destroyed) {
    res.end(body);
    return;
  }
  lingerPending.delete(res);
  if (body.length > 0 && req.method !== 'HEAD') res.write(body);
  else res.flushHeaders();
  const socket = req.socket;
  let over = false;
  const linger: Linger = {
    socket,
    deadline: Date.now() + LINGER.ms,
    limit: socket.bytesRead + LINGER.bytes,
    done: () => {
      if (over) return;
      over = true;
      lingers.delete(linger);
      res.end();
    },
  };
  watchLinger(linger);
  req.once('end', linger.done);
  req.once('error', linger.done);
  res.once('close', linger.done);
  // Read and drop: counted on the socket's byte counter by the linger timer.
  req.resume();
}

/**
 * The lingering answers now, each with its deadline and the byte count (the socket's `bytesRead`) past which it is
 * ended. One timer checks them all, and runs only while one lingers.
 */
interface Linger {
  socket: Socket;
  deadline: number;
  limit: number;
  done: () => void;
}
const lingers = new Set<Linger>();
let lingerTimer: NodeJS.Timeout | undefined;

function watchLinger(linger: Linger): void {
  lingers.add(linger);
  if (lingerTimer) return;
  lingerTimer = setInterval(() => {
    const now = Date.now();
    for (const l of lingers) if (now >= l.deadline || l.socket.bytesRead > l.limit) l.done();
    if (lingers.size > 0) return;
    clearInterval(lingerTimer);
    lingerTimer = undefined;
  }, 10);
  lingerTimer.unref();
}
