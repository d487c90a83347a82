import { parseHash, type ParsedHash } from '../content/hashing';
import { DomainError } from '../errors';
import { validatePaths } from './asset-paths';
import { assertJsonInput, assertStorableText, isMediaType } from '../input';
import type {
  AssetCreateFields,
  AssetCreateInput,
  AssetFilter,
  AssetUpdateFields,
  AssetUpdateInput,
} from './asset.types';

/** Field limits, shared by REST and GraphQL so both reject the same input. */
export const LIMITS = {
  nameLength: 512,
  tagCount: 64,
  tagLength: 128,
  userMetadataBytes: 256 * 1024,
  mimeTypeLength: 255,
} as const;

/** A UUID of any version: this check's and the input schemas' (http/schema/fields.ts). */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const UUID = new RegExp(UUID_PATTERN);
export const isUuid = (v: unknown): v is string => typeof v === 'string' && UUID.test(v);

const invalid = (message: string, field?: string): DomainError =>
  new DomainError('INVALID_BODY', message, field ? { field } : undefined);

/**
 * Trimmed, empty ones dropped, exact duplicates removed, first-seen order kept; the case is kept (`NewTag` stays
 * `NewTag`, contract 2), as ComfyUI's asset API keeps it since July 2026.
 */
export function normalizeTags(value: unknown, field = 'tags'): string[] {
  if (!Array.isArray(value)) throw invalid(`${field} must be a list of strings`, field);
  const out: string[] = [];
  const seen = new Set<string>();
  for (const t of value) {
    if (typeof t !== 'string') throw invalid(`${field} must be a list of strings`, field);
    assertStorableText(t, field);
    const tag = t.trim();
    if (tag === '' || seen.has(tag)) continue;
    if (tag.length > LIMITS.tagLength) throw invalid(`each tag must be at most ${LIMITS.tagLength} characters`, field);
    seen.add(tag);
    out.push(tag);
  }
  if (out.length > LIMITS.tagCount) throw invalid(`at most ${LIMITS.tagCount} tags are allowed`, field);
  return out;
}

/**
 * Tags only the service sets and clears (contract 6.4, ComfyUI after August 2026): `missing` marks the assets of an
 * in-place file that is gone or changed. A client may filter by it, never add, remove or send it.
 */
export const SYSTEM_TAGS: ReadonlySet<string> = new Set(['missing']);
export const MISSING_TAG = 'missing';

/** 400 SYSTEM_TAG_FORBIDDEN when a client's tag list names a system tag (`details.tag` names the first one). */
export function assertNoSystemTags(tags: readonly string[]): void {
  const tag = tags.find((t) => SYSTEM_TAGS.has(t));
  if (tag !== undefined) {
    throw new DomainError('SYSTEM_TAG_FORBIDDEN', `${tag} is a system tag: only the service sets and clears it`, {
      tag,
    });
  }
}

/** Tags one filter parameter may list once normalised (ComfyUI's cap); a request may send ten times as many raw. */
export const MAX_FILTER_TAGS = 100;
/** The raw list a filter parameter may send (duplicates and spellings of the same tags included). */
export const MAX_RAW_FILTER_TAGS = 10 * MAX_FILTER_TAGS;

/** The tag lists of a filter, as the repository reads them. */
export type TagFilter = Pick<AssetFilter, 'includeTags' | 'excludeTags'> & { anyTags: string[] };

/** A tag filter parameter as a transport received it: its name as the client spelt it, and its raw values. */
export interface TagFilterParam {
  name: string;
  values: readonly string[] | undefined;
  /** One of ComfyUI's August 2026 names (`tags_all`, `tags_any`, `tags_none`), not an alias kept from before. */
  isNew: boolean;
}

/** The three slots of a tag filter, each under the names it may be given by (the old alias first). */
export interface TagFilterParams {
  all: readonly TagFilterParam[];
  any: readonly TagFilterParam[];
  none: readonly TagFilterParam[];
}

const tagFilterError = (message: string, details: Record<string, unknown>) =>
  new DomainError('INVALID_TAG_FILTER', message, details);

/**
 * The tag filter of a listing, its facets and GraphQL's `assets`/`tagCounts` (contract 3.7), one function for all:
 * each list trimmed, empty tags dropped, exact duplicates removed, case kept; an empty list counts as absent. 400
 * INVALID_TAG_FILTER when a list holds more than MAX_FILTER_TAGS tags (`{parameter, count, max}`), when a slot is
 * given under both its names (`{parameters: [old, new]}`), and when the same tag is in the all-list and the
 * none-list while any new name is used (`{parameters, conflicting_tags}`); with the old names only, such a filter is
 * an empty page, as ComfyUI answers it. The none-list always wins over the others.
 */
export function resolveTagFilter(p: TagFilterParams): TagFilter {
  const given = (slot: readonly TagFilterParam[]) => {
    const lists = slot
      .map((param) => ({ param, tags: filterTags(param.values ?? [], param.name) }))
      .filter((l) => l.tags.length > 0);
    if (lists.length > 1) {
      const names = lists.map((l) => l.param.name);
      throw tagFilterError(`give ${names.join(' or ')}, not both (they are the same filter)`, { parameters: names });
    }
    return lists[0];
  };
  const all = given(p.all);
  const any = given(p.any);
  const none = given(p.none);
  if (all && none && [all, any, none].some((l) => l?.param.isNew)) {
    const excluded = new Set(none.tags);
    const conflicting = all.tags.filter((t) => excluded.has(t));
    if (conflicting.length > 0) {
      const [a, n] = [all.param.name, none.param.name];
      throw tagFilterError(`tags both required by ${a} and excluded by ${n}: ${conflicting.join(', ')}`, {
        parameters: [a, n],
        conflicting_tags: conflicting,
      });
    }
  }
  return { includeTags: all?.tags ?? [], anyTags: any?.tags ?? [], excludeTags: none?.tags ?? [] };
}

