import dns from 'node:dns';
import net from 'node:net';
import type { Readable } from 'node:stream';
import { Agent, request } from 'undici';

/** Why an outbound request could not produce a response. */
export class FetchError extends Error {
  constructor(
    readonly kind: 'blocked' | 'network' | 'redirects' | 'aborted',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'FetchError';
  }
}

class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to ${address}, a loopback, private, link-local or metadata address`);
    this.name = 'BlockedAddressError';
  }
}

export interface Hop {
  url: URL;
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

export interface FetchResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable & AsyncIterable<Buffer>;
  /** The URL that answered (after redirects). */
  url: URL;
  /** Every redirect answer on the way, in order. */
  redirects: Hop[];
}

export interface FetchOptions {
  method?: 'GET' | 'HEAD';
  headers?: Record<string, string>;
  /** Sent only to hops on exactly this origin (the provider): a token never follows a cross-host redirect. */
  auth?: { origin: string; headers: Record<string, string> };
  /** false: answer the first response, redirect or not. */
  follow?: boolean;
  signal?: AbortSignal;
}

const MAX_REDIRECTS = 10;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Loopback, private, link-local, metadata, CGNAT, multicast and reserved ranges (IPv4 and IPv6). */
function blockList(): net.BlockList {
  const b = new net.BlockList();
  for (const [a, p] of [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ] as const)
    b.addSubnet(a, p, 'ipv4');
  for (const [a, p] of [
    ['::', 128],
    ['::1', 128],
    ['fc00::', 7],
    ['fe80::', 10],
    ['ff00::', 8],
  ] as const)
    b.addSubnet(a, p, 'ipv6');
  return b;
}
const BLOCKED = blockList();

export function isBlockedAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family !== 6) return true;
  const lower = address.toLowerCase();
  // IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) carry an IPv4 address that decides.
  const mapped = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (mapped) return BLOCKED.check(mapped[1]!, 'ipv4');
  const hexMapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hexMapped) {
    const n = (parseInt(hexMapped[1]!, 16) << 16) | parseInt(hexMapped[2]!, 16);
    return BLOCKED.check([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.'), 'ipv4');
  }
  return BLOCKED.check(address, 'ipv6');
}

/** A DNS lookup that refuses blocked addresses: checked where the socket connects, so DNS rebinding cannot slip by. */
const guardedLookup: net.LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const list = addresses as dns.LookupAddress[];
    const bad = list.find((a) => isBlockedAddress(a.address));
    if (bad) return callback(new BlockedAddressError(hostname, bad.address), '', 0);
    if ((options as dns.LookupOptions).all)
      (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
    else callback(null, list[0]!.address, list[0]!.family);
  });
};

export interface HttpFetcherOptions {
  blockPrivateNetworks: boolean;
  /** Origins that are trusted wherever they point (the configured provider endpoints). */
  trustedOrigins: string[];
  headersTimeoutMs?: number;
  /** A body that stalls this long is a network error (and the download is retried). */
  bodyTimeoutMs?: number;
}

/**
 * Outbound HTTP for downloads: redirects followed here (at most 10) so that every hop is checked against the
 * private-network block list and the token goes to the provider's own origin only.
 */
export class HttpFetcher {
  private readonly plain: Agent;
  private readonly guarded: Agent;

  /** `opts` is what an ingest worker builds its own fetcher from (a download's body is read there). */
  constructor(readonly opts: HttpFetcherOptions) {
    const common = { keepAliveTimeout: 10_000, connections: 64 };
    this.plain = new Agent(common);
    this.guarded = new Agent({ ...common, connect: { lookup: guardedLookup } });
  }

  async open(start: URL, o: FetchOptions = {}): Promise<FetchResponse> {
    let url = start;
    let method = o.method ?? 'GET';
    const redirects: Hop[] = [];
    for (;;) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new FetchError('network', `cannot fetch ${url.protocol} URLs`);
      const dispatcher = this.dispatcherFor(url);
      const headers: Record<string, string> = { 'user-agent': 'asset-service', ...o.headers };
      if (o.auth && url.origin === o.auth.origin) Object.assign(headers, o.auth.headers);
      let res;
      try {
        res = await request(url, {
          method,
          headers,
          dispatcher,
          signal: o.signal,
          headersTimeout: this.opts.headersTimeoutMs ?? 30_000,
          bodyTimeout: this.opts.bodyTimeoutMs ?? 60_000,
          highWaterMark: 1 << 20,
        });
      } catch (err) {
        throw translate(err, url, o.signal);
      }
      const location = res.headers.location;
      if (o.follow === false || !REDIRECTS.has(res.statusCode) || typeof location !== 'string') {
        return {
          status: res.statusCode,
          headers: res.headers,
          body: res.body as FetchResponse['body'],
          url,
          redirects,
        };
      }
      res.body.resume();
      res.body.on('error', () => undefined);
      redirects.push({ url, status: res.statusCode, headers: res.headers });
      if (redirects.length > MAX_REDIRECTS)
        throw new FetchError('redirects', `more than ${MAX_REDIRECTS} redirects from ${start.origin}`);
      try {
        url = new URL(location, url);
      } catch {
        throw new FetchError('network', `a redirect from ${url.origin} has an invalid Location`);
      }
      if (res.statusCode === 303) method = 'GET';
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.plain.close(), this.guarded.close()]);
  }

  private dispatcherFor(url: URL): Agent {
    if (!this.opts.blockPrivateNetworks || this.opts.trustedOrigins.includes(url.origin)) return this.plain;
    const host = url.hostname.replace(/^\[|\]$/g, '');
    // The lookup hook never runs for an IP literal, so those are checked here.
    if (net.isIP(host) && isBlockedAddress(host)) {
      throw new FetchError(
        'blocked',
        `refused to connect to ${url.host}: a loopback, private, link-local or metadata address (DOWNLOAD_BLOCK_PRIVATE_NETWORKS)`,
      );
    }
    return this.guarded;
  }
}

function translate(err: unknown, url: URL, signal?: AbortSignal): FetchError {
  if (signal?.aborted) return new FetchError('aborted', 'the request was aborted', { cause: err });
  for (let e: unknown = err, i = 0; e && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    if (e instanceof BlockedAddressError) {
      return new FetchError(
        'blocked',
        `refused to connect to ${url.host}: ${e.message} (DOWNLOAD_BLOCK_PRIVATE_NETWORKS)`,
        { cause: err },
      );
    }
  }
  const code = (err as { code?: string }).code;
  return new FetchError('network', `${url.host}: ${(err as Error).message ?? String(err)}${code ? ` (${code})` : ''}`, {
    cause: err,
  });
}

export const headerText = (h: string | string[] | undefined): string | undefined => (Array.isArray(h) ? h[0] : h);

/**
 * A response body's chunks one at a time, as the parser pushed them (with undici, each is one socket read in an
 * ArrayBuffer of its own). Iterating the stream itself (`for await (const c of body)`) calls `read()`, which joins
 * every chunk buffered while the consumer was busy into one new buffer: the reads become garbage that only V8's full
 * mark-compacts free, since they count as external memory while the young generation barely fills
 * (`npm run bench -- download`). In flowing mode the stream hands out each chunk as it is;
 * it is paused while `highWater` bytes wait here. The stream's error, or its end without `end`, fails the iteration.
 */
export async function* bodyChunks(body: Readable, highWater = 1 << 20): AsyncGenerator<Buffer> {
  const queue: Buffer[] = [];
  let head = 0;
  let queued = 0;
  let ended = false;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const onData = (chunk: Buffer) => {
    queue.push(chunk);
    queued += chunk.length;
    if (queued >= highWater) body.pause();
    notify();
  };
  const onEnd = () => {
    ended = true;
    notify();
  };
  const onError = (err: Error) => {
    failure ??= err;
    notify();
  };
  const onClose = () => {
    if (!ended) failure ??= Object.assign(new Error('premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
    notify();
  };
  body.on('data', onData);
  body.on('end', onEnd);
  body.on('error', onError);
  body.on('close', onClose);
  try {
    for (;;) {
      while (head < queue.length) {
        const chunk = queue[head]!;
        queue[head++] = undefined as unknown as Buffer;
        queued -= chunk.length;
        if (queued < highWater / 2 && body.isPaused() && !failure) body.resume();
        yield chunk;
      }
      queue.length = head = 0;
      if (failure) throw failure;
      if (ended) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    body.off('data', onData);
    body.off('end', onEnd);
    body.off('close', onClose);
    // A late 'error' (the caller destroys a body it stops reading) stays handled.
    body.off('error', onError);
    body.on('error', () => undefined);
  }
}

/** Drops a response body we will not read (without an unhandled 'error' from the aborted stream). */
export function dropBody(body: Readable): void {
  body.on('error', () => undefined);
  body.destroy();
}
