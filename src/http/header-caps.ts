import type http from 'node:http';
import { DomainError } from '../domain/errors';

/**
 * Lengths checked before any parser sees the value. Node admits a header (or a URL) up to its 16 KiB head limit, and
 * some parsers on the request's path take time quadratic in a value's length: whatwg-mimetype's trimming of a
 * media type (GraphQL's content negotiation reads Content-Type with it: 250 ms for 15,000 characters) and tus's
 * upload-id expression over the whole URL (`([^/]+)\/?$`: 120 ms for 16,000). At these caps each costs well under
 * a millisecond; no client needs more (a multipart boundary is at most 70 characters, a tus URL is ours).
 */
export const MAX_CONTENT_TYPE_LENGTH = 1024;
export const MAX_UPLOAD_URL_LENGTH = 2048;

/** The refusal of a request whose Content-Type or resumable-upload URL is over its cap, else undefined. */
export function headerCapsRefusal(req: http.IncomingMessage): DomainError | undefined {
  const type = req.headers['content-type'];
  if (type !== undefined && type.length > MAX_CONTENT_TYPE_LENGTH)
    return new DomainError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Content-Type must be at most ${MAX_CONTENT_TYPE_LENGTH} characters`,
    );
  const url = req.url ?? '';
  if (url.length > MAX_UPLOAD_URL_LENGTH && url.startsWith('/api/uploads'))
    return new DomainError(
      'INVALID_QUERY',
      `a resumable upload's URL must be at most ${MAX_UPLOAD_URL_LENGTH} characters`,
    );
  return undefined;
}
