import { Type } from '@sinclair/typebox';
import {
  AnyHash,
  MediaType,
  Name,
  NameFilters,
  NamingStrategy,
  SourceUrl,
  TagEdit,
  Tags,
  UserMetadata,
  Uuid,
  UuidOrNull,
  Uuids,
} from './fields';

/*
 * The JSON bodies of the REST API, by their openapi.yaml component names: the routes check a body against its
 * schema (rest/middleware.ts jsonBody), and `npm run openapi:emit` writes the same schemas into openapi.yaml.
 */

export const AssetUpdate = Type.Object(
  {
    name: Type.Optional(Name()),
    tags: Type.Optional(Tags()),
    mime_type: Type.Optional(MediaType()),
    preview_id: Type.Optional(UuidOrNull('null clears the preview')),
    user_metadata: Type.Optional(UserMetadata()),
  },
  { minProperties: 1, description: 'at least one of the five fields' },
);

export const FromHashRequest = Type.Object({
  hash: AnyHash(),
  tags: Tags({ minItems: 1, description: 'at least one tag' }),
  name: Type.Optional(Name("defaults as the operation's description says (never another owner's upload name)")),
  mime_type: Type.Optional(MediaType("defaults to the stored content's")),
  user_metadata: Type.Optional(UserMetadata()),
  preview_id: Type.Optional(Uuid('an asset of this owner (an extension of the spec)')),
  prompt_id: Type.Optional(Uuid('an extension of the spec')),
  paths: Type.Optional(
    Type.Array(Type.String({ maxLength: 1024 }), {
      minItems: 1,
      maxItems: 100,
      description:
        'tree paths this content was pushed under, kept in `metadata.paths` (appended to an existing asset, as ' +
        '`POST /api/assets/{id}/paths` does; an extension of the spec)',
    }),
  ),
});

export const AssetUrlUpload = Type.Object({
  url: Type.String({
    pattern: '\\S',
    'x-message': 'is required (or send multipart/form-data with a file)',
    description: 'an http(s) URL on an allowed provider (as for downloads)',
  }),
  name: Type.Optional(Name()),
  tags: Type.Optional(Tags()),
  user_metadata: Type.Optional(UserMetadata()),
  preview_id: Type.Optional(Uuid()),
  mime_type: Type.Optional(MediaType()),
});

export const DownloadRequest = Type.Object({
  source_url: SourceUrl(
    'an http(s) URL on `HF_ENDPOINT` (`…/resolve/…` or `…/blob/…`) or `CIVITAI_ENDPOINT`\n' +
      '(`…/api/download/models/<versionId>`, or a model page `…/models/<modelId>[?modelVersionId=<versionId>]`:\n' +
      "that version, else the model's newest). Any other origin is 400 `SOURCE_NOT_ALLOWED`: the allowed hosts\n" +
      "are the service's configuration (by default huggingface.co and civitai.com), which no pattern here can\n" +
      'say.\n',
  ),
  tags: Type.Optional(Tags()),
  user_metadata: Type.Optional(UserMetadata()),
  preview_id: Type.Optional(Uuid()),
});

export const ExportRequest = Type.Object(
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
export const TagEditRequest = Type.Object({ tags: TagEdit() });

/** The request-body schemas openapi.yaml publishes, by component name (scripts: `npm run openapi:emit`). */
export const REST_BODY_SCHEMAS = {
  AssetUpdate,
  FromHashRequest,
  AssetUrlUpload,
  DownloadRequest,
  ExportRequest,
  TagEdit: TagEditRequest,
};
