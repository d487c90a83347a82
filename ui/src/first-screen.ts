/**
 * The first screen's two requests (the GraphQL first screen, `Api.start`, and the thumbnails' access grant). A small
 * script inlined in the page's head (boot.ts, built from this module by scripts/build-ui.cjs, allowed by its SHA-256 in
 * the page's CSP) sends them as soon as the page is parsed when the tab has a key, while the bundle is still being
 * loaded and run; the bundle's `Api` then takes their answers instead of sending them again. Without a key (or when
 * the head script did not run) the bundle sends them itself, exactly as before.
 *
 * This module is imported by both: it holds only what both need, nothing of Preact.
 */

import { filterOf, viewOf, type ViewState } from './view-state';

export { DEFAULT_SORT } from './view-state';
export const KEY_STORE = 'assetBrowser.apiKey';
export const GRANT_URL = '/api/thumbnail-access';

/** `?pageSize=` of the page's URL (1–500, default 60). */
export const pageSizeOf = (search: string): number =>
  Math.min(500, Math.max(1, Number(new URLSearchParams(search).get('pageSize')) || 60));

/** The asset fields every schema of this service has; the first screen asks for the optional ones too. */
export const BASE_ASSET_FIELDS =
  'id name size assetHash mimeType tags userMetadata thumbnailUrl previewId promptId createdAt updatedAt lastAccessTime isImmutable';
export const ALL_ASSET_FIELDS = `${BASE_ASSET_FIELDS} metadata loaderPath previewUrl shortUrl downloadUrl`;

export interface FirstScreenArgs {
  limit: number;
  sort: string;
  order: string;
  filter: Record<string, unknown> | null;
  facets: Record<string, unknown> | null;
}

/** The first screen of a view (the page's URL: a shared link's filters and sort) as the GraphQL variables. */
export function firstScreenArgs(limit: number, view: ViewState): FirstScreenArgs {
  const [field, order] = view.sort.split(':');
  return { limit, sort: field!, order: order!, filter: filterOf(view), facets: filterOf(view, false) };
}

/** The thumbnails' grant in an answer of GRANT_URL, if it is a good one. */
export function grantOf(a: Answer): { access: string; expires_at: string } | undefined {
  const g = a.body as { access?: unknown; expires_at?: unknown } | undefined;
  return a.status === 200 && typeof g?.access === 'string' && typeof g.expires_at === 'string'
    ? { access: g.access, expires_at: g.expires_at }
    : undefined;
}

/**
 * The first screen's GraphQL request body: what the schema offers (its optional parts), the first page of assets and
 * the tag facets, in one request.
 */
export function firstScreenBody(first: FirstScreenArgs): string {
  const query = `query($limit: Int!, $sort: AssetSort!, $order: SortOrder!, $filter: AssetFilter, $facets: AssetFilter) {
        page: __type(name: "AssetPage") { fields { name } }
        asset: __type(name: "Asset") { fields { name } }
        result: __type(name: "TaskResult") { fields { name type { kind ofType { kind } } } }
        query: __type(name: "Query") { fields { name } }
        mutation: __type(name: "Mutation") { fields { name } }
        assets(filter: $filter, limit: $limit, offset: 0, sort: $sort, order: $order) { items { ${ALL_ASSET_FIELDS} } total hasMore nextCursor totalIsLowerBound }
        tagCounts(filter: $facets, limit: 60) { name count }
      }`;
  return JSON.stringify({ query, variables: first });
}

/** The requests' options, the same whoever sends them (the key in a header, never in a URL). */
export const graphqlInit = (key: string, body: string): RequestInit => ({
  method: 'POST',
  headers: { 'X-API-Key': key, 'Content-Type': 'application/json', Accept: 'application/json' },
  body,
});
export const jsonInit = (key: string): RequestInit => ({ headers: { 'X-API-Key': key, Accept: 'application/json' } });

/** An HTTP answer with its JSON body read (`undefined` when not JSON); status 0 when the service cannot be reached. */
export interface Answer {
  status: number;
  body: unknown;
}

/** `fetch`, its JSON body read: an answer, never a rejection. */
export async function send(url: string, init: RequestInit): Promise<Answer> {
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch {
    return { status: 0, body: undefined };
  }
  return { status: res.status, body: await res.json().catch(() => undefined) };
}

/** The URL without its grant (fetched with the key instead, e.g. once a grant has expired). */
export const withoutGrant = (url: string): string => {
  const u = new URL(url, location.href);
  u.searchParams.delete('access');
  return u.toString();
};

/**
 * A thumbnail's URL with the page's grant (`GET /api/thumbnail-access`): what an <img src> loads without the key. The
 * service's URLs carry a grant of their own (MEDIA_URL_GRANTS): the page's, kept fresh, takes its place.
 */
