import { registerEnumType } from 'type-graphql';

// Enum values keep the REST spelling (created_at, count_desc, running, ...) so both APIs read the same.

export enum AssetSortEnum {
  name = 'name',
  created_at = 'created_at',
  updated_at = 'updated_at',
  size = 'size',
  last_access_time = 'last_access_time',
}
registerEnumType(AssetSortEnum, { name: 'AssetSort', description: 'Sort key of `assets`.' });

export enum SortOrderEnum {
  asc = 'asc',
  desc = 'desc',
}
registerEnumType(SortOrderEnum, { name: 'SortOrder' });

export enum AssetKindEnum {
  image = 'image',
  video = 'video',
  audio = 'audio',
  text = 'text',
  model = 'model',
  other = 'other',
}
registerEnumType(AssetKindEnum, {
  name: 'AssetKind',
  description:
    "What an asset is (the asset browser's type filter): `model` by its file name (.safetensors, .gguf, .ckpt, .pt, " +
    '.pth, .bin, .onnx, .sft), the others by media type (`text` includes JSON and YAML); `other` is none of these.',
});

export enum TagOrderEnum {
  count_desc = 'count_desc',
  name_asc = 'name_asc',
}
registerEnumType(TagOrderEnum, { name: 'TagOrder' });

export enum TaskStatusEnum {
  created = 'created',
  running = 'running',
  completed = 'completed',
  failed = 'failed',
  cancelled = 'cancelled',
}
registerEnumType(TaskStatusEnum, {
  name: 'TaskStatus',
  description: 'A cancelled task is cancelled, with an errorMessage saying so.',
});

export enum ApiKeyScopeEnum {
  read = 'read',
  write = 'write',
  admin = 'admin',
}
registerEnumType(ApiKeyScopeEnum, { name: 'ApiKeyScope', description: 'What a key may do (contract 8).' });
