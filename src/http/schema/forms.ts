import { type TProperties, type TSchema, Type } from '@sinclair/typebox';
import { PATHS_LIMITS } from '../../domain/assets/asset-paths';
import { AnyHash, MediaType, Name, TreePath, Uuid } from './fields';

/*
 * The text fields of an upload, as the two upload routes receive them: a multipart form's text parts (POST
 * /api/assets) and a tus upload's Upload-Metadata (POST /api/uploads). Each value as checked here is the last one
 * sent, trimmed, an empty one absent (http/shared/asset-input.ts uploadFormOf, uploadMetadataOf); the routes check it
 * against these schemas before any field reaches the domain, and openapi.yaml's AssetUploadForm and UploadMetadata
 * components are emitted from them.
 */

const FORM_HASH =
  'Fast path; must come before `file`. When that content is stored, `file` may be omitted (or is only hashed to ' +
  'check it, not stored). When `file` is present its hash must equal this (else `HASH_MISMATCH`).';
const TUS_HASH = "the uploaded bytes' hash; when they differ at the last PATCH it is `HASH_MISMATCH`, nothing kept";

/** The fields both routes take, with `hash` and `tags` as each spells them. */
const uploadFields = <T extends TSchema>(hash: string, tags: T) =>
  ({
    hash: Type.Optional(AnyHash(hash)),
    tags: Type.Optional(tags),
    id: Type.Optional(Uuid('for idempotent creation; if this owner has this asset it is returned (200)')),
    preview_id: Type.Optional(Uuid('an asset of this owner; when absent, images use their own id')),
    prompt_id: Type.Optional(Uuid('id of the job/prompt that created the asset')),
    name: Type.Optional(Name('defaults to the uploaded file name, else the first 16 hex of the BLAKE3')),
    mime_type: Type.Optional(MediaType("defaults to the type the magic bytes show, else the extension's")),
    user_metadata: Type.Optional(
      Type.String({ contentMediaType: 'application/json', description: 'a JSON object, as text' }),
    ),
  }) satisfies TProperties;

const TagsText = Type.String();

export const AssetUploadForm = Type.Object(
  {
    file: Type.Optional(
      Type.String({
        contentMediaType: 'application/octet-stream',
        description: 'The file. Required unless `hash` names stored content. A zero-byte file is allowed.',
      }),
    ),
    ...uploadFields(
      FORM_HASH,
      Type.Union([TagsText, Type.Array(TagsText)], {
        description:
          'a JSON array text (`["models","loras"]`), comma-separated text (`models,loras`), or repeated fields',
      }),
    ),
    path: Type.Optional(
      Type.Union([TreePath(), Type.Array(TreePath(), { maxItems: PATHS_LIMITS.perRequest })], {
        // An anyOf's refusal is the union's own: this says what each value must be.
        'x-message':
          `must be at most ${PATHS_LIMITS.perRequest} safe relative paths of at most ${PATHS_LIMITS.length} ` +
          'characters (no "..", ".", empty segment, leading "/", "\\" or control character)',
        description:
          `A tree path the file was pushed under (repeatable, at most ${PATHS_LIMITS.perRequest}), kept in ` +
          '`metadata.paths`: on a new asset, and appended to an existing one as `POST /api/assets/{id}/paths` does ' +
          '(the same rules). An extension of the spec; `assets push` sends it.',
      }),
    ),
  },
  {
    description:
      'Text parts: the last value of each, trimmed; an empty one counts as absent (`tags` and `path` keep every ' +
      'value). Other parts are ignored. Every name and value must not contain NUL or unpaired UTF-16 surrogates.',
  },
);

export const UploadMetadata = Type.Object(
  {
    filename: Type.Optional(
      Type.String({ description: "the file's name: its last path segment, without control characters, is kept" }),
    ),
    ...uploadFields(
      TUS_HASH,
      Type.String({
        pattern: '^\\[',
        'x-message': 'must be a JSON array of strings',
        description: 'a JSON array text (`["models","loras"]`): a header value has no repeated fields',
      }),
    ),
  },
  {
    description:
      'The decoded values of `Upload-Metadata`, each trimmed, an empty one or a key without a value absent: the ' +
      "fields of a multipart upload, `filename` for the multipart file part's. Other keys are kept (echoed by HEAD) " +
      'but unused.',
  },
);
