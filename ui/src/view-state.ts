/**
 * What the grid shows (search, tags, type, dates, excluded tags, model folder, base model, sort), kept in the page's query string
 * so a view can be shared and reloaded. Imported by the page's head script too (first-screen.ts): the first screen of
 * a shared link is asked for with its filters, in the head's one request. Nothing of Preact here.
 */

/** The kinds the service's `kinds` filter knows (GraphQL AssetKind). */
export const KINDS = {
  image: 'Images',
  video: 'Videos',
  audio: 'Audio',
  text: 'Text',
  model: 'Model weights',
  other: 'Other',
};
export type KindFilter = keyof typeof KINDS;

export const DEFAULT_SORT = 'created_at:desc';
export const SORTS: Record<string, string> = {
  'created_at:desc': 'Newest first',
  'created_at:asc': 'Oldest first',
  'name:asc': 'Name A–Z',
  'name:desc': 'Name Z–A',
  'size:desc': 'Largest first',
  'size:asc': 'Smallest first',
  'updated_at:desc': 'Recently updated',
};

export interface ViewState {
  /** Name search. */
  q: string;
  /** Picked tags, matched all of them or any of them. */
  tags: string[];
  mode: 'all' | 'any';
  /** Tags the assets must not carry (`tags_none`). */
  not: string[];
  kind?: KindFilter;
  /** Days (`YYYY-MM-DD`, the browser's time zone): created on or after `since`, before `before`. */
  since?: string;
  before?: string;
  /** A ComfyUI model folder (its `model_type:<folder>` tag). */
  folder?: string;
  /** A base model as the assets' derived metadata names it (`metadata.base_model`). */
  base?: string;
  sort: string;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The view of a query string (anything unknown or malformed is left out). */
export function viewOf(search: string): ViewState {
  const p = new URLSearchParams(search);
  const day = (k: string) => {
    const v = p.get(k) ?? '';
    return DAY.test(v) && !Number.isNaN(Date.parse(v)) ? v : undefined;
  };
  const kind = p.get('type') ?? '';
  const sort = p.get('sort') ?? '';
  const folder = p.get('folder')?.trim();
  const base = p.get('base')?.trim().slice(0, 256);
  return {
    q: p.get('q') ?? '',
    tags: [...new Set(p.getAll('tag').filter(Boolean))],
    mode: p.get('match') === 'any' ? 'any' : 'all',
    not: [...new Set(p.getAll('not').filter(Boolean))],
    ...(kind in KINDS ? { kind: kind as KindFilter } : {}),
    ...(day('since') ? { since: day('since') } : {}),
    ...(day('before') ? { before: day('before') } : {}),
    ...(folder ? { folder } : {}),
    ...(base ? { base } : {}),
    sort: sort in SORTS ? sort : DEFAULT_SORT,
  };
}

/** The query string of a view, keeping the parameters that are not the view's (`pageSize`). */
export function searchOf(v: ViewState, current: string): string {
  const p = new URLSearchParams(current);
  for (const k of ['q', 'tag', 'match', 'not', 'type', 'since', 'before', 'folder', 'base', 'sort']) p.delete(k);
  if (v.q) p.set('q', v.q);
  for (const t of v.tags) p.append('tag', t);
  if (v.tags.length && v.mode === 'any') p.set('match', 'any');
  for (const t of v.not) p.append('not', t);
  if (v.kind) p.set('type', v.kind);
  if (v.since) p.set('since', v.since);
  if (v.before) p.set('before', v.before);
  if (v.folder) p.set('folder', v.folder);
  if (v.base) p.set('base', v.base);
  if (v.sort !== DEFAULT_SORT) p.set('sort', v.sort);
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** The start of a day in the browser's time zone, as an ISO instant. */
const dayStart = (day: string) => new Date(`${day}T00:00:00`).toISOString();

/**
 * The GraphQL AssetFilter of a view; `withTags: false` leaves the picked tags out (the facets: every tag stays listed
 * while some are picked). Empty: null (the same variables as a page with no filter).
 */
export function filterOf(v: ViewState, withTags = true): Record<string, unknown> | null {
  const all = [...(withTags && v.mode === 'all' ? v.tags : []), ...(v.folder ? [`model_type:${v.folder}`] : [])];
  const f: Record<string, unknown> = {
    ...(all.length ? { includeTags: all } : {}),
    ...(withTags && v.mode === 'any' && v.tags.length ? { anyTags: v.tags } : {}),
    ...(v.not.length ? { excludeTags: v.not } : {}),
    ...(v.q ? { nameContains: v.q } : {}),
    ...(v.kind ? { kinds: [v.kind] } : {}),
    ...(v.since ? { createdAfter: dayStart(v.since) } : {}),
    ...(v.before ? { createdBefore: dayStart(v.before) } : {}),
    ...(v.base ? { baseModel: v.base } : {}),
  };
  return Object.keys(f).length ? f : null;
}

/** Anything beyond the search and the picked tags (the filters row shows a Clear then). */
export const hasFilters = (v: ViewState): boolean =>
  !!(v.not.length || v.kind || v.since || v.before || v.folder || v.base);
