/** Plain domain shapes; transports map them to JSON (REST) or object types (GraphQL). */

export interface Principal {
  readonly ownerId: string;
  readonly isAdmin: boolean;
  /** Id of the API key row, or `env:<owner>` for bootstrap keys. */
  readonly keyId: string;
}

export interface Asset {
  id: string;
  ownerId: string;
  name: string;
  size: number;
  /** BLAKE3 hex (64 chars), without the `blake3:` prefix. */
  blake3: string;
  mimeType: string;
  tags: string[];
  userMetadata: Record<string, unknown>;
  previewId: string | null;
  promptId: string | null;
  isImmutable: boolean;
  createdAt: Date;
  updatedAt: Date;
  lastAccessTime: Date;
  /** A thumbnail of the content exists (GET /api/assets/{id}/thumbnail). */
  hasThumbnail: boolean;
}

export interface CreateResult {
  asset: Asset;
  /** true when a new asset row was made, false when an existing one was returned. */
  created: boolean;
}

/** Metadata accepted when creating an asset, already validated and normalised (see validation.ts). */
export interface AssetCreateFields {
  id?: string;
  name?: string;
  mimeType?: string;
  tags?: string[];
  userMetadata?: Record<string, unknown>;
  previewId?: string | null;
  promptId?: string | null;
}

export interface AssetUpdateFields {
  name?: string;
  mimeType?: string;
  tags?: string[];
  userMetadata?: Record<string, unknown>;
  previewId?: string | null;
}

export const ASSET_SORTS = ['name', 'created_at', 'updated_at', 'size', 'last_access_time'] as const;
export type AssetSort = (typeof ASSET_SORTS)[number];

export interface AssetListQuery {
  includeTags: string[];
  excludeTags: string[];
  nameContains?: string;
  metadataFilter?: Record<string, unknown>;
  limit: number;
  offset: number;
  sort: AssetSort;
  order: 'asc' | 'desc';
}

export interface Page<T> {
  items: T[];
  total: number;
  hasMore: boolean;
}

export interface TagCount {
  name: string;
  count: number;
}

export interface TagListQuery {
  prefix?: string;
  limit: number;
  offset: number;
  order: 'count_desc' | 'name_asc';
}

export const assetHashOf = (a: { blake3: string }): string => `blake3:${a.blake3}`;
/** Path of the asset's thumbnail, once its content has one. */
export const thumbnailPathOf = (a: { id: string; hasThumbnail: boolean }): string | undefined =>
  a.hasThumbnail ? `/api/assets/${a.id}/thumbnail` : undefined;

export const previewUrlOf = (a: { previewId: string | null }): string | null =>
  a.previewId ? `/api/assets/${a.previewId}/content` : null;
