import {
  ALL_ASSET_FIELDS,
  BASE_ASSET_FIELDS,
  firstScreenBody,
  GRANT_URL,
  grantOf,
  graphqlInit,
  jsonInit,
  send,
  signedThumbnailUrl,
  takeEarly,
  takeEarlyNow,
  type Answer,
  type FirstScreenArgs,
} from './first-screen';

/**
 * The browser's client of the service: GraphQL for everything GraphQL carries, and the few HTTP routes it cannot
 * (thumbnail and content bytes, tus uploads, the export archive URL). Every request carries the key of this tab.
 */

export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export interface Asset {
  id: string;
  name: string;
  size: number;
  assetHash: string;
  mimeType: string;
  tags: string[];
  userMetadata: Record<string, unknown>;
  metadata?: Record<string, unknown> | null;
  thumbnailUrl?: string | null;
  previewUrl?: string | null;
  previewId?: string | null;
  promptId?: string | null;
  loaderPath?: string | null;
  /** A durable link (`<base>/api/s/{id}`) that is safe to store and paste. */
  shortUrl?: string | null;
  /** The content as a download, signed (`?access=…&disposition=attachment`) when the service gives media grants. */
  downloadUrl?: string | null;
  createdAt: string;
  updatedAt: string;
  lastAccessTime: string;
  isImmutable: boolean;
}

export interface Task {
  id: string;
  taskName: string;
  status: 'created' | 'running' | 'completed' | 'failed' | 'cancelled';
  createTime: string;
  updateTime: string;
  completedAt?: string | null;
  errorMessage?: string | null;
  payload?: {
    sourceUrl?: string | null;
    tags?: string[];
    userMetadata?: Record<string, unknown>;
    previewId?: string | null;
  } | null;
  exportRequest?: ExportRequest | null;
  /** seed_assets tasks: the roots imported. */
  importRoots?: string[] | null;
  progress: { bytesDownloaded: number; bytesTotal?: number | null; progress?: number | null };
  result?: Record<string, unknown> | null;
}

/** What an export was asked for (its Retry asks for the same). */
export interface ExportRequest {
  assetIds?: string[] | null;
  jobIds?: string[] | null;
  jobAssetNameFilters?: Record<string, string[]> | null;
  includePreviews?: boolean | null;
  namingStrategy?: string | null;
}

export type AssetFilter = Record<string, unknown>;

/** What the schema of this service offers (its optional parts; the page hides what is not there). */
export interface Features {
  cursor: boolean;
  tagCounts: boolean;
  metadata: boolean;
  startExport: boolean;
  /** Fields of Task.result (the export's name lives there). */
  taskResultFields: string[];
  /** The schema has imports (Task.importRoots, TaskResult.seed). */
  imports: boolean;
  /** Query.usage (the owner's storage use and limits) and Query.viewer (who the key is) are there. */
  usage: boolean;
  viewer: boolean;
}

