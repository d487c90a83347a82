import { assetHashOf, loaderPathOf, previewUrlOf, thumbnailUrlOf, type Asset, type AssetPage, type AssetPageJson } from '../../domain/assets/asset.types';

/**
 * Asset JSON: Comfy Cloud's asset fields plus `hash`, `job_id`, `display_name`, `loader_path`, `metadata`; `created_new`
 * only in create responses. Optional fields without a value are left out, never `null`; only
 * `preview_id`, `prompt_id` and `job_id` may be null. `baseUrl` makes `preview_url` and `thumbnail_url` absolute.
 */
export function assetJson(a: Asset, baseUrl: string, createdNew?: boolean): Record<string, unknown> {
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
  };
  const previewUrl = previewUrlOf(a, baseUrl);
  if (previewUrl !== undefined) out.preview_url = previewUrl;
  const thumbnailUrl = thumbnailUrlOf(a, baseUrl);
  if (thumbnailUrl !== undefined) out.thumbnail_url = thumbnailUrl;
  const loaderPath = loaderPathOf(a);
  if (loaderPath !== undefined) out.loader_path = loaderPath;
  if (a.metadata) out.metadata = a.metadata;
  if (createdNew !== undefined) out.created_new = createdNew;
  return out;
}

/** GET /api/assets. */
export function assetPageJson(page: AssetPage, baseUrl: string): Record<string, unknown> {
  return {
    assets: page.items.map((a) => assetJson(a, baseUrl)),
    total: page.total,
    has_more: page.hasMore,
    ...(page.nextCursor !== undefined ? { next_cursor: page.nextCursor } : {}),
    ...(page.totalIsLowerBound ? { total_is_lower_bound: true } : {}),
  };
}

/**
 * GET /api/assets as text, from a page whose assets are JSON already: the same bytes `JSON.stringify(assetPageJson(...))`
 * gives for the same rows (listing-json.test.ts holds them equal).
 */
export function assetPageText(page: AssetPageJson): string {
  // next_cursor is base64url: nothing in it to escape.
  return `{"assets":[${page.itemsJson}],"total":${page.total},"has_more":${page.hasMore}${
    page.nextCursor !== undefined ? `,"next_cursor":"${page.nextCursor}"` : ''
  }${page.totalIsLowerBound ? ',"total_is_lower_bound":true' : ''}}`;
}
