import { isOwnPreviewType } from '../content/mime';
import { isModelTagged } from './comfy-folders';
import { safeRelativePath } from './safe-path';

/** Plain domain shapes; transports map them to JSON (REST) or object types (GraphQL). */

export type { Principal } from '../auth/scopes';

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
  /** The nominated preview asset was deleted: no `preview_url` until one is set. */
  previewRemoved: boolean;
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
  /** Tree paths the file was pushed under, for `metadata.paths` (upload and from-hash; validatePaths). */
  paths?: unknown;
}

/** A client's changes of an asset as sent: absent means "unchanged"; `previewId: null` clears the preview. */
export type AssetUpdateInput = Omit<AssetCreateInput, 'id' | 'promptId' | 'paths'>;

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
  /** Set by the import: `metadata.paths`, the tree paths this content was found under (see asset-paths.ts). */
  paths?: string[];
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
  /** Assets of at least one of these kinds (by media type, model weights by file name). */
  kinds?: AssetKind[];
  /** Created strictly after / before these times. */
  createdAfter?: Date;
  createdBefore?: Date;
  /** Assets whose derived metadata names this base model (`metadata.base_model`, read from a safetensors header). */
  baseModel?: string;
}

/**
 * What an asset is to a person browsing (the asset browser's type filter): model weights by their file name (a
 * `.safetensors` is often stored as application/octet-stream), the rest by media type; `other` is none of these.
 */
export type AssetKind = 'image' | 'video' | 'audio' | 'text' | 'model' | 'other';

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

/** A page of GET /api/assets (or GraphQL `assets`), its items assets or a read model's rows. */
export interface ListPage<T> extends Page<T> {
  /** true when `total` is a lower bound (the count stopped at COUNT_LIMIT). */
  totalIsLowerBound: boolean;
  /** Present whenever more rows follow, and the sort mints cursors. */
  nextCursor?: string;
  /**
   * The owner's rows version the page was read at (opaque): while the database still holds it, the same query
   * answers the same page (`AssetService.pageIfChanged`).
   */
  version: string;
}

export type AssetPage = ListPage<Asset>;

export interface TagAddResult {
  added: string[];
  alreadyPresent: string[];
  totalTags: string[];
}

export interface TagRemoveResult {
  removed: string[];
  notPresent: string[];
  totalTags: string[];
  /** System tags the request named and were kept (ComfyUI's field): always empty, such a request is a 400. */
  protected: string[];
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

/** What decides an asset's preview (contract 3.7). */
export interface PreviewFields {
  id: string;
  mimeType: string;
  previewId: string | null;
  previewRemoved: boolean;
}

/**
 * What an answer's URLs are made of: `base`, PUBLIC_URL or the request's origin (they are absolute), and `access`,
 * the owner's read grant (domain/secrets/read-grants.ts) that media URLs carry so `<img src>` loads them on any
 * origin; undefined with MEDIA_URL_GRANTS=false (they then need the key). The URLs themselves are the transports'
 * (http/shared/asset-urls.ts).
 */
export interface Links {
  readonly base: string;
  readonly access?: string;
}

/**
 * The asset whose content is this asset's preview: the nominated preview; else, unless a nominated preview was
 * deleted, the asset itself when its own content is an image, video, audio or plain text; else none.
 */
export const previewTargetOf = (a: PreviewFields): string | undefined =>
  a.previewId ?? (!a.previewRemoved && isOwnPreviewType(a.mimeType) ? a.id : undefined);

/** `loader_path`: for a model (tagged `models` or `model_type:<folder>`), its name when that is a safe path. */
export const loaderPathOf = (a: { name: string; tags: string[] }): string | undefined =>
  isModelTagged(a.tags) ? safeRelativePath(a.name) : undefined;

export interface JobOutput {
  nodeId: string | null;
  outputKey: string | null;
  outputIndex: number | null;
}

/**
 * Where in its job an asset was made (Comfy Cloud's JobOutputAsset): the `user_metadata` keys of the same names when
 * the uploader gave them with the right type (a node id may be sent as a number), null otherwise.
 */
export function jobOutputOf(a: { userMetadata: Record<string, unknown> }): JobOutput {
  const m = a.userMetadata;
  const index = m.output_index;
  return {
    nodeId: typeof m.node_id === 'string' ? m.node_id : Number.isFinite(m.node_id) ? String(m.node_id) : null,
    outputKey: typeof m.output_key === 'string' ? m.output_key : null,
    outputIndex: typeof index === 'number' && Number.isSafeInteger(index) && index >= 0 ? index : null,
  };
}