export class Api {
  constructor(
    readonly key: string,
    private readonly onUnauthorized: () => void,
  ) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { 'X-API-Key': this.key, ...extra };
  }

  gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    return this.post<T>(JSON.stringify({ query, variables }));
  }

  /**
   * One mutation per id in one request (aliased), for bulk actions: the ids it did and the errors of the others
   * (one refused asset does not hide what happened to the rest).
   */
  async each(
    ids: string[],
    field: string,
    args = '',
    selection = '',
    extra: Record<string, string[]> = {},
  ): Promise<{ done: string[]; failed: string[] }> {
    const done: string[] = [];
    const failed: string[] = [];
    for (let i = 0; i < ids.length; i += 50) {
      const batch = ids.slice(i, i + 50);
      const decl = Object.entries(extra)
        .map(([k]) => `, $${k}: [String!]!`)
        .join('');
      const body = batch.map((_, j) => `m${j}: ${field}(id: $id${j}${args})${selection}`).join('\n');
      const query = `mutation(${batch.map((_, j) => `$id${j}: ID!`).join(', ')}${decl}) { ${body} }`;
      const variables = { ...extra, ...Object.fromEntries(batch.map((id, j) => [`id${j}`, id])) };
      const a = await send('/graphql', graphqlInit(this.key, JSON.stringify({ query, variables })));
      if (a.status === 0) throw new ApiError('The service cannot be reached.', 'NETWORK', 0);
      if (a.status === 401) this.onUnauthorized();
      const data = ((a.body as { data?: Record<string, unknown> | null })?.data ?? {}) as Record<string, unknown>;
      batch.forEach((id, j) =>
        (data[`m${j}`] !== undefined && data[`m${j}`] !== null && data[`m${j}`] !== false ? done : failed).push(id),
      );
    }
    return { done, failed };
  }

  /**
   * A GraphQL request body sent; `early`: the first screen's, which the page's head may have sent already
   * (first-screen.ts), taken from there then.
   */
  private async post<T>(request: string, early = false): Promise<T> {
    const sent = early ? takeEarly('graphql', this.key, request) : undefined;
    return this.dataOf<T>(await (sent ?? send('/graphql', graphqlInit(this.key, request))));
  }

  /** A GraphQL answer's data, or the error it reports (a refused key signs out). */
  private dataOf<T>(a: Answer): T {
    if (a.status === 0) throw new ApiError('The service cannot be reached.', 'NETWORK', 0);
    const body = (a.body ?? {}) as { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
    const first = body.errors?.[0];
    if (a.status === 401 || first?.extensions?.code === 'UNAUTHORIZED') {
      this.onUnauthorized();
      throw new ApiError(first?.message ?? 'The key was refused.', 'UNAUTHORIZED', 401);
    }
    if (first) throw new ApiError(first.message, first.extensions?.code ?? 'ERROR', a.status);
    if (a.status !== 200 || body.data === undefined)
      throw new ApiError(`The service answered ${a.status}.`, 'HTTP_' + a.status, a.status);
    return body.data;
  }

  /** A GET of bytes with the key (thumbnails, content): a Blob. */
  async blob(url: string, signal?: AbortSignal): Promise<Blob> {
    const res = await fetch(url, { headers: this.headers(), signal });
    if (res.status === 401) {
      this.onUnauthorized();
      throw new ApiError('The key was refused.', 'UNAUTHORIZED', 401);
    }
    if (!res.ok) throw new ApiError(`GET ${url} answered ${res.status}`, 'HTTP_' + res.status, res.status);
    return res.blob();
  }

  async json<T>(url: string): Promise<T> {
    return this.jsonOf<T>(url, await send(url, jsonInit(this.key)));
  }

  /** The thumbnails' grant (taken from the page's head when it asked already). */
  async grant(): Promise<{ access: string; expires_at: string }> {
    return this.jsonOf(GRANT_URL, await (takeEarly('grant', this.key) ?? send(GRANT_URL, jsonInit(this.key))));
  }

  /** A JSON answer of a GET of `url`, or the error it reports (a refused key signs out). */
  private jsonOf<T>(url: string, a: Answer): T {
    if (a.status === 0) throw new ApiError('The service cannot be reached.', 'NETWORK', 0);
    const body = (a.body ?? {}) as { message?: string; code?: string };
    if (a.status === 401) this.onUnauthorized();
    if (a.status < 200 || a.status > 299)
      throw new ApiError(body.message ?? `GET ${url} answered ${a.status}`, body.code ?? 'HTTP_' + a.status, a.status);
    return body as T;
  }

  /** The thumbnails' grant if the page's head already has it (a good answer only); else undefined: ask with `json`. */
  grantNow(): { access: string; expires_at: string } | undefined {
    return takeEarlyNow('grant', this.key, grantOf);
  }

  /**
   * Everything the first screen needs in one request (no waterfall before the thumbnails): what the schema offers,
   * the first page of assets and the tag facets. The page and its service are one build, so the page asks for the
   * fields of this schema; the introspection says which optional parts (export, task results) to show.
   */
  async start(first: FirstScreenArgs): Promise<FirstScreen> {
    return firstScreenOf(await this.post<FirstScreenData>(firstScreenBody(first), true));
  }

  /**
   * The first screen at once, with no await, when the page's head has its answer already and the answer is good (the
   * page then renders its tiles in its first render); else undefined: ask with `start`, which reports any error.
   */
  startNow(first: FirstScreenArgs): FirstScreen | undefined {
    const body = firstScreenBody(first);
    return takeEarlyNow(
      'graphql',
      this.key,
      (a) => {
        const b = a.body as { data?: FirstScreenData; errors?: unknown[] } | undefined;
        return a.status === 200 && b?.data && !b.errors?.length ? firstScreenOf(b.data) : undefined;
      },
      body,
    );
  }
}

