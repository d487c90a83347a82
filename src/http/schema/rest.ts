import { Type } from '@sinclair/typebox';
import { IMPORT_ROOT_NAMES } from '../../config';
import { SCOPES } from '../../domain/auth/scopes';
import {
  AnyHash,
  Body,
  MediaType,
  Name,
  NameFilters,
  NamingStrategy,
  SourceUrl,
  TagEdit,
  Tags,
  TreePaths,
  UserMetadata,
  Uuid,
  UuidOrNull,
  Uuids,
} from './fields';

/*
 * The JSON bodies of the REST API, by their openapi.yaml component names: the routes check a body against its
 * schema (rest/middleware.ts jsonBody), and `npm run openapi:emit` writes the same schemas into openapi.yaml.
 */

export const AssetUpdate = Body(
  {
    name: Type.Optional(Name()),
    tags: Type.Optional(Tags()),
    mime_type: Type.Optional(MediaType()),
    preview_id: Type.Optional(UuidOrNull('null clears the preview')),
    user_metadata: Type.Optional(UserMetadata()),
  },
  { minProperties: 1, description: 'at least one of the five fields' },
);

export const FromHashRequest = Body({
  hash: AnyHash(),
  tags: Tags({ minItems: 1, nonBlank: true, description: 'at least one tag that is not blank' }),
  name: Type.Optional(Name("defaults as the operation's description says (never another owner's upload name)")),
  mime_type: Type.Optional(MediaType("defaults to the stored content's")),
  user_metadata: Type.Optional(UserMetadata()),
  preview_id: Type.Optional(Uuid('an asset of this owner (an extension of the spec)')),
  prompt_id: Type.Optional(Uuid('an extension of the spec')),
  paths: Type.Optional(
    TreePaths(
      'tree paths this content was pushed under, kept in `metadata.paths` (appended to an existing asset, as ' +
        '`POST /api/assets/{id}/paths` does; an extension of the spec)',
    ),
  ),
});

/** The allowed sources, said once for `source_url` and `url` (the hosts are configuration: no pattern can say them). */
const ALLOWED_SOURCE =
  'An absolute URL, without credentials, whose origin is `HF_ENDPOINT` or `CIVITAI_ENDPOINT`: by default\n' +
  '`https://huggingface.co` and `https://civitai.com`, so an `http:` URL or any other host is 400\n' +
  '`SOURCE_NOT_ALLOWED` (an `http:` origin is allowed only where an endpoint is configured so). The pattern says\n' +
  "the scheme and the host part; the allowed hosts are the service's configuration, which no pattern here can say.\n";

export const AssetUrlUpload = Body({
  url: SourceUrl(`${ALLOWED_SOURCE}As for \`POST /api/assets/download\`.\n`),
  name: Type.Optional(Name()),
  tags: Type.Optional(Tags()),
  user_metadata: Type.Optional(UserMetadata()),
  preview_id: Type.Optional(Uuid()),
  mime_type: Type.Optional(MediaType()),
});

export const DownloadRequest = Body({
  source_url: SourceUrl(
    ALLOWED_SOURCE +
      'On `HF_ENDPOINT`: `…/resolve/…` or `…/blob/…`; on `CIVITAI_ENDPOINT`: `…/api/download/models/<versionId>`,\n' +
      "or a model page `…/models/<modelId>[?modelVersionId=<versionId>]` (that version, else the model's newest).\n",
  ),
  tags: Type.Optional(Tags()),
  user_metadata: Type.Optional(UserMetadata()),
  preview_id: Type.Optional(Uuid()),
});

export const ExportRequest = Body(
  {
    asset_ids: Type.Optional(Uuids()),
    job_ids: Type.Optional(Uuids('every asset of these jobs (`prompt_id`)')),
    job_asset_name_filters: Type.Optional(
      NameFilters(
        "`{job_id: [names]}`: of that job, only the assets with these names or hashes (`blake3:<hex>`, the asset's " +
          '`hash`); an empty list is 400',
      ),
    ),
    include_previews: Type.Optional(
      Type.Boolean({ default: false, description: 'also the preview assets of the selected ones' }),
    ),
    naming_strategy: Type.Optional(NamingStrategy()),
  },
  {
    description:
      'at least one of `asset_ids` / `job_ids` holding an id (400 `INVALID_BODY` otherwise); ' +
      'at most 10,000 assets in all',
    anyOf: [
      { required: ['asset_ids'], properties: { asset_ids: { minItems: 1 } } },
      { required: ['job_ids'], properties: { job_ids: { minItems: 1 } } },
    ],
    'x-message': 'must give asset_ids or job_ids (at least one id)',
  },
);

/** POST and DELETE /api/assets/{id}/tags. */
export const TagEditRequest = Body({ tags: TagEdit() });

/** POST /api/assets/{id}/paths. */
export const PathsRequest = Body({ paths: TreePaths() });

/** POST /api/assets/seed (ComfyUI's seed): its body may be empty (every root). */
export const SeedRequest = Body({
  roots: Type.Optional(
    Type.Array(Type.Unsafe<string>({ type: 'string', enum: [...IMPORT_ROOT_NAMES] }), {
      description: 'default: every configured root; names not configured are ignored',
    }),
  ),
});

/** POST /api/keys (contract 8). The domain applies the rules a schema cannot say (a future expires_at, scopes). */
export const KeyCreateRequest = Body({
  owner: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 128,
      pattern: '^[\\w.@-]+$',
      description: "default: the key's own owner; another owner needs an admin key",
    }),
  ),
  label: Type.Optional(Type.String({ maxLength: 128, description: 'what the key is for' })),
  scopes: Type.Optional(
    Type.Array(Type.Unsafe<string>({ type: 'string', enum: [...SCOPES] }), {
      minItems: 1,
      maxItems: 16,
      description: "default `[read, write]`; without an admin key, at most the key's own scopes and never admin",
    }),
  ),
  expires_at: Type.Optional(
    Type.String({ maxLength: 64, description: 'ISO 8601 time in the future; after it the key is refused (401)' }),
  ),
});

/** A limit of PUT /api/owners/{owner}/quota: a whole number of bytes or assets, or null to clear it. */
const QuotaLimit = (what: string, maximum: number) =>
  Type.Unsafe<number | null>({
    type: ['integer', 'null'],
    minimum: 0,
    maximum,
    'x-message': 'must be a non-negative integer or null',
    description: `${what}; null clears the limit, absent keeps it`,
  });

export const QuotaRequest = Body({
  max_bytes: Type.Optional(
    QuotaLimit("the most bytes (sum of size) the owner's assets may take", Number.MAX_SAFE_INTEGER),
  ),
  // GraphQL's `maxAssets` is an Int (32 bits).
  max_assets: Type.Optional(QuotaLimit('the most assets the owner may have', 2_147_483_647)),
});

/** The request-body schemas openapi.yaml publishes, by component name (scripts: `npm run openapi:emit`). */
export const REST_BODY_SCHEMAS = {
  AssetUpdate,
  FromHashRequest,
  AssetUrlUpload,
  DownloadRequest,
  ExportRequest,
  TagEdit: TagEditRequest,
  PathsRequest,
  SeedRequest,
  KeyCreateRequest,
  QuotaRequest,
};
