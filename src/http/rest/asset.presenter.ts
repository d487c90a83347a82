import { assetHashOf, previewUrlOf, thumbnailPathOf, type Asset } from '../../domain/assets/asset.types';

/** Asset JSON exactly as spec 2.1; `created_new` only in create responses. */
export function assetJson(a: Asset, createdNew?: boolean): Record<string, unknown> {
  return {
    id: a.id,
    name: a.name,
    size: a.size,
    asset_hash: assetHashOf(a),
    mime_type: a.mimeType,
    tags: a.tags,
    user_metadata: a.userMetadata,
    preview_url: previewUrlOf(a),
    preview_id: a.previewId,
    prompt_id: a.promptId,
    created_at: a.createdAt.toISOString(),
    updated_at: a.updatedAt.toISOString(),
    last_access_time: a.lastAccessTime.toISOString(),
    is_immutable: a.isImmutable,
    ...(a.hasThumbnail ? { thumbnail_url: thumbnailPathOf(a) } : {}),
    ...(createdNew === undefined ? {} : { created_new: createdNew }),
  };
}

/** The update result of spec 2.2. */
export function updateResultJson(a: Asset): Record<string, unknown> {
  return {
    id: a.id,
    updated_at: a.updatedAt.toISOString(),
    name: a.name,
    asset_hash: assetHashOf(a),
    tags: a.tags,
    mime_type: a.mimeType,
    user_metadata: a.userMetadata,
  };
}
