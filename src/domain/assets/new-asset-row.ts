import type { ContentRecord } from '../content/content.repository';
import { assetMetadata } from '../content/derived-metadata';
import { isImageMime } from '../content/mime';
import type { NewAssetRow } from './asset.repository';
import type { AssetCreateFields } from './asset.types';
import { PATHS_LIMITS } from './asset-paths';

/**
 * The row of a new asset `id` of `content`, by the rules every create shares (one upload, from-hash, the import's
 * batches): the type defaults to the content's, an image without a chosen preview is its own, and `metadata` is the
 * content's derived fields with this asset's file name, source URL and tree paths. `previewId` is checked by the caller.
 */
export function newAssetRow(
  ownerId: string,
  id: string,
  name: string,
  content: ContentRecord,
  fields: AssetCreateFields,
): NewAssetRow {
  const mimeType = fields.mimeType ?? content.mimeType;
  return {
    id,
    ownerId,
    name,
    contentHash: content.blake3,
    size: content.size,
    mimeType,
    tags: fields.tags ?? [],
    userMetadata: fields.userMetadata ?? {},
    previewId: fields.previewId || (isImageMime(mimeType) ? id : null),
    promptId: fields.promptId ?? null,
    metadata: {
      ...assetMetadata(content.metadata, {
        fileName: fields.fileName,
        contentLength: content.size,
        sourceUrl: fields.sourceUrl,
      }),
      ...(fields.paths?.length ? { paths: fields.paths.slice(0, PATHS_LIMITS.perAsset) } : {}),
    },
  };
}
