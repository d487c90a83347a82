import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../domain/errors';
import { STATUS_OF } from './shared/errors';

const PARSER_REFUSALS: Record<'tooLarge' | 'timeout' | 'notHttp', [ErrorCode, string]> = {
  tooLarge: ['HEADERS_TOO_LARGE', 'the request line and headers are larger than 16 KiB'],
  timeout: ['REQUEST_TIMEOUT', 'the request line and headers did not arrive in time'],
  notHttp: ['INVALID_REQUEST', 'the request is not valid HTTP/1.1 (e.g. a control character in a header)'],
};

/** The codes of the parser's refusals: any request, whatever its route, can be answered one of them. */
export const PARSER_CODES: readonly ErrorCode[] = Object.values(PARSER_REFUSALS).map(([code]) => code);

/**
 * Node's HTTP parser refuses some requests before any route sees them (a head over 16 KiB, a head that does not
 * arrive in time, bytes that are not HTTP/1.1 such as NUL in a header value). Its own answer has no body; this one
 * is the same status with the `{code, message}` body every other refusal has, and closes the connection.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [code, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? PARSER_REFUSALS.tooLarge
      : err.code === 'HPE_HEADERS_TIMEOUT' || err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? PARSER_REFUSALS.timeout
        : PARSER_REFUSALS.notHttp;
  const status = STATUS_OF[code];
  const body = JSON.stringify({ code, message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 2_000).unref();
}

/**
 * Answers the parser's refusals on `server` (answerClientError), in order: when the bytes that are not HTTP follow a
 * request of the same connection whose body was read whole and which is still being answered (pipelined, or a body
 * longer than its Content-Length), that request's answer goes first and the refusal after it. Answered at once, the
 * refusal would reach the client as the answer to its request, while the request itself went on: an upload created,
 * say, whose Location the client never learns. Bytes that break the body of the request being read (a malformed
 * chunk) are that request's fault: refused at once, as before.
 */
export function answerClientErrors(
  server: Server,
  requests: { answering(socket: Duplex): { req: IncomingMessage; res: ServerResponse } | undefined },
): void {
  // The parser, once it has refused, refuses every later chunk of the connection again (and its head timer may
  // fire too): one answer per connection, and its close stays the lingering one of answerClientError.
  const refused = new WeakSet<Duplex>();
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (refused.has(socket)) return;
    refused.add(socket);
    // The connection's latest request still being answered, as the pipeline's request guard tracks it (the server
    // keeps one request listener: the app).
    const current = requests.answering(socket);
    const after =
      current && current.req.complete && !current.res.writableFinished && err.code !== 'ECONNRESET' && socket.writable;
    if (after) current.res.once('close', () => answerClientError(err, socket));
    else answerClientError(err, socket);
  });
}
