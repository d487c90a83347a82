import type { AssetCreateInput, AssetUpdateInput } from '../../domain/assets/asset.types';
import { DomainError } from '../../domain/errors';

/*
 * REST's wire spelling of asset fields (snake_case JSON, multipart text fields, tus Upload-Metadata) mapped to the
 * domain's inputs; the domain validates them (domain/assets/validation.ts), for GraphQL alike.
 */

/** The creation fields of a JSON body (from-hash, URL upload). */
export const createInputOfBody = (b: Record<string, unknown>): AssetCreateInput => ({
  id: b.id,
  name: b.name,
  mimeType: b.mime_type,
  tags: b.tags,
  userMetadata: b.user_metadata,
  previewId: b.preview_id,
  promptId: b.prompt_id,
  paths: b.paths,
});

/** PUT /api/assets/{id}: a field left out of the body stays unchanged. */
export function updateInputOfBody(b: Record<string, unknown>): AssetUpdateInput {
  const { id: _id, promptId: _promptId, paths: _paths, ...fields } = createInputOfBody(b);
  return fields;
}

/**
 * The creation fields of text values (multipart fields, tus Upload-Metadata): `text(name)` is the value, trimmed,
 * undefined when absent or empty; `tags` and `user_metadata` are parsed by the caller's rules.
 */
export const createInputOfText = (
  text: (name: string) => string | undefined,
  parsed: { tags: unknown; userMetadata: unknown; paths?: string[] },
): AssetCreateInput => ({
  id: text('id'),
  name: text('name'),
  mimeType: text('mime_type'),
  previewId: text('preview_id'),
  promptId: text('prompt_id'),
  tags: parsed.tags,
  userMetadata: parsed.userMetadata,
  ...(parsed.paths?.length ? { paths: parsed.paths } : {}),
});

/** `tags` as a JSON array text, comma-separated text, or repeated fields. */
export function parseTagsField(values: string[] | undefined): unknown {
  if (!values || values.length === 0) return undefined;
  const out: unknown[] = [];
  for (const v of values) {
    const t = v.trim();
    if (t.startsWith('[')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(t);
      } catch {
        throw new DomainError('INVALID_BODY', 'tags is not a valid JSON array', { field: 'tags' });
      }
      if (!Array.isArray(parsed))
        throw new DomainError('INVALID_BODY', 'tags must be a list of strings', { field: 'tags' });
      out.push(...parsed);
    } else {
      out.push(...t.split(','));
    }
  }
  return out;
}

/** A JSON object field sent as text (the last value); undefined when absent or empty. */
export function parseJsonField(values: string[] | undefined, field: string): unknown {
  const v = values?.[values.length - 1];
  if (v === undefined || v.trim() === '') return undefined;
  try {
    return JSON.parse(v);
  } catch {
    throw new DomainError('INVALID_BODY', `${field} is not valid JSON`, { field });
  }
}