export interface FirstScreen {
  features: Features;
  assets: AssetPageData;
  tagCounts: { name: string; count: number }[];
}
interface FirstScreenData {
  page: { fields: { name: string }[] } | null;
  asset: { fields: { name: string }[] } | null;
  result: { fields: { name: string; type: { kind: string; ofType: { kind: string } | null } }[] } | null;
  query: { fields: { name: string }[] };
  mutation: { fields: { name: string }[] };
  assets: AssetPageData;
  tagCounts: { name: string; count: number }[];
}

function firstScreenOf(d: FirstScreenData): FirstScreen {
  const has = (t: { fields: { name: string }[] } | null, f: string) => !!t?.fields.some((x) => x.name === f);
  const features: Features = {
    cursor: has(d.page, 'nextCursor'),
    tagCounts: has(d.query, 'tagCounts'),
    metadata: has(d.asset, 'metadata'),
    startExport: has(d.mutation, 'startExport'),
    imports: !!d.result?.fields.some((f) => f.name === 'seed'),
    usage: has(d.query, 'usage'),
    viewer: has(d.query, 'viewer'),
    // The scalar ones, which need no selection of their own (failedAssets, a list of objects, does).
    taskResultFields:
      d.result?.fields
        .filter((f) =>
          ['SCALAR', 'ENUM'].includes(f.type.kind === 'NON_NULL' ? (f.type.ofType?.kind ?? '') : f.type.kind),
        )
        .map((f) => f.name) ?? [],
  };
  return { features, assets: d.assets, tagCounts: d.tagCounts };
}

export interface AssetPageData {
  items: Asset[];
  total: number;
  hasMore: boolean;
  nextCursor?: string | null;
  totalIsLowerBound?: boolean;
}

export const assetFields = (f: Features): string => (f.metadata ? ALL_ASSET_FIELDS : BASE_ASSET_FIELDS);

export const taskFields = (f: Features): string =>
  'id taskName status createTime updateTime completedAt errorMessage payload { sourceUrl tags userMetadata previewId } ' +
  'exportRequest { assetIds jobIds jobAssetNameFilters includePreviews namingStrategy } ' +
  `progress { bytesDownloaded bytesTotal progress }${f.imports ? ' importRoots' : ''}${
    f.taskResultFields.length || f.imports
      ? ` result { ${[...f.taskResultFields, ...(f.imports ? ['seed { created skipped errors { path } }'] : [])].join(' ')} }`
      : ''
  }`;

/** Validates a key by asking for the smallest thing there is. */
export async function checkKey(key: string): Promise<void> {
  const api = new Api(key, () => {});
  await api.gql('{ tasks(limit: 1) { total } }');
}

/**
 * Where the page reads an asset's bytes for the viewer and players: the one place that builds media URLs. A signed
 * URL of its own content (contract 3.7: `preview_url` with `?access=`) loads in <img>/<video> as it is (the browser
 * streams it, with range requests); else the content route with the page's own grant (`access`); only without any
 * grant, the content route fetched with the key header.
 */
export function mediaSource(a: Asset, access?: string): { url: string; keyed: boolean } {
  const own = !a.previewId || a.previewId === a.id;
  const content = `/api/assets/${encodeURIComponent(a.id)}/content`;
  if (own && a.previewUrl && /[?&]access=/.test(a.previewUrl))
    return { url: access ? signedThumbnailUrl(a.previewUrl, access) : a.previewUrl, keyed: false };
  if (access) return { url: `${content}?access=${encodeURIComponent(access)}&disposition=inline`, keyed: false };
  return { url: content, keyed: true };
}

/**
 * The asset's download: a signed attachment URL an `<a href download>` saves, streamed to disk by the browser (a 6 GB
 * model never sits in the tab's memory). The service's `downloadUrl` with the page's fresh grant, else the content
 * route with that grant; undefined when the page has no grant at all (the key cannot go in a URL).
 */
export function downloadHref(a: Asset, access?: string): string | undefined {
  if (a.downloadUrl && /[?&]access=/.test(a.downloadUrl))
    return access ? signedThumbnailUrl(a.downloadUrl, access) : a.downloadUrl;
  if (!access) return undefined;
  return `/api/assets/${encodeURIComponent(a.id)}/content?access=${encodeURIComponent(access)}&disposition=attachment`;
}

/** The asset's URL to share or paste into a tool (absolute; it needs the key, or a durable `short_url` when given). */
export function assetUrl(a: Asset): string {
  return a.shortUrl ?? `${location.origin}/api/assets/${encodeURIComponent(a.id)}/content`;
}
