import type http from 'node:http';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Principal } from '../../domain/assets/asset.types';
import type { ApiKeyService } from '../../domain/auth/api-key.service';
import { hasScope, requireScope, type Scope } from '../../domain/auth/scopes';
import { DomainError, isDomainError } from '../../domain/errors';
import type { ReadGrants } from '../../domain/secrets/read-grants';

/** The API key of a request: `X-API-Key`, or `Authorization: Bearer <key>`. */
export function keyFromHeaders(
  apiKey: string | string[] | undefined,
  authorization: string | undefined,
): string | undefined {
  const header = Array.isArray(apiKey) ? apiKey[0] : apiKey;
  if (header) return header.trim();
  const m = authorization ? /^Bearer\s+(\S.*)$/i.exec(authorization) : null;
  return m ? m[1]!.trim() : undefined;
}

export interface RequestAuthOptions {
  /** Requests per key per minute (0: no limit). */
  perKeyPerMinute: number;
  /** Failed authentications per client address per minute. */
  authFailuresPerMinute: number;
  /** The client address is the last X-Forwarded-For entry (the one our proxy added). */
  trustProxy: boolean;
  /** MEDIA_URL_GRANTS: the read grant the media URLs of this request's answers carry (`accessOfRes`). */
  grants?: ReadGrants;
}

/**
 * Authentication of every request (REST routes and GraphQL) with its rate limits, in
 * this process's memory (limits are per instance):
 * - failed authentications are counted per client address; once over AUTH_FAILURES_PER_MINUTE, a key that only the
 *   database could judge (or one known to be invalid) gets 429 before any lookup. Keys known valid (bootstrap keys,
 *   keys seen in the last 2 s) still pass, so valid clients behind the same address are not locked out by a flood.
 * - with RATE_LIMIT_PER_MINUTE, each key gets that many requests per minute.
 * Answers carry the IETF `RateLimit-Policy` / `RateLimit` headers of the limit that applies, and `Retry-After` on 429.
 */
export class RequestAuth {
  private readonly failures: RateLimiterMemory;
  private readonly perKey: RateLimiterMemory | undefined;

  constructor(
    private readonly keys: ApiKeyService,
    private readonly opts: RequestAuthOptions,
  ) {
    this.failures = new RateLimiterMemory({
      keyPrefix: 'auth-failures',
      points: opts.authFailuresPerMinute,
      duration: 60,
    });
    this.perKey =
      opts.perKeyPerMinute > 0
        ? new RateLimiterMemory({ keyPrefix: 'per-key', points: opts.perKeyPerMinute, duration: 60 })
        : undefined;
  }

  /**
   * The principal of the request's key, refused (403 FORBIDDEN, `details.required_scope`) when `scope` is given and the
   * key lacks it: REST routes pass their route's scope (http/shared/route-scopes.ts), GraphQL checks its operation's
   * once parsed (graphql/scope.plugin.ts). Nothing of the body has been read at this point.
   */
  async authenticate(req: http.IncomingMessage, res: http.ServerResponse, scope?: Scope): Promise<Principal> {
    const key = keyFromHeaders(req.headers['x-api-key'], req.headers.authorization);
    const known = this.keys.cached(key);
    const address = known ? '' : clientAddress(req, this.opts.trustProxy);
    if (!known) {
      const seen = await this.failures.get(address);
      if (seen && seen.consumedPoints >= this.opts.authFailuresPerMinute) {
        throw this.limited(res, 'auth-failures', this.opts.authFailuresPerMinute, seen);
      }
    }
    let principal: Principal;
    try {
      principal = known ?? (await this.keys.authenticate(key));
    } catch (err) {
      if (isDomainError(err) && err.code === 'UNAUTHORIZED')
        await this.failures.consume(address).catch(() => undefined);
      throw err;
    }
    if (this.perKey) {
      try {
        const r = await this.perKey.consume(principal.keyId);
        setRateLimitHeaders(res, 'per-key', this.opts.perKeyPerMinute, r);
      } catch (r) {
        if (r instanceof RateLimiterRes) throw this.limited(res, 'per-key', this.opts.perKeyPerMinute, r);
        throw r;
      }
    }
    if (scope) requireScope(principal, scope);
    // Minted where every transport authenticates: the answers' media URLs carry it (base-url.ts, linksOfRes). A read
    // grant is a read: a key without the read scope gets none.
    const locals = (res as { locals?: Record<string, unknown> }).locals;
    if (this.opts.grants && locals && hasScope(principal, 'read'))
      locals.access = this.opts.grants.mint(principal.ownerId).token;
    return principal;
  }

  private limited(res: http.ServerResponse, policy: string, quota: number, r: RateLimiterRes): DomainError {
    setRateLimitHeaders(res, policy, quota, r);
    const retryAfter = Math.max(1, Math.ceil(r.msBeforeNext / 1000));
    return new DomainError(
      'RATE_LIMITED',
      policy === 'per-key'
        ? `more than ${quota} requests per minute with this key`
        : 'too many failed authentications from this address',
      { retry_after: retryAfter },
    );
  }
}

function setRateLimitHeaders(res: http.ServerResponse, policy: string, quota: number, r: RateLimiterRes): void {
  if (res.headersSent) return;
  res.setHeader('RateLimit-Policy', `"${policy}";q=${quota};w=60`);
  res.setHeader(
    'RateLimit',
    `"${policy}";r=${Math.max(0, r.remainingPoints)};t=${Math.max(0, Math.ceil(r.msBeforeNext / 1000))}`,
  );
}

/** The client's address: the socket's peer, or with TRUST_PROXY the last X-Forwarded-For hop (added by our proxy). */
export function clientAddress(req: http.IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    const list = (Array.isArray(xff) ? xff.join(',') : (xff ?? ''))
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (list.length > 0) return list[list.length - 1]!;
  }
  return req.socket.remoteAddress ?? 'unknown';
}
