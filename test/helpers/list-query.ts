import type { AssetListQuery } from '../../src/domain/assets/asset.types';

/** A listing query with the defaults GET /api/assets applies (no filter, newest first), `over` on top. */
export const listQuery = (over: Partial<AssetListQuery>): AssetListQuery => ({
  includeTags: [],
  excludeTags: [],
  limit: 20,
  offset: 0,
  sort: 'created_at',
  order: 'desc',
  ...over,
});
