import { type ObjectOptions, type TProperties, Type } from '@sinclair/typebox';
import { MAX_CURSOR_LENGTH } from '../../domain/assets/cursor';
import { PATHS_LIMITS } from '../../domain/assets/asset-paths';
import { LIMITS, MAX_RAW_FILTER_TAGS, UUID_PATTERN } from '../../domain/assets/validation';
import { MAX_JSON_DEPTH } from '../../domain/input';
import { MAX_EXPORT_ASSETS } from '../../domain/exports/export.service';
import { MEDIA_TYPE_SOURCE } from '../../domain/input';
import { NAMING_STRATEGIES } from '../../domain/tasks/task.types';

/*
 * Each input field's rule, written once: REST bodies (snake_case) and GraphQL inputs (camelCase) are objects of these
 * fields, and openapi.yaml's request schemas are emitted from them. A rule here is what the wire value must be as
 * sent; what holds only once a value is normalised (a name's length once trimmed, a tag count once duplicates are
 * dropped, metadata's size in bytes) is the domain's (domain/assets/validation.ts) and stated in the description.
 */

/** A UUID of any version (the domain's isUuid); `x-message` is what a refusal says (check.ts). */
export const Uuid = (description?: string) =>
  Type.String({ format: 'uuid', pattern: UUID_PATTERN, 'x-message': 'must be a UUID', description });

/** A whole number from `min` to `max`. */
export const Int = (minimum: number, maximum: number, description?: string) =>
  Type.Integer({ minimum, maximum, description });

/** An offset into a listing. */
export const Offset = () => Int(0, 1_000_000_000);

/** A limited text (a filter's, a prefix's). */
export const Text = (maxLength: number, description?: string) => Type.String({ maxLength, description });

/** The JSON value of a JSON scalar or a field the domain reads as it likes. */
export const AnyJson = (description?: string) => Type.Unknown({ description });

export const MediaType = (description?: string) =>
  Type.String({
    // Surrounding white space is trimmed before the length (LIMITS.mimeTypeLength) is counted, by the domain.
    pattern: `^\\s*${MEDIA_TYPE_SOURCE}\\s*$`,
    'x-message': 'must be a media type of RFC 9110 such as image/png or text/plain; charset=utf-8',
    'x-component': 'MediaType',
    description:
      description ??
      'An RFC 9110 media type: `type/subtype` (tokens), then `; name=value` parameters whose value is a token or a ' +
        `quoted string of printable ASCII; at most ${LIMITS.mimeTypeLength} characters once trimmed. Control and ` +
        'non-ASCII characters are refused (400 `INVALID_BODY`). Stored lower-cased.',
    examples: ['text/plain; charset=utf-8'],
  });

export const AnyHash = (description?: string) =>
  Type.String({
    pattern: '^(blake3|sha256):[a-f0-9]{64}$',
    'x-message': 'must look like blake3:<64 hex> or sha256:<64 hex>',
    'x-component': 'AnyHash',
    description,
  });

/** An asset's name: not blank; at most LIMITS.nameLength characters once trimmed (the domain's rule). */
export const Name = (description?: string) =>
  Type.String({
    minLength: 1,
    pattern: '\\S',
    'x-message': 'must not be blank',
    description: [`at most ${LIMITS.nameLength} characters once trimmed; must not be blank`, description]
      .filter(Boolean)
      .join('; '),
  });

/**
 * Text with no NUL and no unpaired UTF-16 surrogate (the domain's isStorableText), as JSON Schema validators read a
 * pattern: with the `u` flag, where a lone surrogate is a code point of its own and a pair is one code point.
 */
export const STORABLE_TEXT_PATTERN = '^[^\\u0000\\ud800-\\udfff]*$';

/** The input rule of every JSON body's keys and text, at any depth (domain/input.ts assertJsonInput). */
export const JSON_TEXT_RULE =
  `keys and strings at any depth must not contain NUL (\\u0000) or unpaired UTF-16 surrogates, and values nest at ` +
  `most ${MAX_JSON_DEPTH} levels (400 \`INVALID_BODY\`)`;

/**
 * A JSON body's object schema: the keys it does not name are accepted and ignored, as every body of the service
 * takes them, under the rule every key and text obeys (its top-level keys as `propertyNames`, deeper ones described).
 */
export const Body = <T extends TProperties>(properties: T, options: ObjectOptions = {}) =>
  Type.Object(properties, {
    ...options,
    propertyNames: { pattern: STORABLE_TEXT_PATTERN },
    description: [options.description, `other keys are ignored; ${JSON_TEXT_RULE}`].filter(Boolean).join('; '),
  });

/** A text that is not blank: one character that JavaScript's `trim` (the domain's normalising) does not remove. */
const NOT_BLANK = Type.String({ pattern: '\\S' });

/** An asset's tags as sent: normalised by the domain (trimmed, blanks and exact repeats dropped), then counted. */
export const Tags = (options: { minItems?: number; nonBlank?: boolean; description?: string } = {}) =>
  Type.Array(Type.String(), {
    minItems: options.minItems,
    // A list of blanks only is empty once normalised: what "at least one tag" refuses.
    ...(options.nonBlank ? { contains: NOT_BLANK, 'x-message': 'must hold at least one tag that is not blank' } : {}),
    description: [
      `tags are trimmed, blank ones and exact repeats dropped (case kept); then at most ${LIMITS.tagCount} tags of ` +
        `at most ${LIMITS.tagLength} characters`,
      options.description,
    ]
      .filter(Boolean)
      .join('; '),
  });

