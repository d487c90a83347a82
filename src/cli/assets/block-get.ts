import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { offPage } from './off-page';

/**
 * A GET whose body is handed on in large blocks, for `assets pull`.
 *
 * Node's HTTP client reads a socket 64 KiB at a time, each read a fresh buffer, parsed and emitted as an event: 1.7–
 * 2.2 CPU-seconds per GiB received on loopback, undici 1.75, `curl -o /dev/null` 0.25 (scratch measurements of this
 * round; `node bench/profiles/profile-cli.cjs pull` measures the whole pull). For `http:` URLs the response is read
 * here from the socket straight into two reused 4 MiB buffers (Node's `onread` option: each read lands after the
 * previous one, as large as the kernel has), 0.44–0.57 CPU-seconds per GiB; only the status line and headers are
 * parsed, and the body must be sized by Content-Length. Anything else (`https:`, a chunked body) goes through
 * node:http, batched into blocks the same way.
 */

const BLOCK = 4 << 20;
/** A block is handed on once less than this is left in it (a read is then at most this large). */
const MIN_READ = 256 << 10;
/** The status line and headers must fit in this much. */
const MAX_HEAD = 64 << 10;

export interface BlockBody {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  /**
   * Calls `write` with each block of the body in order (about 4 MiB; the memory is reused once `write` resolves).
   * Resolves at the end of the body; when the connection breaks, rejects after every block received before the
   * break has been written. A failed `write` stops the body and rejects with its error.
   */
  pipeTo(write: (block: Buffer) => Promise<void>): Promise<void>;
  /** The whole body as text (an error answer). */
  text(): Promise<string>;
  /** Drops the rest of the body and the connection. */
  destroy(): void;
}

/**
 * GET `url` with `headers`; resolves once the status line and headers are in. A connection that brings no byte for
 * `idleMs` (before the head or within the body) is closed, and the request or the body fails.
 */
export function getBlocks(url: URL, headers: Record<string, string>, idleMs = 60_000): Promise<BlockBody> {
  return url.protocol === 'http:' ? rawGet(url, headers, idleMs) : nodeGet(url, headers, idleMs);
}

const stalled = (idleMs: number): Error => new Error(`no byte from the service for ${idleMs / 1000} s`);

async function bodyText(body: BlockBody): Promise<string> {
  const parts: Buffer[] = [];
  await body.pipeTo((b) => {
    parts.push(Buffer.from(b));
    return Promise.resolve();
  });
  return Buffer.concat(parts).toString('utf8');
}

interface Block {
  buf: Buffer;
  start: number;
  end: number;
}

/**
 * The response read from the socket into reused buffers (see above). Three buffers: one being filled by the socket,
 * the others handed on; the socket pauses when the one it switched to is the last free one, and resumes when a block
 * has been written (the buffer a paused socket will read into is never one that was handed on).
 */
