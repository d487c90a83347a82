import { Type, type TSchema } from '@sinclair/typebox';
import type { ValidatorFn } from 'type-graphql';

import { TASK_STATUSES } from '../../domain/tasks/task.types';
import * as A from '../graphql/inputs/asset.inputs';
import { StartExportInput } from '../graphql/inputs/export.inputs';
import { ApiKeysArgs, AuditEventsArgs, CreateApiKeyInput } from '../graphql/inputs/key.inputs';
import { OwnerQuotaInput } from '../graphql/inputs/quota.inputs';
import { StartDownloadInput, TaskFilter, TasksArgs } from '../graphql/inputs/task.inputs';
import { check } from './check';
import {
  AnyHash,
  AnyJson,
  Cursor,
  FilterTags,
  IdempotencyKey,
  Int,
  MediaType,
  Name,
  NameFilters,
  NamingStrategy,
  Offset,
  SourceUrl,
  Tags,
  Text,
  UserMetadata,
  Uuid,
  UuidOrNull,
  Uuids,
} from './fields';

/*
 * The GraphQL inputs' rules: the same field schemas as REST's bodies (fields.ts) under GraphQL's names. The classes
 * in graphql/inputs declare the GraphQL types; type-graphql hands each argument to `checkGraphQLArg`, which checks
 * it against its class's schema here (a test holds each schema's fields to its class's).
 */
const Opt = Type.Optional;
/** Enum, date and boolean arguments: GraphQL's own types check them. */
const ByGraphQL = () => Opt(Type.Unknown());

const AssetFilter = Type.Object({
  includeTags: Opt(FilterTags('Assets carrying every one of these tags.')),
  excludeTags: Opt(FilterTags('Assets carrying none of these tags.')),
  tagsAll: Opt(FilterTags('ComfyUI `tags_all`')),
  tagsAny: Opt(FilterTags('ComfyUI `tags_any`')),
  tagsNone: Opt(FilterTags('ComfyUI `tags_none`')),
  anyTags: Opt(FilterTags('Assets carrying at least one of these tags.')),
  nameContains: Opt(Text(1024)),
  hash: Opt(Text(80)),
  metadataFilter: Opt(AnyJson()),
  kinds: Opt(Type.Array(Type.Unknown(), { maxItems: 6 })),
  createdAfter: ByGraphQL(),
  createdBefore: ByGraphQL(),
  baseModel: Opt(Text(256)),
});

/** A limit of `setOwnerQuota`: a whole number, or null to clear it (GraphQL's Int and SafeInt check the type). */
const QuotaLimit = () => Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]);

const assetMetadata = {
  name: Opt(Name()),
  mimeType: Opt(MediaType()),
  userMetadata: Opt(UserMetadata()),
  previewId: Opt(Uuid()),
  promptId: Opt(Uuid()),
};

const UploadAssetInput = Type.Object({ id: Opt(Uuid()), tags: Opt(Tags()), ...assetMetadata });

const UpdateAssetInput = Type.Object({
  name: Opt(Name()),
  tags: Opt(Tags()),
  mimeType: Opt(MediaType()),
  previewId: Opt(UuidOrNull()),
  userMetadata: Opt(UserMetadata()),
});

const TaskFilterSchema = Type.Object({
  taskName: Opt(Text(128)),
  idempotencyKey: Opt(Text(1024)),
  status: Opt(Type.Array(Type.Unknown(), { maxItems: TASK_STATUSES.length })),
  createdAfter: ByGraphQL(),
  createdBefore: ByGraphQL(),
  sortOrder: ByGraphQL(),
});

/** Each input class's schema (argument types without one, scalars and enums, are GraphQL's to check). */
export const GRAPHQL_INPUT_SCHEMAS = new Map<unknown, TSchema>([
  [A.AssetFilter, AssetFilter],
  [
    A.AssetsArgs,
    Type.Object({
      filter: Opt(AssetFilter),
      limit: Int(1, 500),
      offset: Offset(),
      sort: ByGraphQL(),
      order: ByGraphQL(),
      after: Opt(Cursor()),
    }),
  ],
  [A.JobAssetsArgs, Type.Object({ jobId: Type.String(), limit: Int(1, 500), offset: Offset() })],
  [A.TagCountsArgs, Type.Object({ filter: Opt(AssetFilter), limit: Int(1, 1000) })],
  [A.BaseModelsArgs, Type.Object({ limit: Int(1, 500) })],
  [A.TagsArgs, Type.Object({ prefix: Opt(Text(1024)), limit: Int(1, 1000), offset: Offset(), order: ByGraphQL() })],
  [A.UploadAssetInput, UploadAssetInput],
  [A.CreateAssetFromHashInput, Type.Object({ hash: AnyHash(), tags: Tags({ minItems: 1 }), ...assetMetadata })],
  [A.UpdateAssetInput, UpdateAssetInput],
  [A.UploadAssetArgs, Type.Object({ file: Type.Unknown(), input: Opt(UploadAssetInput) })],
  [A.UpdateAssetArgs, Type.Object({ id: Type.String(), input: UpdateAssetInput })],
  [A.SetAssetImmutableArgs, Type.Object({ id: Type.String(), immutable: ByGraphQL() })],
  [TaskFilter, TaskFilterSchema],
  [
    TasksArgs,
    Type.Object({ filter: Opt(TaskFilterSchema), limit: Int(1, 100), offset: Offset(), allOwners: ByGraphQL() }),
  ],
  [
    StartDownloadInput,
    Type.Object({
      sourceUrl: SourceUrl(),
      tags: Opt(Tags()),
      userMetadata: Opt(UserMetadata()),
      previewId: Opt(Uuid()),
      idempotencyKey: Opt(IdempotencyKey()),
    }),
  ],
  [
    StartExportInput,
    Type.Object({
      assetIds: Opt(Uuids()),
      jobIds: Opt(Uuids()),
      jobAssetNameFilters: Opt(NameFilters()),
      includePreviews: ByGraphQL(),
      namingStrategy: Opt(NamingStrategy()),
      idempotencyKey: Opt(IdempotencyKey()),
    }),
  ],
  [
    CreateApiKeyInput,
    Type.Object({ owner: Opt(Text(128)), label: Opt(Text(128)), scopes: ByGraphQL(), expiresAt: ByGraphQL() }),
  ],
  [ApiKeysArgs, Type.Object({ owner: Opt(Text(128)), allOwners: ByGraphQL() })],
  [AuditEventsArgs, Type.Object({ limit: Int(1, 500), after: Opt(Text(200)) })],
  [OwnerQuotaInput, Type.Object({ maxBytes: Opt(QuotaLimit()), maxAssets: Opt(QuotaLimit()) })],
]);

/**
 * type-graphql's `validateFn` (graphql/schema.ts): an argument of an input or args class is checked against its
 * schema; INVALID_BODY naming the field otherwise (graphql/errors.ts keeps the DomainError's code).
 */
export const checkGraphQLArg: ValidatorFn = (value, type) => {
  const schema = GRAPHQL_INPUT_SCHEMAS.get(type);
  if (schema && value != null) check(schema, value);
};
