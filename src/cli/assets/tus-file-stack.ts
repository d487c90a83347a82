import fsp from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { HttpRequest, HttpResponse, HttpStack } from 'tus-js-client';
import { ANSWER_WAIT_MS } from './client';
import { offPage } from './off-page';

/**
 * tus-js-client's file reader and HTTP stack for sending files from Node with large reads into reused buffers.
 *
 * The library's own Node source pipes a 64 KiB `fs.ReadStream` through a progress Transform into the request: per
 * GiB, 16,384 reads, fresh buffers and stream hops on the main thread (2.4–4.2 CPU-seconds per GiB pushed, against
 * 0.45 for `curl -F`; `node bench/profiles/profile-cli.cjs push`). Here a PATCH body is a range of the file that the
 * stack reads in 8 MiB steps into buffers it reuses once the socket has taken them (two in flight), and progress is
 * reported per step. The buffers start off a page boundary (offPage): the kernel's copies from the page cache into them
 * and from them into the socket cost about half the system time then (0.33-0.37 vs 0.57-0.62 CPU-s per GiB read and
 * sent to a local HTTP sink; `node bench/profiles/cli-send.cjs`).
 */

/** Bytes per read of a file being sent. */
const READ = 8 << 20;
/** Reads handed to the socket and not yet written out (one being read while the other is sent). */
const IN_FLIGHT = 2;

const pool: Buffer[] = [];
const takeBuffer = (): Buffer => pool.pop() ?? offPage(READ);
const giveBuffer = (b: Buffer): void => void (pool.length < 4 && pool.push(b));

/** A PATCH body: bytes [start, end) of a file. */
export class FileRange {
  constructor(
    readonly file: string,
    readonly start: number,
    readonly end: number,
  ) {}

  /** What tus-js-client reads a body's length from. */
  get size(): number {
    return this.end - this.start;
  }
}

/** tus-js-client's `fileReader` for an upload whose input is a file's path. */
export const fileRangeReader = {
  async openFile(file: string): Promise<{
    size: number;
    slice(start: number, end: number): Promise<{ value: FileRange; done: boolean }>;
    close(): void;
  }> {
    const { size } = await fsp.stat(file);
    return {
      size,
      slice: (start, end) => {
        const last = Math.min(end, size);
        return Promise.resolve({ value: new FileRange(file, start, last), done: last >= size });
      },
      close: () => undefined,
    };
  },
};

class FileRangeRequest implements HttpRequest {
  private readonly headers: Record<string, string> = {};
  private onProgress: (sent: number) => void = () => undefined;
  private req: http.ClientRequest | undefined;

  constructor(
    private readonly method: string,
    private readonly url: string,
    private readonly idleMs: number,
  ) {}

  getMethod(): string {
    return this.method;
  }
  getURL(): string {
    return this.url;
  }
  setHeader(name: string, value: string): void {
    this.headers[name] = value;
  }
  getHeader(name: string): string | undefined {
    return this.headers[name];
  }
  setProgressHandler(handler: (sent: number) => void): void {
    this.onProgress = handler;
  }
  getUnderlyingObject(): unknown {
    return this.req;
  }

  abort(): Promise<void> {
    this.req?.destroy();
    return Promise.resolve();
  }

  send(body: FileRange | null = null): Promise<HttpResponse> {
    const url = new URL(this.url);
    const headers: Record<string, string | number> = { ...this.headers };
    if (body) headers['Content-Length'] = body.size;
    // A socket idle for idleMs (nothing sent, nothing received: a stalled service) fails the request as a network
    // error, which tus-js-client retries from the service's offset.
    const req = (url.protocol === 'https:' ? https : http).request(url, {
      method: this.method,
      headers,
      timeout: this.idleMs,
    });
    this.req = req;
    return new Promise<HttpResponse>((resolve, reject) => {
      let answered = false;
      req.on('timeout', () => req.destroy(new Error('the service stopped answering')));
      // A body sent (a PATCH): the last one's answer may take minutes without a byte (the copy into place on S3).
      if (body) req.once('finish', () => req.setTimeout(Math.max(this.idleMs, ANSWER_WAIT_MS)));
      req.on('error', reject);
      req.on('response', (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          // An answer before the whole body was sent (a refusal): the connection is not reused.
          if (!req.writableFinished) req.destroy();
          resolve(new NodeResponse(res, Buffer.concat(chunks).toString('utf8')));
        });
      });
      if (!body) return void req.end();
      sendRange(req, body, this.onProgress, () => answered).catch((err: Error) => req.destroy(err));
    });
  }
}

/**
 * Writes the range into the request in READ-sized reads, IN_FLIGHT at a time: a buffer goes back to the pool only
 * once its write has completed (the socket no longer refers to it). Stops when the request ends early (an answer
 * before the whole body, a broken connection).
 */
async function sendRange(
  req: http.ClientRequest,
  range: FileRange,
  onProgress: (sent: number) => void,
  answered: () => boolean,
): Promise<void> {
  const fh = await fsp.open(range.file, 'r');
  let inFlight = 0;
  let wake: (() => void) | undefined;
  const stopped = (): boolean => req.destroyed || answered();
  const onEnd = (): void => wake?.();
  req.on('close', onEnd);
  try {
    let pos = range.start;
    let sent = 0;
    while (pos < range.end) {
      while (inFlight >= IN_FLIGHT && !stopped()) await new Promise<void>((r) => (wake = r));
      if (stopped()) return;
      const buf = takeBuffer();
      const { bytesRead } = await fh.read(buf, 0, Math.min(READ, range.end - pos), pos);
      if (bytesRead === 0)
        throw Object.assign(new Error(`${range.file} ended at ${pos} bytes, before ${range.end}`), {
          code: 'EFILECHANGED',
        });
      if (stopped()) return giveBuffer(buf);
      pos += bytesRead;
      inFlight++;
      req.write(buf.subarray(0, bytesRead), (err) => {
        inFlight--;
        if (!err) {
          giveBuffer(buf);
          sent += bytesRead;
          onProgress(sent);
        }
        wake?.();
      });
    }
    req.end();
  } finally {
    req.off('close', onEnd);
    await fh.close();
  }
}

class NodeResponse implements HttpResponse {
  constructor(
    private readonly res: http.IncomingMessage,
    private readonly body: string,
  ) {}
  getStatus(): number {
    return this.res.statusCode ?? 0;
  }
  getHeader(name: string): string | undefined {
    const v = this.res.headers[name.toLowerCase()];
    return Array.isArray(v) ? v.join(', ') : v;
  }
  getBody(): string {
    return this.body;
  }
  getUnderlyingObject(): unknown {
    return this.res;
  }
}

/**
 * tus-js-client's `httpStack`: node:http requests whose body, if any, is a FileRange; `idleMs` as in FileRangeRequest.
 */
export const fileRangeHttpStack = (idleMs: number): HttpStack => ({
  createRequest: (method, url) => new FileRangeRequest(method, url, idleMs),
  getName: () => 'FileRangeHttpStack',
});
