import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transform } from 'node:stream';

export interface ProxiedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  status?: number;
  /** Request body bytes that went through to the service. */
  bytesIn: number;
  /** Response body bytes that went through to the client. */
  bytesOut: number;
}

/** Cuts every connection once this many body bytes of a matching request went through (one way). */
export interface CutRule {
  direction: 'in' | 'out';
  afterBytes: number;
  match: (method: string, path: string) => boolean;
}

/**
 * A small HTTP proxy in front of a service: it records every request (method, path, body bytes each way) so a test
 * can count uploads, and it can "cut the network" — drop every connection and refuse new ones until restored —
 * when a transfer has passed a given number of bytes. `throttleIn` slows request bodies (bytes per second).
 */
export class CountingProxy {
  url = '';
  readonly requests: ProxiedRequest[] = [];
  cut = false;
  cutRule?: CutRule;
  /** Once this many body bytes of a matching request went through (one way), nothing more does: the connection
   * stays open and silent (a store that stops sending half-way). */
  stallRule?: CutRule;
  throttleIn?: number;
  /** Requests answered 404 by the proxy itself, as an instance without that route would (e.g. no /api/uploads). */
  notFound?: (method: string, path: string) => boolean;
  /**
   * Requests the proxy refuses itself with this status and an HTML page of its own (e.g. a gateway's 403 for OPTIONS).
   */
  refuse?: (method: string, path: string) => number | undefined;
  /** Called with each request before it is passed on (e.g. to change a file while a push is between two requests). */
  onRequest?: (method: string, path: string) => void;
  private readonly server = http.createServer((req, res) => this.handle(req, res));
  private readonly upstreams = new Set<http.ClientRequest>();

  constructor(private readonly target: string) {}

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Drops all connections (both sides) and refuses new requests until `restore()`. */
  cutNow(): void {
    this.cut = true;
    this.cutRule = undefined;
    for (const u of this.upstreams) u.destroy();
    this.server.closeAllConnections();
  }

  restore(): void {
    this.cut = false;
  }

  /** Requests matching method and a path test, since `from` (an index into `requests`). */
  count(method: string, path: RegExp, from = 0): number {
    return this.requests.slice(from).filter((r) => r.method === method && path.test(r.path)).length;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private meter(rec: ProxiedRequest, direction: 'in' | 'out'): Transform {
    const rule =
      this.cutRule?.direction === direction && this.cutRule.match(rec.method, rec.path) ? this.cutRule : undefined;
    const throttle = direction === 'in' ? this.throttleIn : undefined;
    const stall =
      this.stallRule?.direction === direction && this.stallRule.match(rec.method, rec.path)
        ? this.stallRule
        : undefined;
    let fired = false;
    const t: Transform = new Transform({
      transform: (chunk: Buffer, _enc, cb) => {
        if (stall) {
          const at = direction === 'in' ? rec.bytesIn : rec.bytesOut;
          if (at + chunk.length > stall.afterBytes) {
            const pass = chunk.subarray(0, Math.max(0, stall.afterBytes - at));
            if (direction === 'in') rec.bytesIn += pass.length;
            else rec.bytesOut += pass.length;
            if (pass.length > 0) t.push(pass);
            return; // no callback: nothing more flows, and the connection stays open
          }
        }
        // After the cut point nothing more goes through, not even chunks that arrive before the connections are
        // dropped (a client sending in large writes delivers several in one turn): the other side sees a clean cut.
        if (this.cut || fired) return cb();
        const before = direction === 'in' ? rec.bytesIn : rec.bytesOut;
        const pass = rule ? chunk.subarray(0, Math.max(0, Math.min(chunk.length, rule.afterBytes - before))) : chunk;
        if (direction === 'in') rec.bytesIn += pass.length;
        else rec.bytesOut += pass.length;
        if (rule && before + chunk.length >= rule.afterBytes) {
          fired = true;
          cb(null, pass);
          setImmediate(() => this.cutNow());
          return;
        }
        if (throttle) setTimeout(() => cb(null, chunk), (chunk.length / throttle) * 1000);
        else cb(null, chunk);
      },
    });
    return t;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (this.cut) return void req.socket.destroy();
    const rec: ProxiedRequest = { method: req.method!, path: req.url!, headers: req.headers, bytesIn: 0, bytesOut: 0 };
    this.requests.push(rec);
    this.onRequest?.(rec.method, rec.path);
    if (this.notFound?.(rec.method, rec.path)) {
      rec.status = 404;
      req.resume();
      return void res
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"code":"NOT_FOUND","message":"no such route"}');
    }
    const refused = this.refuse?.(rec.method, rec.path);
    if (refused !== undefined) {
      rec.status = refused;
      req.resume();
      return void res
        .writeHead(refused, { 'content-type': 'text/html' })
        .end('<html><body>Request refused by the gateway</body></html>');
    }
    const up = http.request(this.target + req.url, { method: req.method, headers: req.headers });
    this.upstreams.add(up);
    up.on('close', () => this.upstreams.delete(up));
    up.on('error', () => res.destroy());
    up.on('response', (ures) => {
      rec.status = ures.statusCode;
      res.writeHead(ures.statusCode!, ures.headers);
      ures.pipe(this.meter(rec, 'out')).pipe(res);
      ures.on('error', () => res.destroy());
    });
    req.on('error', () => up.destroy());
    req.pipe(this.meter(rec, 'in')).pipe(up);
  }
}