/** One filter list: trimmed, empty ones dropped, exact duplicates removed; more than MAX_FILTER_TAGS is refused. */
function filterTags(values: readonly string[], parameter: string): string[] {
  const list = [...new Set(values.map((t) => t.trim()).filter((t) => t !== ''))];
  if (list.length > MAX_FILTER_TAGS) {
    throw tagFilterError(`${parameter} lists ${list.length} tags; the maximum is ${MAX_FILTER_TAGS}`, {
      parameter,
      count: list.length,
      max: MAX_FILTER_TAGS,
    });
  }
  return list;
}

export function validateName(value: unknown, field = 'name'): string {
  if (typeof value !== 'string') throw invalid(`${field} must be a string`, field);
  assertStorableText(value, field);
  const name = value.trim();
  if (name === '') throw invalid(`${field} must not be empty`, field);
  if (name.length > LIMITS.nameLength) throw invalid(`${field} must be at most ${LIMITS.nameLength} characters`, field);
  return name;
}

export function validateMimeType(value: unknown, field = 'mime_type'): string {
  if (typeof value !== 'string') throw invalid(`${field} must be a string`, field);
  const mime = value.trim().toLowerCase();
  if (mime.length > LIMITS.mimeTypeLength || !isMediaType(mime)) {
    throw invalid(`${field} must be a media type of RFC 9110 such as image/png or text/plain; charset=utf-8`, field);
  }
  return mime;
}

export function validateUserMetadata(value: unknown, field = 'user_metadata'): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(`${field} must be a JSON object`, field);
  }
  // Before anything recursive (JSON.stringify): depth, NUL and unpaired surrogates, keys included.
  assertJsonInput(value, field);
  const size = Buffer.byteLength(JSON.stringify(value));
  if (size > LIMITS.userMetadataBytes) {
    throw new DomainError('PAYLOAD_TOO_LARGE', `${field} must be at most ${LIMITS.userMetadataBytes} bytes of JSON`, {
      field,
    });
  }
  return value as Record<string, unknown>;
}

export function validateUuid(value: unknown, field: string): string {
  if (!isUuid(value)) throw invalid(`${field} must be a UUID`, field);
  return value.toLowerCase();
}

/**
 * Validates the optional creation fields of any create route (upload, URL upload, from-hash, download). Problems
 * name the field as the contract spells it (`mime_type`), for both transports.
 */
export function validateCreateFields(input: AssetCreateInput): AssetCreateFields {
  const out: AssetCreateFields = {};
  if (input.id !== undefined && input.id !== null) out.id = validateUuid(input.id, 'id');
  if (input.name !== undefined && input.name !== null) out.name = validateName(input.name);
  if (input.mimeType !== undefined && input.mimeType !== null) out.mimeType = validateMimeType(input.mimeType);
  if (input.tags !== undefined && input.tags !== null) {
    out.tags = normalizeTags(input.tags);
    assertNoSystemTags(out.tags);
  }
  if (input.userMetadata !== undefined && input.userMetadata !== null)
    out.userMetadata = validateUserMetadata(input.userMetadata);
  if (input.previewId !== undefined && input.previewId !== null)
    out.previewId = validateUuid(input.previewId, 'preview_id');
  if (input.promptId !== undefined && input.promptId !== null) out.promptId = validateUuid(input.promptId, 'prompt_id');
  if (input.paths !== undefined && input.paths !== null) out.paths = validatePaths(input.paths);
  return out;
}

/** from-hash: the creation fields, with `tags` required and holding at least one tag after normalisation. */
export function validateFromHashFields(input: AssetCreateInput): AssetCreateFields {
  const fields = validateCreateFields({ ...input, id: undefined });
  if (!fields.tags || fields.tags.length < 1) {
    throw invalid('tags is required: a list of at least one non-empty tag', 'tags');
  }
  return fields;
}

/** PUT body: at least one of the five fields; all five are applied; `preview_id: null` clears the preview. */
export function validateUpdateFields(input: AssetUpdateInput): AssetUpdateFields {
  const out: AssetUpdateFields = {};
  if (input.name !== undefined) out.name = validateName(input.name);
  if (input.mimeType !== undefined) out.mimeType = validateMimeType(input.mimeType);
  if (input.tags !== undefined) {
    out.tags = normalizeTags(input.tags);
    assertNoSystemTags(out.tags);
  }
  if (input.userMetadata !== undefined) out.userMetadata = validateUserMetadata(input.userMetadata);
  if (input.previewId !== undefined)
    out.previewId = input.previewId === null ? null : validateUuid(input.previewId, 'preview_id');
  if (Object.keys(out).length === 0) {
    throw invalid('provide at least one of name, tags, mime_type, preview_id, user_metadata');
  }
  return out;
}

/** A `hash` field (`blake3:<64 hex>` or `sha256:<64 hex>`) of a create request: INVALID_BODY otherwise. */
export function validateHashField(value: unknown, field = 'hash'): ParsedHash {
  const h = parseHash(value);
  if (!h) throw invalid(`${field} must look like blake3:<64 hex> or sha256:<64 hex>`, field);
  return h;
}

/** The last path segment of a client's file name, without control characters; undefined when nothing is left. */
export function sanitizeFileName(name: string): string | undefined {
  const base = name.split(/[\\/]/).pop() ?? '';
  const clean = base
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .trim()
    .slice(0, 512);
  return clean === '' || clean === '.' || clean === '..' ? undefined : clean;
}
