import net from 'node:net';

/** An HTTP/1.1 answer as read off the socket. */
export interface RawAnswer {
  status: number;
  /** Lower-case names; a repeated header has several values. */
  headers: Record<string, string[]>;
  body: Buffer;
  /** What came after this answer on the connection (answers to further requests). */
  rest: Buffer;
}

/**
 * One request written byte for byte on a fresh connection (`Connection: close`), so a test can send what fetch and
 * node:http refuse to: repeated headers, control characters and raw UTF-8 in values, a body longer or shorter than
 * what the headers announce. `headers` are sent as given, in order (`Host` and `Connection: close` are added, and
 * `Content-Length` of the body unless one is given). Rejects (a hang) when no complete answer comes in `timeoutMs`.
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  headers: [string, string][],
  body: Buffer = Buffer.alloc(0),
  opts: {
    timeoutMs?: number;
    /** no `Connection: close` (the server then closes when it is done with what it got) */ keepAlive?: boolean;
  } = {},
): Promise<RawAnswer> {
  const url = new URL(baseUrl);
  const lines = [
    `${method} ${path} HTTP/1.1`,
    `Host: ${url.host}`,
    ...(opts.keepAlive ? [] : ['Connection: close']),
    ...headers.map(([k, v]) => `${k}: ${v}`),
  ];
  if (
    !headers.some(([k]) => k.toLowerCase() === 'content-length' || k.toLowerCase() === 'transfer-encoding') &&
    (body.length > 0 || method !== 'GET')
  ) {
    lines.push(`Content-Length: ${body.length}`);
  }
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'utf8');
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${opts.timeoutMs ?? 15_000} ms (a hang): ${method} ${path}`));
    }, opts.timeoutMs ?? 15_000);
    socket.on('data', (d: Buffer) => chunks.push(d));
    // The server may answer and close before the whole body is written (EPIPE, ECONNRESET): what it answered counts.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      try {
        resolve(parseAnswer(Buffer.concat(chunks), method === 'HEAD'));
      } catch (err) {
        reject(err);
      }
    });
    socket.write(Buffer.concat([head, body]), () => undefined);
  });
}

function parseAnswer(all: Buffer, head: boolean): RawAnswer {
  const end = all.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`an incomplete answer: ${JSON.stringify(all.toString('latin1').slice(0, 300))}`);
  const [statusLine, ...headerLines] = all.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1]);
  if (!status) throw new Error(`not an HTTP answer: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string[]> = {};
  for (const line of headerLines) {
    const at = line.indexOf(':');
    const name = line.slice(0, at).trim().toLowerCase();
    (headers[name] ??= []).push(line.slice(at + 1).trim());
  }
  let body: Buffer = all.subarray(end + 4);
  let rest: Buffer = Buffer.alloc(0);
  if (head || status === 204 || status === 304) [body, rest] = [Buffer.alloc(0), body];
  else if (headers['transfer-encoding']?.some((v) => /chunked/i.test(v))) body = dechunk(body);
  else if (headers['content-length'])
    [body, rest] = [
      body.subarray(0, Number(headers['content-length'][0])),
      body.subarray(Number(headers['content-length'][0])),
    ];
  return { status, headers, body, rest };
}

function dechunk(buf: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) throw new Error('a truncated chunked body');
    const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
    if (!(size >= 0)) throw new Error('a malformed chunk size');
    if (size === 0) return Buffer.concat(out);
    out.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}