function rawGet(url: URL, headers: Record<string, string>, idleMs: number): Promise<BlockBody> {
  return new Promise<BlockBody>((resolveHead, rejectHead) => {
    // Off the page boundary: each block is written into the page cache at a page-aligned offset (see offPage).
    const free: Buffer[] = [offPage(BLOCK), offPage(BLOCK)];
    let cur: Buffer = offPage(BLOCK);
    let start = 0; // where the body bytes of `cur` begin
    let filled = 0;
    let head: { status: number; headers: Record<string, string> } | undefined;
    let remaining = 0;
    let finished = false;
    let paused = false;
    let failure: Error | undefined;
    const ready: Block[] = [];
    let notify: (() => void) | undefined;
    const poke = (): void => {
      const n = notify;
      notify = undefined;
      n?.();
    };

    /** Hands the body bytes of `cur` on; false when the socket is to pause (no buffer left for the next switch). */
    const handOn = (): boolean => {
      if (filled > start) ready.push({ buf: cur, start, end: filled });
      else free.push(cur);
      poke();
      if (finished) return false;
      cur = free.pop()!;
      start = filled = 0;
      paused = free.length === 0;
      return !paused;
    };
    const end = (err?: Error): void => {
      if (finished) return;
      finished = true;
      failure = err;
      if (head) handOn();
      socket.destroy();
      if (!head) rejectHead(err ?? new Error('the connection closed before the response head'));
      poke();
    };

    const socket = net.connect({
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port || 80),
      onread: {
        buffer: () => cur.subarray(filled),
        callback: (n: number): boolean => {
          if (finished) return false;
          const from = filled;
          filled += n;
          if (!head) {
            const i = cur.subarray(0, filled).indexOf('\r\n\r\n', Math.max(0, from - 3));
            if (i < 0) {
              if (filled > MAX_HEAD) end(new Error('the response head is too large'));
              return !finished;
            }
            head = parseHead(cur.toString('latin1', 0, i));
            if (!head) return (end(new Error('not an HTTP/1.1 response')), false);
            start = i + 4;
            const length = head.status === 204 || head.status === 304 ? '0' : head.headers['content-length'];
            if (head.headers['transfer-encoding'] || length === undefined || !/^\d+$/.test(length)) {
              // Not a body this reader can size: node:http reads it (a second request).
              finished = true;
              socket.destroy();
              nodeGet(url, headers, idleMs).then(resolveHead, rejectHead);
              return false;
            }
            remaining = Number(length);
            resolveHead(body);
          }
          const bodyFrom = Math.max(start, from);
          if (filled - bodyFrom >= remaining) {
            filled = bodyFrom + remaining;
            remaining = 0;
            end();
            return false;
          }
          remaining -= filled - bodyFrom;
          return BLOCK - filled < MIN_READ ? handOn() : true;
        },
      },
    });
    socket.resume(); // flowing, so that an early end of the connection is seen ('end', 'close')
    // Idle time of the socket: also while it is paused because the disk is slower (then the kernel's buffer fills and
    // the server waits on us); only a stall of the server ends it, as a paused socket is resumed well within it.
    // A listener of its own (the callback of setTimeout is called once): every idle period reaches it.
    socket.on('timeout', () => {
      if (!paused) end(stalled(idleMs));
      else socket.setTimeout(idleMs); // re-armed: the writer is slow, not the server
    });
    socket.setTimeout(idleMs);
    socket.on('connect', () => {
      const lines = [`GET ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`, 'Connection: close'];
      for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
      socket.write(lines.join('\r\n') + '\r\n\r\n');
    });
    const broken = (): void =>
      end(new Error(`the connection closed with ${remaining} bytes of the body still to come`));
    socket.on('end', broken);
    socket.on('close', broken);
    socket.on('error', (err: NodeJS.ErrnoException) => end(new Error(err.code ?? err.message)));

    const body: BlockBody = {
      get status() {
        return head!.status;
      },
      get headers() {
        return head!.headers;
      },
      async pipeTo(write) {
        for (;;) {
          const block = ready.shift();
          if (!block) {
            if (finished) {
              if (failure) throw failure;
              return;
            }
            await new Promise<void>((r) => (notify = r));
            continue;
          }
          try {
            await write(block.buf.subarray(block.start, block.end));
          } catch (err) {
            end(err as Error);
            throw err;
          }
          free.push(block.buf);
          if (paused && !finished) {
            paused = false;
            socket.resume();
          }
        }
      },
      text: () => bodyText(body),
      destroy: () => end(new Error('destroyed')),
    };
  });
}

/** `HTTP/1.1 206 Partial Content` and its headers (names lower-cased; repeated ones joined). */
function parseHead(text: string): { status: number; headers: Record<string, string> } | undefined {
  const lines = text.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!);
  if (!m) return undefined;
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const k = line.slice(0, i).trim().toLowerCase();
    const v = line.slice(i + 1).trim();
    headers[k] = k in headers ? `${headers[k]}, ${v}` : v;
  }
  return { status: Number(m[1]), headers };
}

/** The same through node:http(s): its 64 KiB chunks gathered into blocks. */
function nodeGet(url: URL, headers: Record<string, string>, idleMs: number): Promise<BlockBody> {
  return new Promise<BlockBody>((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).get(url, { headers, timeout: idleMs }, (res) => {
      const h: Record<string, string> = {};
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h[k] = Array.isArray(v) ? v.join(', ') : v;
      const body: BlockBody = {
        status: res.statusCode ?? 0,
        headers: h,
        async pipeTo(write) {
          let parts: Buffer[] = [];
          let n = 0;
          try {
            for await (const c of res as AsyncIterable<Buffer>) {
              parts.push(c);
              n += c.length;
              if (n >= BLOCK) {
                const block = Buffer.concat(parts, n);
                parts = [];
                n = 0;
                await write(block);
              }
            }
          } catch (err) {
            if (n) await write(Buffer.concat(parts, n));
            throw err;
          }
          if (n) await write(Buffer.concat(parts, n));
        },
        text: () => bodyText(body),
        destroy: () => res.destroy(),
      };
      resolve(body);
    });
    req.on('timeout', () => req.destroy(stalled(idleMs)));
    req.on('error', reject);
  });
}
