import type http from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Links } from '../domain/assets/asset.types';

/**
 * The absolute base (`scheme://host[:port][/prefix]`) of URLs in responses (`PUBLIC_URL`): the configured
 * one, else the request's own: `Host`, and `X-Forwarded-Proto` / `X-Forwarded-Host` only behind a trusted proxy.
 * Shared by the REST routers and GraphQL so every transport writes the same URLs.
 */
export function baseUrlOf(
  req: http.IncomingMessage,
  cfg: { publicUrl: string | undefined; trustProxy: boolean },
): string {
  if (cfg.publicUrl) return cfg.publicUrl;
  let proto = (req.socket as TLSSocket).encrypted ? 'https' : 'http';
  let host = first(req.headers.host);
  if (cfg.trustProxy) {
    const fp = first(req.headers['x-forwarded-proto'])?.toLowerCase();
    if (fp === 'http' || fp === 'https') proto = fp;
    host = first(req.headers['x-forwarded-host']) ?? host;
  }
  // A host header is a name and an optional port; anything else (or none, HTTP/1.0) falls back to the socket.
  if (!host || !/^[A-Za-z0-9.\-[\]:]+$/.test(host))
    host = `${req.socket.localAddress ?? '127.0.0.1'}:${req.socket.localPort ?? ''}`;
  return `${proto}://${host}`;
}

/**
 * The first of a header's comma-separated values, trimmed; undefined when empty (every request's first steps run this).
 */
function first(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  if (s === undefined) return undefined;
  const comma = s.indexOf(',');
  return (comma < 0 ? s : s.slice(0, comma)).trim() || undefined;
}

/** The base URL the app's middleware put on this response (see app.ts). */
export const baseUrlOfRes = (res: { locals: Record<string, unknown> }): string => String(res.locals.baseUrl ?? '');

/** The base URL and the read grant (minted by RequestAuth, with MEDIA_URL_GRANTS) of this response's asset URLs. */
export const linksOfRes = (res: { locals: Record<string, unknown> }): Links => ({
  base: baseUrlOfRes(res),
  access: res.locals.access as string | undefined,
});
