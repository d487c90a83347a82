import { useCallback, useEffect, useState } from 'preact/hooks';
import { assetFields, type Api, type Asset, type Features } from '../api';

/** The model library's assets: every asset tagged `models` (matching the search), loaded when the view opens. */
export function useModels(api: Api, features: Features | undefined, active: boolean, query: string) {
  const [items, setItems] = useState<Asset[]>([]);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string>();

  const load = useCallback(async () => {
    if (!features) return;
    setLoading(true);
    try {
      const d = await api.gql<{ assets: { items: Asset[] } }>(
        `query($filter: AssetFilter) { assets(filter: $filter, limit: 500, offset: 0, sort: name, order: asc) { items { ${assetFields(features)} } } }`,
        { filter: { includeTags: ['models'], ...(query ? { nameContains: query } : {}) } },
      );
      setItems(d.assets.items);
      setError(undefined);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setLoading(false);
    }
  }, [api, features, query]);

  useEffect(() => {
    if (active) void load();
  }, [active, load]);

  return { items, setItems, loading, error, reload: load };
}
