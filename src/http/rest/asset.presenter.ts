import {
  assetHashOf,
  loaderPathOf,
  type Asset,
  type AssetPage,
  type JobOutput,
  type Links,
} from '../../domain/assets/asset.types';
import { previewUrlOf, shortUrlOf, thumbnailUrlOf } from '../shared/asset-urls';

/**
 * Asset JSON: Comfy Cloud's asset fields plus `hash`, `job_id`, `display_name`, `loader_path`, `metadata`;
 * `created_new` only in create responses. Optional fields without a value are left out, never `null`; only
 * `preview_id`, `prompt_id` and `job_id` may be null. `links` makes the URLs absolute and gives the media URLs
 * (`preview_url`, `thumbnail_url`) their read grant.
 */
export function assetJson(a: Asset, links: Links, createdNew?: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: a.id,
    name: a.name,
    display_name: a.name,
    size: a.size,
    asset_hash: assetHashOf(a),
    hash: assetHashOf(a),
    mime_type: a.mimeType,
    tags: a.tags,
    user_metadata: a.userMetadata,
    preview_id: a.previewId,
    prompt_id: a.promptId,
    job_id: a.promptId,
    created_at: a.createdAt.toISOString(),
    updated_at: a.updatedAt.toISOString(),
    last_access_time: a.lastAccessTime.toISOString(),
    is_immutable: a.isImmutable,
    short_url: shortUrlOf(a, links),
  };
  const previewUrl = previewUrlOf(a, links);
  if (previewUrl !== undefined) out.preview_url = previewUrl;
  const thumbnailUrl = thumbnailUrlOf(a, links);
  if (thumbnailUrl !== undefined) out.thumbnail_url = thumbnailUrl;
  const loaderPath = loaderPathOf(a);
  if (loaderPath !== undefined) out.loader_path = loaderPath;
  if (a.metadata) out.metadata = a.metadata;
  if (createdNew !== undefined) out.created_new = createdNew;
  return out;
}

/** GET /api/assets: a page of assets, each as `assetJson` presents it. */
export function assetPageJson(page: AssetPage, links: Links): Record<string, unknown> {
  return {
    assets: page.items.map((a) => assetJson(a, links)),
    total: page.total,
    has_more: page.hasMore,
    ...(page.nextCursor !== undefined ? { next_cursor: page.nextCursor } : {}),
    ...(page.totalIsLowerBound ? { total_is_lower_bound: true } : {}),
  };
}

/** Comfy Cloud's JobOutputAsset: the three output fields are null when not given (nullable in Cloud's schema). */
export function jobOutputAssetJson(a: Asset, out: JobOutput, links: Links): Record<string, unknown> {
  const previewUrl = previewUrlOf(a, links);
  return {
    id: a.id,
    name: a.name,
    hash: assetHashOf(a),
    mime_type: a.mimeType,
    size: a.size,
    created_at: a.createdAt.toISOString(),
    ...(previewUrl !== undefined ? { preview_url: previewUrl } : {}),
    node_id: out.nodeId,
    output_key: out.outputKey,
    output_index: out.outputIndex,
  };
}