export const signedThumbnailUrl = (url: string, access: string): string => {
  const granted = `access=${encodeURIComponent(access)}`;
  // Usually the URL's own grant is the page's already.
  if (url.includes(`?${granted}`) || url.includes(`&${granted}`)) return url;
  return /[?&]access=/.test(url)
    ? url.replace(/([?&])access=[^&]*/, `$1${granted}`)
    : `${url}${url.includes('?') ? '&' : '?'}${granted}`;
};

interface Early {
  key: string;
  graphqlBody: string;
  graphql?: Promise<Answer>;
  grant?: Promise<Answer>;
  /** The answers once they are in (the bundle's first render can use them at once, with no await). */
  settled: { graphql?: Answer; grant?: Answer };
  /**
   * The first page's thumbnails, asked for as soon as both answers are in (kept referenced until the grid has them).
   */
  images?: HTMLImageElement[];
  /** Settles once both answers are in and the thumbnails are asked for. */
  ready?: Promise<void>;
}

declare global {
  interface Window {
    assetBrowserEarly?: Early;
  }
}

/** In the page's head (boot.ts): sends the first screen's requests when the tab has a key. */
export function startEarly(): void {
  let key: string | null = null;
  try {
    key = sessionStorage.getItem(KEY_STORE);
  } catch {
    /* storage refused: the page asks for the key */
  }
  if (!key) return;
  const graphqlBody = firstScreenBody(firstScreenArgs(pageSizeOf(location.search), viewOf(location.search)));
  const early: Early = {
    key,
    graphqlBody,
    graphql: send('/graphql', graphqlInit(key, graphqlBody)),
    grant: send(GRANT_URL, jsonInit(key)),
    settled: {},
  };
  void early.graphql!.then((a) => (early.settled.graphql = a));
  void early.grant!.then((a) => (early.settled.grant = a));
  window.assetBrowserEarly = early;
  // The thumbnails the grid's <img> elements will show, by the very same URLs, while the bundle is still loading:
  // the browser then gives each <img> the image already on its way. URLs that carry their own grant (the service's
  // MEDIA_URL_GRANTS: the owner's grant of this hour, the page's too) are asked for as soon as the page is in; others
  // wait for the page's grant.
  const ask = (items: { thumbnailUrl?: string | null }[], access?: string) => {
    early.images = items.flatMap((a) => {
      if (!a.thumbnailUrl) return [];
      const img = new Image();
      img.src = access === undefined ? a.thumbnailUrl : signedThumbnailUrl(a.thumbnailUrl, access);
      return [img];
    });
  };
  const asked = early.graphql!.then(async (page) => {
    const items = (page.body as { data?: { assets?: { items?: { thumbnailUrl?: string | null }[] } } } | undefined)
      ?.data?.assets?.items;
    if (!Array.isArray(items)) return;
    if (items.every((a) => !a.thumbnailUrl || /[?&]access=/.test(a.thumbnailUrl))) return ask(items);
    const access = grantOf(await early.grant!)?.access;
    if (access !== undefined) ask(items, access);
  });
  early.ready = Promise.all([asked, early.grant]).then(() => undefined);
}

/**
 * Settles when the head's requests are answered and the thumbnails asked for, or after `capMs` (at once when the head
 * sent nothing). The bundle renders after it: its first render, a long task, would otherwise hold back the answers'
 * callbacks on the main thread, and with them the thumbnails' requests; after it, the first render shows the page.
 */
export function earlyReady(capMs: number): Promise<void> {
  const ready = window.assetBrowserEarly?.ready;
  if (!ready) return Promise.resolve();
  return Promise.race([ready, new Promise<void>((resolve) => setTimeout(resolve, capMs))]);
}

const mine = (early: Early | undefined, kind: 'graphql' | 'grant', key: string, graphqlBody?: string): early is Early =>
  !!early && early.key === key && (kind === 'grant' || early.graphqlBody === graphqlBody) && !!early[kind];

/**
 * The answer of the same request sent early by the page's head, once (a later request of the same kind is sent
 * afresh); undefined when there is none to take.
 */
export function takeEarly(kind: 'graphql' | 'grant', key: string, graphqlBody?: string): Promise<Answer> | undefined {
  const early = window.assetBrowserEarly;
  if (!mine(early, kind, key, graphqlBody)) return undefined;
  const res = early[kind];
  early[kind] = undefined;
  early.settled[kind] = undefined;
  return res;
}

/** The early answer if it is already in and `use` accepts it (then it is taken); else undefined and it stays. */
export function takeEarlyNow<T>(
  kind: 'graphql' | 'grant',
  key: string,
  use: (a: Answer) => T | undefined,
  graphqlBody?: string,
): T | undefined {
  const early = window.assetBrowserEarly;
  const answer = mine(early, kind, key, graphqlBody) ? early.settled[kind] : undefined;
  const value = answer && use(answer);
  if (value !== undefined) takeEarly(kind, key, graphqlBody);
  return value;
}
