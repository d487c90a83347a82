import type http from 'node:http';
import cors from 'cors';

/** What a page on another origin may send: the key headers, JSON, conditional and range reads, and tus's headers. */
export const CORS_REQUEST_HEADERS = [
  'X-API-Key',
  'Authorization',
  'Content-Type',
  'Accept',
  'Range',
  'If-None-Match',
  'If-Range',
  'Idempotency-Key',
  'X-Request-Id',
  // Apollo's CSRF prevention asks multipart (upload) operations for one of these.
  'Apollo-Require-Preflight',
  'X-Apollo-Operation-Name',
  'Tus-Resumable',
  'Upload-Length',
  'Upload-Offset',
  'Upload-Metadata',
  'Upload-Defer-Length',
  'Upload-Concat',
  'Upload-Checksum',
  'X-HTTP-Method-Override',
  'X-Requested-With',
];

/** The answer headers a browser client reads (contract 3.8); the rest stay hidden from scripts of other origins. */
export const CORS_EXPOSED_HEADERS = [
  'ETag',
  'Location',
  'Content-Range',
  'Content-Disposition',
  'Content-Length',
  'Upload-Offset',
  'Upload-Length',
  'Upload-Expires',
  'Upload-Metadata',
  'Tus-Resumable',
  'Tus-Version',
  'Tus-Extension',
  'Tus-Max-Size',
  'Asset-Id',
  'Asset-Created',
  'Retry-After',
  'RateLimit',
  'RateLimit-Policy',
  'X-Request-Id',
];

/** How long a browser may keep a preflight's answer (Chromium keeps at most 2 hours). */
export const CORS_MAX_AGE_SECONDS = 7200;

/**
 * CORS for pages on the origins of CORS_ORIGINS (`*`: any), on the routes a browser client calls: `/api/*` (tus's
 * `/api/uploads` included) and `/graphql`. A step of the pipeline's first layer, before the route table and any
 * authentication: a preflight (OPTIONS with `Origin` and `Access-Control-Request-Method`) is answered here, 204
 * without a key, so it never reaches authentication or the 405 of OPTIONS; the `cors` library writes the headers.
 * An origin not listed gets no CORS header and its request goes on as any other (CORS is the browser's rule, not an
 * access control: the key still is). No credentials: the key travels in a header, never in a cookie.
 * Returns undefined when no origin is allowed (the default), so the pipeline has no step at all.
 */
export function corsStep(
  origins: '*' | readonly string[],
): ((req: http.IncomingMessage, res: http.ServerResponse) => boolean) | undefined {
  if (origins !== '*' && origins.length === 0) return undefined;
  const any = origins === '*';
  const allowed = new Set(any ? [] : origins);
  const options: cors.CorsOptions = {
    origin: any ? '*' : [...allowed],
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: CORS_REQUEST_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    credentials: false,
    maxAge: CORS_MAX_AGE_SECONDS,
    optionsSuccessStatus: 204,
  };
  const preflight = cors(options);
  // An OPTIONS without Access-Control-Request-Method is a request of its own (tus's discovery): headers, then on.
  const plain = cors({ ...options, preflightContinue: true });
  type Middleware = (req: http.IncomingMessage, res: http.ServerResponse, next: () => void) => void;
  return (req, res) => {
    const url = req.url ?? '';
    if (!(url.startsWith('/api/') || url === '/graphql' || url.startsWith('/graphql?'))) return false;
    const origin = req.headers.origin;
    // With a list, answers differ by Origin: a cache must not give one origin's answer to another (or to an <img>).
    if (!any) res.setHeader('Vary', 'Origin');
    if (origin === undefined || (!any && !allowed.has(origin))) return false;
    const isPreflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
    let passed = false;
    // With static options the library decides synchronously.
    (isPreflight ? preflight : (plain as Middleware))(req, res, () => {
      passed = true;
    });
    return !passed;
  };
}
