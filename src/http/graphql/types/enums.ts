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
