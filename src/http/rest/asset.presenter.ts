import {
  assetHashOf,
  loaderPathOf,
  type Asset,
  type AssetPage,
  type JobOutput,
  type Links,
} from '../../domain/assets/asset.types';
import { grantQuery, previewUrlOf, shortUrlOf, thumbnailUrlOf } from '../shared/asset-urls';
import type { AssetJsonPage } from './read-model/asset-page';

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

/**
 * GET /api/assets as objects: the reference `assetPageText` (what the route sends) must equal byte for byte
 * (listing-json.test.ts, bench/listing-json-cost.cjs); the route itself no longer calls it.
 */
export function assetPageJson(page: AssetPage, links: Links): Record<string, unknown> {
  return {
    assets: page.items.map((a) => assetJson(a, links)),
    total: page.total,
    has_more: page.hasMore,
    ...(page.nextCursor !== undefined ? { next_cursor: page.nextCursor } : {}),
    ...(page.totalIsLowerBound ? { total_is_lower_bound: true } : {}),
  };
}

/**
 * GET /api/assets as text, from a page whose assets come as JSON pieces: the same bytes
 * `JSON.stringify(assetPageJson(...))` gives for the same rows (listing-json.test.ts holds them equal), without a
 * Date, array or object made per asset.
 */
export function assetPageText(page: AssetJsonPage, links: Links): string {
  // `"<base>/api/assets/` as JSON text; an id (a UUID) needs no escaping, nor does a grant.
  const urls = JSON.stringify(`${links.base}/api/assets/`).slice(0, -1);
  const shorts = JSON.stringify(`${links.base}/api/s/`).slice(0, -1);
  const access = grantQuery(links);
  let assets = '';
  for (const a of page.items) {
    const preview = a.previewId === null ? 'null' : `"${a.previewId}"`;
    const prompt = a.promptId === null ? 'null' : `"${a.promptId}"`;
    assets += `${assets ? ',' : ''}{"id":"${a.id}","name":${a.nameJson},"display_name":${a.nameJson},"size":${a.size},"asset_hash":"blake3:${a.blake3}","hash":"blake3:${a.blake3}","mime_type":${a.mimeTypeJson},"tags":${a.tagsJson},"user_metadata":${a.userMetadataJson},"preview_id":${preview},"prompt_id":${prompt},"job_id":${prompt},"created_at":"${a.createdAt}","updated_at":"${a.updatedAt}","last_access_time":"${a.lastAccessTime}","is_immutable":${a.isImmutable}`;
    assets += `,"short_url":${shorts}${a.id}"`;
    if (a.previewTarget !== undefined) assets += `,"preview_url":${urls}${a.previewTarget}/content${access}"`;
    if (a.hasThumbnail) assets += `,"thumbnail_url":${urls}${a.id}/thumbnail${access}"`;
    if (a.loaderPathJson !== undefined) assets += `,"loader_path":${a.loaderPathJson}`;
    if (a.metadataJson !== undefined) assets += `,"metadata":${a.metadataJson}`;
    assets += '}';
  }
  // next_cursor is base64url: nothing in it to escape.
  return `{"assets":[${assets}],"total":${page.total},"has_more":${page.hasMore}${
    page.nextCursor !== undefined ? `,"next_cursor":"${page.nextCursor}"` : ''
  }${page.totalIsLowerBound ? ',"total_is_lower_bound":true' : ''}}`;
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
