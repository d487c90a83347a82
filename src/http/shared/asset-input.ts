import type { AssetCreateInput, AssetUpdateInput } from '../../domain/assets/asset.types';
import { DomainError } from '../../domain/errors';

/*
 * REST's wire spelling of asset fields (snake_case JSON, multipart text fields, tus Upload-Metadata) mapped to the
 * domain's inputs, once the route has checked them against their schema (http/schema); the domain applies the rules
 * that hold once a value is normalised (domain/assets/validation.ts), for GraphQL alike.
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

/** A multipart form's or Upload-Metadata's text fields, as http/schema/forms.ts checks them. */
export type UploadForm = Partial<Record<string, string | string[]>>;

/** Repeated fields keep every value; the others are their last value. */
const REPEATED = new Set(['tags', 'path']);

/**
 * A multipart upload's text fields as the form schema (AssetUploadForm) reads them: the last value of each, trimmed,
 * an empty one absent; `tags` and `path` keep every value as sent.
 */
export function uploadFormOf(fields: ReadonlyMap<string, string[]>): UploadForm {
  const form: UploadForm = {};
  for (const [name, values] of fields) {
    if (REPEATED.has(name)) form[name] = values;
    else {
      const v = values.at(-1)?.trim();
      if (v) form[name] = v;
    }
  }
  return form;
}

/** Upload-Metadata's values as the form schema (UploadMetadata) reads them: trimmed, an empty one or no value absent. */
export function uploadMetadataOf(meta: Record<string, string | null | undefined>): UploadForm {
  const form: UploadForm = {};
  for (const [name, value] of Object.entries(meta)) {
    const v = value?.trim();
    if (v) form[name] = v;
  }
  return form;
}

/** A checked form's single value (the last, for a field sent more than once). */
export const textOf = (v: string | string[] | undefined): string | undefined => (typeof v === 'string' ? v : v?.at(-1));
const listOf = (v: string | string[] | undefined): string[] | undefined => (typeof v === 'string' ? [v] : v);

/** The creation fields of a checked form; `tags` and `user_metadata` parsed from their text. */
export const createInputOfForm = (form: UploadForm): AssetCreateInput => {
  const paths = listOf(form.path);
  return {
    id: textOf(form.id),
    name: textOf(form.name),
    mimeType: textOf(form.mime_type),
    previewId: textOf(form.preview_id),
    promptId: textOf(form.prompt_id),
    tags: parseTagsField(listOf(form.tags)),
    userMetadata: parseJsonField(textOf(form.user_metadata), 'user_metadata'),
    ...(paths?.length ? { paths } : {}),
  };
};

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

/** A JSON object field sent as text; undefined when absent (uploadFormOf leaves an empty one out). */
function parseJsonField(v: string | undefined, field: string): unknown {
  if (v === undefined) return undefined;
  try {
    return JSON.parse(v);
  } catch {
    throw new DomainError('INVALID_BODY', `${field} is not valid JSON`, { field });
  }
}
