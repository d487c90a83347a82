import type { Response } from 'express';

/**
 * The headers of a page the service serves itself (the asset browser, the GraphQL IDE): its own Content-Security-
 * Policy, no sniffing, no referrer, revalidated on every load; the body is HTML.
 */
export function htmlPage(res: Response, csp: string): Response {
  return res
    .set('Content-Security-Policy', csp)
    .set('X-Content-Type-Options', 'nosniff')
    .set('Referrer-Policy', 'no-referrer')
    .set('Cache-Control', 'no-cache')
    .type('html');
}