/** A tag edit (POST/DELETE /api/assets/{id}/tags): at least one tag that is not blank. */
export const TagEdit = () =>
  Type.Array(Type.String(), {
    minItems: 1,
    contains: NOT_BLANK,
    'x-message': 'must hold at least one tag that is not blank',
    description:
      'at least one tag that is not blank (tags are trimmed and empty ones dropped; none left is 400); once ' +
      `normalised at most ${LIMITS.tagCount} distinct tags of at most ${LIMITS.tagLength} characters (400 ` +
      '`INVALID_BODY`)',
  });

/**
 * The user's JSON object (its depth, text and size are the domain's: 400 INVALID_BODY, 413 for the size); its own keys'
 * rule is a schema keyword too, so a client generated from the document does not send a key the service refuses.
 */
export const UserMetadata = (description?: string) =>
  Type.Unsafe<Record<string, unknown>>({
    type: 'object',
    propertyNames: { pattern: STORABLE_TEXT_PATTERN },
    additionalProperties: true,
    description: [
      `a JSON object of at most ${LIMITS.userMetadataBytes / 1024} KiB of JSON (413 \`PAYLOAD_TOO_LARGE\` over it); ` +
        JSON_TEXT_RULE,
      description,
    ]
      .filter(Boolean)
      .join('; '),
  });

/** A tag list of a listing filter, as sent (the domain caps it at 100 once normalised). */
export const FilterTags = (description: string) =>
  Type.Array(Type.String({ maxLength: 4096 }), { maxItems: MAX_RAW_FILTER_TAGS, description });

export const Cursor = (description?: string) => Type.String({ maxLength: MAX_CURSOR_LENGTH, description });

export const Uuids = (description?: string) => Type.Array(Uuid(), { maxItems: MAX_EXPORT_ASSETS, description });

/** An export's `{job id: [asset names or hashes]}`. */
export const NameFilters = (description?: string) =>
  Type.Unsafe<Record<string, string[]>>({
    type: 'object',
    propertyNames: { pattern: UUID_PATTERN },
    additionalProperties: { type: 'array', minItems: 1, items: { type: 'string' } },
    'x-message': 'must map job ids to non-empty lists of names',
    description,
  });

export const NamingStrategy = (description?: string) =>
  Type.Unsafe<(typeof NAMING_STRATEGIES)[number]>({ type: 'string', enum: [...NAMING_STRATEGIES], description });

/**
 * A tree path of `metadata.paths` (domain/assets/asset-paths.ts, safe-path.ts): relative POSIX segments, none empty,
 * `.` or `..`, without `\\`, control characters, NUL or unpaired surrogates. Each segment's lookahead and its class
 * without `/` leave the pattern one way to match (linear time).
 */
export const TreePath = (description?: string) =>
  Type.String({
    minLength: 1,
    maxLength: PATHS_LIMITS.length,
    pattern:
      '^(?!\\.\\.?(?:/|$))[^/\\\\\\u0000-\\u001f\\u007f\\ud800-\\udfff]+' +
      '(?:/(?!\\.\\.?(?:/|$))[^/\\\\\\u0000-\\u001f\\u007f\\ud800-\\udfff]+)*$',
    'x-message': 'must be a safe relative path (no "..", ".", empty segment, leading "/", "\\\\" or control character)',
    'x-component': 'TreePath',
    description:
      description ??
      `A relative POSIX path of at most ${PATHS_LIMITS.length} characters: segments separated by \`/\`, none empty, ` +
        '`.` or `..`; no leading `/`, no `\\`, no control character (400 `INVALID_BODY`).',
    examples: ['models/loras/style.safetensors'],
  });

/** The tree paths of one request: 1–100 (the domain's PATHS_LIMITS.perRequest), duplicates dropped. */
export const TreePaths = (description?: string) =>
  Type.Array(TreePath(), { minItems: 1, maxItems: PATHS_LIMITS.perRequest, description });

/** A source URL of a download (the allowed hosts are configuration: SOURCE_NOT_ALLOWED, not a pattern). */
export const SourceUrl = (description?: string) =>
  Type.String({
    maxLength: 4096,
    allOf: [
      { pattern: '\\S', 'x-message': 'is required' },
      // Surrounding white space is trimmed; another scheme is the domain's SOURCE_NOT_ALLOWED, so it is here too, as
      // are credentials (`user@`) and a missing host.
      {
        pattern: '^\\s*[hH][tT][tT][pP][sS]?://[^\\s/?#@]+(?:[/?#]|\\s*$)',
        'x-message': 'must be an absolute http(s) URL',
        'x-code': 'SOURCE_NOT_ALLOWED',
      },
    ],
    description,
  });

export const IdempotencyKey = () =>
  Type.String({
    maxLength: 1024,
    description: 'Like the Idempotency-Key header: repeating it answers with the first task.',
  });

/** A UUID or null (the PUT body's and UpdateAssetInput's `preview_id`: null clears the preview). */
export const UuidOrNull = (description?: string) =>
  Type.Unsafe<string | null>({
    type: ['string', 'null'],
    format: 'uuid',
    pattern: UUID_PATTERN,
    'x-message': 'must be a UUID or null',
    description,
  });
