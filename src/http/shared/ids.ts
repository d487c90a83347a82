import { isUuid } from '../../domain/assets/validation';
import { parseHash, type ParsedHash } from '../../domain/content/hashing';
import { DomainError } from '../../domain/errors';

/** An id in a path (REST) or an `id` argument (GraphQL): a UUID, lower-cased; INVALID_ID otherwise. */
export function idParam(value: unknown, name = 'id'): string {
  if (!isUuid(value)) throw new DomainError('INVALID_ID', `${name} must be a UUID`);
  return value.toLowerCase();
}

/**
 * A hash in a path or argument: `blake3:<64 hex>` or `sha256:<64 hex>`; INVALID_HASH otherwise, or INVALID_BODY
 * naming the field when the hash is part of a request body (GraphQL input objects).
 */
export function hashParam(value: unknown, code: 'INVALID_HASH' | 'INVALID_BODY' = 'INVALID_HASH'): ParsedHash {
  const h = parseHash(value);
  if (!h)
    throw new DomainError(
      code,
      'the hash must look like blake3:<64 hex> or sha256:<64 hex>',
      code === 'INVALID_BODY' ? { field: 'hash' } : undefined,
    );
  return h;
}
