import { isUuid } from '../../domain/assets/validation';
import { parseHash, type ParsedHash } from '../../domain/content/hashing';
import { DomainError } from '../../domain/errors';

/** An `id` argument: the same check and code as a REST path id. */
export function idArg(value: string, name = 'id'): string {
  if (!isUuid(value)) throw new DomainError('INVALID_ID', `${name} must be a UUID`);
  return value.toLowerCase();
}

/** A hash argument: the same check and code as the REST path hash. */
export function hashArg(value: string, code: 'INVALID_HASH' | 'INVALID_BODY' = 'INVALID_HASH'): ParsedHash {
  const h = parseHash(value);
  if (!h) throw new DomainError(code, 'the hash must look like blake3:<64 hex> or sha256:<64 hex>', code === 'INVALID_BODY' ? { field: 'hash' } : undefined);
  return h;
}

/**
 * An input object in the field spelling of the shared validators (`mimeType` → `mime_type`); fields the client
 * left out stay absent, while an explicit null is kept (updateAsset's `previewId: null` clears the preview).
 */
export function validatorShape(input: object | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input ?? {})) {
    if (v !== undefined) out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v;
  }
  return out;
}
