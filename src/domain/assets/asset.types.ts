import { safeRelativePath } from './safe-path';

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
  /**
   * The asset's `metadata`: derived by the service at ingest (file name, length, format, image size, safetensors
   * header); null until derived (backfill).
   */
  metadata: Record<string, unknown> | null;
}

export interface CreateResult {
  asset: Asset;
  /** true when a new asset row was made, false when an existing one was returned. */
  created: boolean;
}

/**
 * A client's fields for a new asset as it sent them (not yet checked), whatever the transport: each one maps its own
 * spelling (REST's `mime_type`, GraphQL's `mimeType`) to this. Absent and null mean "not given".
 */
export interface AssetCreateInput {
  id?: unknown;
  name?: unknown;
  mimeType?: unknown;
  tags?: unknown;
  userMetadata?: unknown;
  previewId?: unknown;
  promptId?: unknown;
}

/** A client's changes of an asset as sent: absent means "unchanged"; `previewId: null` clears the preview. */
export type AssetUpdateInput = Omit<AssetCreateInput, 'id' | 'promptId'>;

/** Metadata accepted when creating an asset, already validated and normalised (see validation.ts). */
export interface AssetCreateFields {
  id?: string;
  name?: string;
  mimeType?: string;
  tags?: string[];
  userMetadata?: Record<string, unknown>;
  previewId?: string | null;
  promptId?: string | null;
  /** Set by the service, never by clients: the uploaded or downloaded file name, for `metadata.filename`. */
  fileName?: string;
  /** Set by the download paths: `metadata.source_url`. */
  sourceUrl?: string;
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

/** The filters of GET /api/assets, shared by the listing and the tag facets (GET /api/assets/tags/refine). */
export interface AssetFilter {
  /** Every one of these tags (`include_tags`, `tags_all`). */
  includeTags: string[];
  /** None of these (`exclude_tags`, `tags_none`). */
  excludeTags: string[];
  /** At least one of these (`tags_any`). */
  anyTags?: string[];
  nameContains?: string;
  metadataFilter?: Record<string, unknown>;
  /** Assets of this content. */
  hash?: { algorithm: 'blake3' | 'sha256'; hex: string };
}

export interface AssetListQuery extends AssetFilter {
  limit: number;
  offset: number;
  sort: AssetSort;
  order: 'asc' | 'desc';
  /** An opaque `next_cursor` of an earlier page: rows strictly after it; `offset` is then ignored. */
  after?: string;
}

export interface Page<T> {
  items: T[];
  total: number;
  hasMore: boolean;
}

export interface AssetPage extends Page<Asset> {
  /** true when `total` is a lower bound (the count stopped at COUNT_LIMIT). */
  totalIsLowerBound: boolean;
  /** Present whenever more rows follow, and the sort mints cursors. */
  nextCursor?: string;
  /**
   * The owner's rows version the page was read at (opaque): while the database still holds it, the same query
   * answers the same page (`AssetService.listJsonIfChanged`).
   */
  version: string;
}

/**
 * A listed asset as the pieces of its REST JSON (`AssetRepository.pageTextIfChanged`): `*Json` fields are JSON text
 * (strings quoted and escaped, `tagsJson` an array, the metadata objects as JSON.stringify prints them), the others
 * plain text (ids, the decimal size, timestamps as `toISOString` prints them).
 */
export interface AssetJsonParts {
  id: string;
  nameJson: string;
  size: string;
  blake3: string;
  mimeTypeJson: string;
  tagsJson: string;
  userMetadataJson: string;
  previewId: string | null;
  promptId: string | null;
  createdAt: string;
  updatedAt: string;
  lastAccessTime: string;
  isImmutable: boolean;
  hasThumbnail: boolean;
  /** The name's JSON when the asset is a model and its name a safe relative path (`loaderPathOf`). */
  loaderPathJson?: string;
  /** Absent when the asset has no derived metadata. */
  metadataJson?: string;
}

/** A page of GET /api/assets with its assets as JSON pieces. */
export interface AssetJsonPage extends Omit<AssetPage, 'items'> {
  items: AssetJsonParts[];
}

export interface TagAddResult {
  added: string[];
  alreadyPresent: string[];
  totalTags: string[];
}

export interface TagRemoveResult {
  removed: string[];
  notPresent: string[];
  totalTags: string[];
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
/** The absolute URL of the asset's thumbnail on `baseUrl`, once its content has one. */
export const thumbnailUrlOf = (a: { id: string; hasThumbnail: boolean }, baseUrl: string): string | undefined =>
  a.hasThumbnail ? `${baseUrl}/api/assets/${a.id}/thumbnail` : undefined;

/** The absolute preview URL on `baseUrl` (PUBLIC_URL or the request's origin), or undefined without a preview. */
export const previewUrlOf = (a: { previewId: string | null }, baseUrl: string): string | undefined =>
  a.previewId ? `${baseUrl}/api/assets/${a.previewId}/content` : undefined;

/** `loader_path`: for an asset tagged `models`, its name when that is a safe relative path. */
export const loaderPathOf = (a: { name: string; tags: string[] }): string | undefined =>
  a.tags.includes('models') ? safeRelativePath(a.name) : undefined;
