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
  previewId?: string | null;
  promptId?: string | null;
  loaderPath?: string | null;
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
  payload?: { sourceUrl?: string | null } | null;
  progress: { bytesDownloaded: number; bytesTotal?: number | null; progress?: number | null };
  result?: Record<string, unknown> | null;
}

export interface AssetFilter {
  includeTags?: string[];
  nameContains?: string;
  hash?: string;
}

/** What the schema of this service offers (its optional parts; the page hides what is not there). */
export interface Features {
  cursor: boolean;
  tagCounts: boolean;
  metadata: boolean;
  startExport: boolean;
  /** Fields of Task.result (the export's name lives there). */
  taskResultFields: string[];
}

export class Api {
  constructor(
    readonly key: string,
    private readonly onUnauthorized: () => void,
  ) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { 'X-API-Key': this.key, ...extra };
  }

  async gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    let res: Response;
    try {
      res = await fetch('/graphql', {
        method: 'POST',
        headers: this.headers({ 'Content-Type': 'application/json', Accept: 'application/json' }),
        body: JSON.stringify({ query, variables }),
      });
    } catch {
      throw new ApiError('The service cannot be reached.', 'NETWORK', 0);
    }
    let body: { data?: T; errors?: { message: string; extensions?: { code?: string } }[] } = {};
    try {
      body = await res.json();
    } catch {
      /* not JSON: reported below by status */
    }
    const first = body.errors?.[0];
    if (res.status === 401 || first?.extensions?.code === 'UNAUTHORIZED') {
      this.onUnauthorized();
      throw new ApiError(first?.message ?? 'The key was refused.', 'UNAUTHORIZED', 401);
    }
    if (first) throw new ApiError(first.message, first.extensions?.code ?? 'ERROR', res.status);
    if (!res.ok || body.data === undefined) throw new ApiError(`The service answered ${res.status}.`, 'HTTP_' + res.status, res.status);
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
    const res = await fetch(url, { headers: this.headers({ Accept: 'application/json' }) });
    const body = await res.json().catch(() => ({}));
    if (res.status === 401) this.onUnauthorized();
    if (!res.ok) throw new ApiError(body.message ?? `GET ${url} answered ${res.status}`, body.code ?? 'HTTP_' + res.status, res.status);
    return body as T;
  }

  /**
   * Everything the first screen needs in one request (no waterfall before the thumbnails): what the schema offers,
   * the first page of assets and the tag facets. The page and its service are one build, so the page asks for the
   * fields of this schema; the introspection says which optional parts (export, task results) to show.
   */
  async start(first: { limit: number; sort: string; order: string }): Promise<{ features: Features; assets: AssetPageData; tagCounts: { name: string; count: number }[] }> {
    const d = await this.gql<{
      page: { fields: { name: string }[] } | null;
      asset: { fields: { name: string }[] } | null;
      result: { fields: { name: string }[] } | null;
      query: { fields: { name: string }[] };
      mutation: { fields: { name: string }[] };
      assets: AssetPageData;
      tagCounts: { name: string; count: number }[];
    }>(
      `query($limit: Int!, $sort: AssetSort!, $order: SortOrder!) {
        page: __type(name: "AssetPage") { fields { name } }
        asset: __type(name: "Asset") { fields { name } }
        result: __type(name: "TaskResult") { fields { name } }
        query: __type(name: "Query") { fields { name } }
        mutation: __type(name: "Mutation") { fields { name } }
        assets(limit: $limit, offset: 0, sort: $sort, order: $order) { items { ${assetFields(FULL)} } total hasMore nextCursor totalIsLowerBound }
        tagCounts(limit: 60) { name count }
      }`,
      first,
    );
    const has = (t: { fields: { name: string }[] } | null, f: string) => !!t?.fields.some((x) => x.name === f);
    const features: Features = {
      cursor: has(d.page, 'nextCursor'),
      tagCounts: has(d.query, 'tagCounts'),
      metadata: has(d.asset, 'metadata'),
      startExport: has(d.mutation, 'startExport'),
      taskResultFields: d.result?.fields.map((f) => f.name) ?? [],
    };
    return { features, assets: d.assets, tagCounts: d.tagCounts };
  }
}

export interface AssetPageData {
  items: Asset[];
  total: number;
  hasMore: boolean;
  nextCursor?: string | null;
  totalIsLowerBound?: boolean;
}

const FULL: Features = { cursor: true, tagCounts: true, metadata: true, startExport: true, taskResultFields: [] };

export const assetFields = (f: Features): string =>
  `id name size assetHash mimeType tags userMetadata thumbnailUrl previewId promptId createdAt updatedAt lastAccessTime isImmutable${
    f.metadata ? ' metadata loaderPath' : ''
  }`;

export const taskFields = (f: Features): string =>
  `id taskName status createTime updateTime completedAt errorMessage payload { sourceUrl } progress { bytesDownloaded bytesTotal progress }${
    f.taskResultFields.length ? ` result { ${f.taskResultFields.join(' ')} }` : ''
  }`;

/** Validates a key by asking for the smallest thing there is. */
export async function checkKey(key: string): Promise<void> {
  const api = new Api(key, () => {});
  await api.gql('{ tasks(limit: 1) { total } }');
}
