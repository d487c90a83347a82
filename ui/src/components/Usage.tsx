import { pageLoaded } from '../page-loaded';
import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api';
import { formatBytes } from '../format';

/** GraphQL `usage` (contract 8): what the owner stores, and the limits when there are any. */
export interface UsageData {
  owner: string;
  bytes: number;
  assets: number;
  maxBytes?: number | null;
  maxAssets?: number | null;
}

/**
 * The owner's storage use and limits, shown when the schema has `usage` (the first screen's introspection). An
 * answer that fails (a validation error from a service without the field, or any other) hides the block: it is a
 * convenience. Asked again when `version` changes (after uploads and deletes).
 */
export function Usage({ api, version }: { api: Api; version: number }) {
  const [usage, setUsage] = useState<UsageData | null>();
  useEffect(() => {
    let live = true;
    pageLoaded
      .then(() => api.gql<{ usage: UsageData }>('{ usage { owner bytes assets maxBytes maxAssets } }'))
      .then(
        (d) => live && setUsage(d.usage),
        () => live && setUsage(null),
      );
    return () => {
      live = false;
    };
  }, [api, version]);
  if (!usage) return null;
  const share = usage.maxBytes ? Math.min(1, usage.bytes / usage.maxBytes) : undefined;
  return (
    <section class="usage" aria-labelledby="usage-title">
      <h2 id="usage-title">Storage</h2>
      <p>
        {formatBytes(usage.bytes)}
        {usage.maxBytes ? ` of ${formatBytes(usage.maxBytes)}` : ''}
      </p>
      {share !== undefined && (
        <meter
          min={0}
          max={1}
          value={share}
          high={0.9}
          aria-label={`${Math.round(share * 100)} % of the storage used`}
        />
      )}
      <p class="muted">
        {usage.assets.toLocaleString()} {usage.assets === 1 ? 'asset' : 'assets'}
        {usage.maxAssets ? ` of ${usage.maxAssets.toLocaleString()}` : ''}
      </p>
    </section>
  );
}
