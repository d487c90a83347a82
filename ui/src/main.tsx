import { render } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Api, ApiError, assetFields, type Asset, type AssetPageData, type Features } from './api';
import { firstScreenShown, pageLoaded } from './page-loaded';
import { Activity } from './components/Activity';
import { Detail } from './components/Detail';
import { Facets, type TagCount, type TagMode } from './components/Facets';
import { Filters, type FilterState } from './components/Filters';
import { Grid } from './components/Grid';
import { KeyGate } from './components/KeyGate';
import { Models } from './components/Models';
import { SelectionBar } from './components/SelectionBar';
import { Shortcuts } from './components/Shortcuts';
import { UploadDialog } from './components/UploadDialog';
import { Usage } from './components/Usage';
import { Viewer } from './components/Viewer';
import { useThumbnailAccess } from './components/useThumbnail';
import { earlyReady, firstScreenArgs, KEY_STORE, pageSizeOf } from './first-screen';
import { useLazy } from './hooks/useLazy';
import { useTasks } from './hooks/useTasks';
import { useModels } from './hooks/useModels';
import { useUploads } from './hooks/useUploads';
import { applyTheme, followSystem, saveTheme, storedTheme, type Theme } from './theme';
import { filterOf, searchOf, SORTS, viewOf, type ViewState } from './view-state';
import './styles.css';

// The bundle's own code starts here (its modules are evaluated): the benchmark reads the mark.
performance.mark('ui:run');

const PAGE_SIZE = pageSizeOf(location.search);
/** Grid or list, kept per browser. */
const LAYOUT_STORE = 'assetBrowser.layout';
type Layout = 'grid' | 'list';
const LAYOUTS: [Layout, string][] = [
  ['grid', 'Grid'],
  ['list', 'List'],
];
const storedLayout = (): Layout => {
  try {
    return localStorage.getItem(LAYOUT_STORE) === 'list' ? 'list' : 'grid';
  } catch {
    return 'grid';
  }
};
// The list view and the keys page are chunks of their own, loaded when first shown (the first screen's script stays
// small).
const loadList = () => import('./components/ListView');
const loadKeys = () => import('./components/KeysPage');

function Root() {
  const [key, setKey] = useState<string | null>(() => sessionStorage.getItem(KEY_STORE));
  const [notice, setNotice] = useState<string>();
  // Signed in just now (not a reload with the tab's key): focus goes to the search then.
  const [fresh, setFresh] = useState(false);
  const signOut = useCallback((why?: string) => {
    sessionStorage.removeItem(KEY_STORE);
    setNotice(why);
    setKey(null);
  }, []);
  const api = useMemo(
    () => (key ? new Api(key, () => signOut('The key was refused (401 UNAUTHORIZED). Enter a valid key.')) : null),
    [key, signOut],
  );
  if (!api)
    return (
      <KeyGate
        notice={notice}
        onKey={(k) => {
          sessionStorage.setItem(KEY_STORE, k);
          setNotice(undefined);
          setFresh(true);
          setKey(k);
        }}
      />
    );
  // Keyed by the key: another key is a fresh browser (its first screen state is its own).
  return <Browser key={api.key} api={api} focusSearch={fresh} onSignOut={() => signOut()} />;
}

interface PageState {
  items: Asset[];
  total: number;
  totalIsLowerBound: boolean;
  hasMore: boolean;
  cursor?: string;
}

const EMPTY: PageState = { items: [], total: 0, totalIsLowerBound: false, hasMore: false };

/** A page of answers after the items already shown (none for a first page); an asset seen before is not repeated. */
function pageOf(a: AssetPageData, before: Asset[]): PageState {
  const seen = new Set(before.map((x) => x.id));
  return {
    items: [...before, ...a.items.filter((x) => !seen.has(x.id))],
    total: a.total,
    totalIsLowerBound: !!a.totalIsLowerBound,
    hasMore: a.hasMore,
    cursor: a.nextCursor ?? undefined,
  };
}

type View = 'assets' | 'models' | 'keys';

function Browser({ api, focusSearch, onSignOut }: { api: Api; focusSearch: boolean; onSignOut(): void }) {
  // The first screen, when the page's head has its answer already: then the first render shows the tiles.
  // The view of the page's URL (a shared or reloaded link): the head script asked for its first screen already.
  const [initial] = useState(() => viewOf(location.search));
  const [first] = useState(() => api.startNow(firstScreenArgs(PAGE_SIZE, initial)));
  const [features, setFeatures] = useState<Features | undefined>(first?.features);
  const [view, setView] = useState<View>('assets');
  const [search, setSearch] = useState(initial.q);
  const [query, setQuery] = useState(initial.q);
  const [tagFilter, setTagFilter] = useState<string[]>(initial.tags);
  const [tagMode, setTagMode] = useState<TagMode>(initial.mode);
  const [sort, setSort] = useState<string>(initial.sort);
  const [filters, setFilters] = useState<FilterState>(() => {
    const { not, kind, since, before, folder, base } = initial;
    return {
      not,
      ...(kind ? { kind } : {}),
      ...(since ? { since } : {}),
      ...(before ? { before } : {}),
      ...(folder ? { folder } : {}),
      ...(base ? { base } : {}),
    };
  });
  const [layout, setLayout] = useState<Layout>(storedLayout);
  const [theme, setTheme] = useState<Theme>(storedTheme);
  const [viewer, setViewer] = useState<{ owner: string; scopes: string[] }>();
  const [usageVersion, setUsageVersion] = useState(0);
  const [shortcutsOpen, setShortcutsOpen] = useState(false);
  const ListView = useLazy(loadList, layout === 'list')?.ListView;
  const KeysPage = useLazy(loadKeys, view === 'keys')?.KeysPage;
  const [page, setPage] = useState<PageState>(() => (first ? pageOf(first.assets, []) : EMPTY));
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string>();
  const [offline, setOffline] = useState(!navigator.onLine);
  const [facets, setFacets] = useState<TagCount[]>(first?.tagCounts ?? []);
  const [facetsOpen, setFacetsOpen] = useState(false);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const anchor = useRef<number | undefined>(undefined);
  const [openId, setOpenId] = useState<string>();
  const [viewing, setViewing] = useState<number>();
  const [activityOpen, setActivityOpen] = useState(false);
  const [pendingFiles, setPendingFiles] = useState<File[]>();
  const [announce, setAnnounce] = useState('');
  // A ref, not state: setting state from the ref callback would render the whole page a second time on mount.
  const scrollRoot = useRef<HTMLElement>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const searchInput = useRef<HTMLInputElement>(null);
  const generation = useRef(0);
  const inFlight = useRef(false);

  // Signed in just now: the search is where the user goes next.
  useEffect(() => {
    if (focusSearch) searchInput.current?.focus();
  }, []);

  // The first screen in one request (unless it came with the first render); the effect below then skips the first
  // page it would ask for. A layout effect: it runs right after the first render, where an effect would wait for the
  // first paint.
  const started = useRef(!!first);
  const start = useCallback(() => {
    api.start(firstScreenArgs(PAGE_SIZE, viewRef.current)).then(
      (d) => {
        performance.mark('ui:first-page');
        started.current = true;
        setError(undefined);
        setFeatures(d.features);
        setPage(pageOf(d.assets, []));
        setFacets(d.tagCounts);
      },
      (e) => setError(String(e.message ?? e)),
    );
  }, [api]);
  useLayoutEffect(() => {
    if (first) {
      performance.mark('ui:first-page');
      return;
    }
    start();
  }, [api]);

  // Asked for beside the first screen's request: the thumbnails' <img src> URLs need it.
  const access = useThumbnailAccess(api);

  const viewState = useMemo<ViewState>(
    () => ({ q: query, tags: tagFilter, mode: tagMode, sort, ...filters }),
    [query, tagFilter, tagMode, sort, filters],
  );
  const viewRef = useRef(viewState);
  viewRef.current = viewState;
  const filter = useMemo(() => filterOf(viewState), [viewState]);
  // The facets count the tags of what every filter but the picked tags finds.
  const facetFilter = useMemo(() => filterOf(viewState, false), [viewState]);
  const facetKey = JSON.stringify(facetFilter);

  // The view is the page's URL (shared, reloaded, bookmarked): replaced in place, not a history entry per keystroke.
  useEffect(() => {
    const next = searchOf(viewState, location.search);
    if (next !== location.search)
      history.replaceState(history.state, '', `${location.pathname}${next}${location.hash}`);
  }, [viewState]);

  // A first answer (a page, or an error) is on the screen: the requests it did not need may go once its images are in.
  useEffect(() => {
    if (page !== EMPTY || error) firstScreenShown(document);
  }, [page, error]);

  // Who the key is (the keys page is for admin keys); a service without `viewer` shows no keys page.
  useEffect(() => {
    if (!features?.viewer) return;
    pageLoaded
      .then(() => api.gql<{ viewer: { owner: string; scopes: string[] } }>('{ viewer { owner scopes } }'))
      .then(
        (d) => setViewer(d.viewer),
        () => setViewer(undefined),
      );
  }, [api, features?.viewer]);
  const isAdmin = !!viewer?.scopes.includes('admin');

  // Following the system's scheme while the switch says "system".
  useEffect(() => followSystem(), []);

  const loadPage = useCallback(
    async (reset: boolean) => {
      if (!features) return;
      if (!reset && (inFlight.current || !page.hasMore)) return;
      const gen = reset ? ++generation.current : generation.current;
      inFlight.current = true;
      setLoading(true);
      const [s, o] = sort.split(':');
      const useCursor = features.cursor;
      try {
        const d = await api.gql<{ assets: AssetPageData }>(
          `query($filter: AssetFilter, $limit: Int!, $offset: Int!, $sort: AssetSort!, $order: SortOrder!${useCursor ? ', $after: String' : ''}) {
            assets(filter: $filter, limit: $limit, offset: $offset, sort: $sort, order: $order${useCursor ? ', after: $after' : ''}) {
              items { ${assetFields(features)} } total hasMore${useCursor ? ' nextCursor totalIsLowerBound' : ''}
            }
          }`,
          {
            filter,
            limit: PAGE_SIZE,
            offset: reset || useCursor ? 0 : page.items.length,
            sort: s,
            order: o,
            ...(useCursor ? { after: reset ? null : page.cursor } : {}),
          },
        );
        if (gen !== generation.current) return;
        setPage((prev) => pageOf(d.assets, reset ? [] : prev.items));
        setError(undefined);
      } catch (err) {
        if (gen === generation.current && !(err instanceof ApiError && err.code === 'UNAUTHORIZED'))
          setError((err as Error).message);
      } finally {
        if (gen === generation.current) {
          inFlight.current = false;
          setLoading(false);
        }
      }
    },
    [api, features, filter, sort, page],
  );

  // The facets of the filters but not of the picked tags: every tag stays in view while some are picked.
  const loadFacets = useCallback(async () => {
    if (!features) return;
    try {
      if (features.tagCounts) {
        const d = await api.gql<{ tagCounts: TagCount[] }>(
          'query($filter: AssetFilter) { tagCounts(filter: $filter, limit: 60) { name count } }',
          { filter: facetFilter },
        );
        setFacets(d.tagCounts);
      } else {
        const d = await api.gql<{ tags: { items: TagCount[] } }>('{ tags(limit: 60) { items { name count } } }');
        setFacets(d.tags.items);
      }
    } catch {
      /* facets are a convenience: the grid still works */
    }
  }, [api, features, facetKey]);

  const models = useModels(api, features, view === 'models', query);

  const refresh = useCallback(() => {
    if (!features) {
      start();
      return;
    }
    void loadPage(true);
    void loadFacets();
    setUsageVersion((v) => v + 1);
    if (view === 'models') void models.reload();
  }, [loadPage, loadFacets, features, view, models.reload]);

  // A new filter or sort: start again from the first page.
  useEffect(() => {
    if (!features) return;
    if (started.current) {
      started.current = false; // the first page and facets came with the features
      return;
    }
    setSelected(new Set());
    anchor.current = undefined;
    void loadPage(true);
  }, [features, filter, sort]);
  // The facets follow the filters (not the picked tags); the first screen brought those of the page's first view.
  const facetsFor = useRef(facetKey);
  useEffect(() => {
    if (!features || facetsFor.current === facetKey) return;
    facetsFor.current = facetKey;
    void loadFacets();
  }, [facetKey, features]);

  // Offline, the page says so (and what it shows may be stale); back online, it asks again.
  useEffect(() => {
    const off = () => setOffline(true);
    const on = () => {
      setOffline(false);
      refreshRef.current();
    };
    window.addEventListener('offline', off);
    window.addEventListener('online', on);
    return () => {
      window.removeEventListener('offline', off);
      window.removeEventListener('online', on);
    };
  }, []);
  const refreshRef = useRef(refresh);
  refreshRef.current = refresh;

  // Search as you type, a moment after the last key.
  useEffect(() => {
    const t = setTimeout(() => setQuery(search.trim()), 250);
    return () => clearTimeout(t);
  }, [search]);

  // Thumbnails are made in the background after an upload: ask again for images that have none yet.
  const pendingThumbs = page.items.filter(
    (a) => !a.thumbnailUrl && /^(image|video)\//.test(a.mimeType) && Date.now() - Date.parse(a.createdAt) < 120_000,
  );
  const pendingKey = pendingThumbs.map((a) => a.id).join(',');
  useEffect(() => {
    if (!pendingKey || !features?.cursor) return;
    const t = setTimeout(async () => {
      const batch = pendingThumbs.slice(0, 20);
      const q = batch
        .map(
          (a, i) =>
            `a${i}: assets(filter: {hash: ${JSON.stringify(a.assetHash)}}, limit: 1) { items { id thumbnailUrl } }`,
        )
        .join('\n');
      try {
        const d = await api.gql<Record<string, { items: { id: string; thumbnailUrl?: string | null }[] }>>(`{ ${q} }`);
        const found = new Map(
          Object.values(d).flatMap((p) =>
            p.items.filter((x) => x.thumbnailUrl).map((x) => [x.id, x.thumbnailUrl!] as const),
          ),
        );
        if (found.size)
          setPage((prev) => ({
            ...prev,
            items: prev.items.map((a) => (found.has(a.id) ? { ...a, thumbnailUrl: found.get(a.id) } : a)),
          }));
        else setPage((prev) => ({ ...prev })); // poll again
      } catch {
        /* next tick */
      }
    }, 1000);
    return () => clearTimeout(t);
  }, [pendingKey, page, features, api]);

  const openActivity = useCallback(() => setActivityOpen(true), []);
  const { tasks, cancelTask, startDownload, startExport, retryTask, saveExport } = useTasks(
    api,
    features,
    refresh,
    setAnnounce,
    openActivity,
  );
  const { uploads, dragging, addFiles, clearFinished } = useUploads(
    api,
    (name) => {
      setAnnounce(`Uploaded ${name}.`);
      refresh();
    },
    setPendingFiles,
  );

  /** Assets gone from the service: out of the grid, the model library, the selection and the details. */
  function dropAssets(ids: string[]) {
    const gone = new Set(ids);
    setPage((p) => ({ ...p, items: p.items.filter((a) => !gone.has(a.id)), total: Math.max(0, p.total - gone.size) }));
    models.setItems((m) => m.filter((a) => !gone.has(a.id)));
    setSelected((s) => new Set([...s].filter((id) => !gone.has(id))));
    if (openId && gone.has(openId)) setOpenId(undefined);
    void loadFacets();
    setUsageVersion((v) => v + 1);
  }

  async function deleteAssets(ids: string[]) {
    const r = await api.each(ids, 'deleteAsset');
    dropAssets(r.done);
    setAnnounce(
      `Deleted ${r.done.length} ${r.done.length === 1 ? 'asset' : 'assets'}${r.failed.length ? `; ${r.failed.length} could not be deleted` : ''}.`,
    );
    if (r.failed.length) throw new Error(`${r.failed.length} could not be deleted`);
  }

  async function bulkTags(ids: string[], tags: string[], add: boolean) {
    const r = await api.each(ids, add ? 'addAssetTags' : 'removeAssetTags', ', tags: $tags', ' { __typename }', {
      tags,
    });
    setAnnounce(
      `${add ? 'Added' : 'Removed'} ${tags.join(', ')} ${add ? 'to' : 'from'} ${r.done.length} ${r.done.length === 1 ? 'asset' : 'assets'}.`,
    );
    refresh();
  }

  // Escape closes the viewer, else the tags drawer, else the details (focus back to the tile it came from); the upload
  // dialog handles its own. One listener reading the state of the latest render (an effect re-registered per
  // render would lag behind it).
  // `?` shows the shortcuts and `/` goes to the search, unless the key is typed into a field.
  const escape = useRef({ openId, viewing, pendingFiles, facetsOpen, shortcutsOpen });
  escape.current = { openId, viewing, pendingFiles, facetsOpen, shortcutsOpen };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const now = escape.current;
      const typing = (e.target as HTMLElement).closest?.('input, textarea, select, [contenteditable]');
      if (!typing && !e.ctrlKey && !e.metaKey && !e.altKey && !now.pendingFiles) {
        if (e.key === '?') {
          e.preventDefault();
          return setShortcutsOpen(true);
        }
        if (e.key === '/' && now.viewing === undefined && !now.shortcutsOpen) {
          e.preventDefault();
          searchInput.current?.focus();
          return;
        }
      }
      if (e.key !== 'Escape' || now.pendingFiles) return;
      if (now.shortcutsOpen) return setShortcutsOpen(false);
      if (now.viewing !== undefined) return setViewing(undefined);
      if (now.facetsOpen) return setFacetsOpen(false);
      if (!now.openId) return;
      const id = now.openId;
      setOpenId(undefined);
      document.querySelector<HTMLElement>(`[data-asset-id="${id}"], .model-card[data-id="${id}"] .model-open`)?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  function toggle(index: number, shift: boolean) {
    const items = page.items;
    setSelected((prev) => {
      const next = new Set(prev);
      const id = items[index]!.id;
      if (shift && anchor.current !== undefined) {
        const [from, to] = [Math.min(anchor.current, index), Math.max(anchor.current, index)];
        const on = !prev.has(id);
        for (let i = from; i <= to; i++) on ? next.add(items[i]!.id) : next.delete(items[i]!.id);
      } else if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
    anchor.current = index;
  }

  const toggleTag = (t: string) => setTagFilter((f) => (f.includes(t) ? f.filter((x) => x !== t) : [...f, t]));
  const shownItems = view === 'models' ? models.items : page.items;
  const open = shownItems.find((a) => a.id === openId) ?? page.items.find((a) => a.id === openId);
  const filtered = !!query || tagFilter.length > 0 || filters.not.length > 0 || Object.keys(filters).length > 1;
  const stale = !!error || offline;
  const allShownSelected = page.items.length > 0 && page.items.every((a) => selected.has(a.id));

  return (
    <div class={`app${open ? ' with-drawer' : ''}${view !== 'assets' ? ' models-view' : ''}`}>
      <header class="top">
        <h1 class="brand">Assets</h1>
        <div class="views" role="group" aria-label="View">
          <button type="button" aria-pressed={view === 'assets'} onClick={() => setView('assets')}>
            All assets
          </button>
          <button type="button" aria-pressed={view === 'models'} onClick={() => setView('models')}>
            Models
          </button>
          {isAdmin && (
            <button type="button" aria-pressed={view === 'keys'} onClick={() => setView('keys')}>
              Keys
            </button>
          )}
        </div>
        <div class="search-row">
          <button
            type="button"
            class="tags-button"
            hidden={view !== 'assets'}
            aria-expanded={facetsOpen}
            aria-controls="facets"
            onClick={() => setFacetsOpen(!facetsOpen)}
          >
            Tags{tagFilter.length ? ` (${tagFilter.length})` : ''}
          </button>
          <div class="search">
            <label for="search" class="sr-only">
              Search by name
            </label>
            <input
              id="search"
              ref={searchInput}
              type="search"
              placeholder="Search by name"
              value={search}
              onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
            />
          </div>
        </div>
        <span class="spacer" />
        <button type="button" class="primary" onClick={() => fileInput.current?.click()}>
          Upload
        </button>
        <input
          ref={fileInput}
          id="file-input"
          type="file"
          multiple
          class="sr-only"
          tabIndex={-1}
          aria-label="Files to upload"
          onChange={(e) => {
            const input = e.target as HTMLInputElement;
            if (input.files?.length) setPendingFiles([...input.files]);
            input.value = '';
          }}
        />
        <label for="theme" class="sr-only">
          Theme
        </label>
        <select
          id="theme"
          class="theme"
          value={theme}
          title="Theme"
          onChange={(e) => {
            const t = (e.target as HTMLSelectElement).value as Theme;
            saveTheme(t);
            setTheme(t);
          }}
        >
          <option value="system">System theme</option>
          <option value="light">Light</option>
          <option value="dark">Dark</option>
        </select>
        <button
          type="button"
          class="icon-button"
          onClick={() => setShortcutsOpen(true)}
          aria-label="Keyboard shortcuts (?)"
        >
          ?
        </button>
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>

      {view === 'assets' && (
        <Facets
          tags={facets}
          active={tagFilter}
          mode={tagMode}
          open={facetsOpen}
          onClose={() => setFacetsOpen(false)}
          onMode={setTagMode}
          onToggle={toggleTag}
          onClear={() => setTagFilter([])}
        >
          {features?.usage && <Usage api={api} version={usageVersion} />}
        </Facets>
      )}

      <main class="content" ref={scrollRoot}>
        {view === 'keys' ? (
          KeysPage ? (
            <KeysPage api={api} announce={setAnnounce} />
          ) : (
            <p class="muted center">Loading…</p>
          )
        ) : view === 'models' ? (
          <Models
            items={models.items}
            access={access?.token}
            loading={models.loading}
            error={models.error}
            onOpen={setOpenId}
            onRetry={models.reload}
            announce={setAnnounce}
          />
        ) : (
          <>
            <Filters api={api} value={filters} onChange={setFilters} />
            <div class="toolbar">
              <p class="count" aria-live="polite">
                {stale
                  ? 'Results may be out of date'
                  : `${page.totalIsLowerBound ? `${page.total.toLocaleString()}+` : page.total.toLocaleString()} ${page.total === 1 ? 'asset' : 'assets'}`}
                {!stale && query && ` matching “${query}”`}
                {!stale && tagFilter.length > 0 && ` tagged ${tagFilter.join(tagMode === 'all' ? ' + ' : ' or ')}`}
              </p>
              <label for="sort" class="sr-only">
                Sort
              </label>
              <select id="sort" value={sort} onChange={(e) => setSort((e.target as HTMLSelectElement).value)}>
                {Object.entries(SORTS).map(([k, v]) => (
                  <option key={k} value={k}>
                    {v}
                  </option>
                ))}
              </select>
              <div class="views layout" role="group" aria-label="Layout">
                {LAYOUTS.map(([l, label]) => (
                  <button
                    key={l}
                    type="button"
                    aria-pressed={layout === l}
                    onClick={() => {
                      setLayout(l);
                      localStorage.setItem(LAYOUT_STORE, l);
                    }}
                  >
                    {label}
                  </button>
                ))}
              </div>
              {page.items.length > 0 && (
                <button
                  type="button"
                  class="link"
                  onClick={() => setSelected(allShownSelected ? new Set() : new Set(page.items.map((a) => a.id)))}
                  aria-label={allShownSelected ? 'Select none' : `Select all ${page.items.length} shown`}
                >
                  {allShownSelected ? 'Select none' : `Select all (${page.items.length})`}
                </button>
              )}
              {selected.size > 0 && (
                <SelectionBar
                  count={selected.size}
                  canExport={!!features?.startExport}
                  onExport={async () => {
                    const ids = [...selected];
                    if (await startExport({ assetIds: ids, namingStrategy: 'preserve' }))
                      setAnnounce(`Exporting ${ids.length} assets…`);
                  }}
                  onAddTags={(tags) => bulkTags([...selected], tags, true)}
                  onRemoveTags={(tags) => bulkTags([...selected], tags, false)}
                  onDelete={() => deleteAssets([...selected])}
                  onClear={() => setSelected(new Set())}
                />
              )}
            </div>
            {(error || offline) && (
              <div class="error banner" role="alert">
                <span>
                  {offline
                    ? 'You are offline. What is shown may be out of date.'
                    : `The assets could not be loaded: ${error}`}
                </span>
                <button type="button" onClick={refresh}>
                  Retry
                </button>
              </div>
            )}
            {!loading && !stale && features && page.items.length === 0 && (
              <div class="empty">
                {filtered ? (
                  <>
                    <p>
                      No assets match{query ? ` “${query}”` : ''}
                      {tagFilter.length ? ` tagged ${tagFilter.join(tagMode === 'all' ? ' + ' : ' or ')}` : ''}.
                    </p>
                    <button
                      type="button"
                      onClick={() => {
                        setSearch('');
                        setTagFilter([]);
                        setFilters({ not: [] });
                      }}
                    >
                      Clear search and filters
                    </button>
                  </>
                ) : (
                  <>
                    <p>No assets yet.</p>
                    <p class="muted">Drop files here to upload them, or download a model by URL in Activity.</p>
                  </>
                )}
              </div>
            )}
            {layout === 'list' ? (
              ListView ? (
                <ListView
                  items={page.items}
                  selected={selected}
                  openId={openId}
                  hasMore={page.hasMore && !stale}
                  loading={loading}
                  stale={stale}
                  sort={sort}
                  onSort={setSort}
                  onOpen={setOpenId}
                  onToggle={toggle}
                  onMore={() => void loadPage(false)}
                  scrollRoot={scrollRoot}
                />
              ) : (
                <p class="muted center">Loading…</p>
              )
            ) : (
              <Grid
                api={api}
                access={access}
                items={page.items}
                selected={selected}
                openId={openId}
                hasMore={page.hasMore && !stale}
                loading={loading}
                stale={stale}
                onOpen={setOpenId}
                onToggle={toggle}
                onMore={() => void loadPage(false)}
                scrollRoot={scrollRoot}
              />
            )}
          </>
        )}
      </main>

      {open && features && (
        <Detail
          api={api}
          access={access}
          features={features}
          asset={open}
          onClose={() => setOpenId(undefined)}
          onSaved={(a) => {
            setPage((p) => ({ ...p, items: p.items.map((x) => (x.id === a.id ? a : x)) }));
            models.setItems((m) => m.map((x) => (x.id === a.id ? a : x)));
            void loadFacets();
          }}
          onTag={(t) => {
            setView('assets');
            setTagFilter([t]);
          }}
          onView={() =>
            setViewing(
              Math.max(
                0,
                shownItems.findIndex((a) => a.id === open.id),
              ),
            )
          }
          onDelete={() => deleteAssets([open.id])}
        />
      )}

      {viewing !== undefined && shownItems[viewing] && (
        <Viewer
          api={api}
          access={access?.token}
          items={shownItems}
          index={viewing}
          onIndex={(i) => {
            setViewing(i);
            setOpenId(shownItems[i]!.id);
          }}
          onClose={() => setViewing(undefined)}
        />
      )}

      <Activity
        open={activityOpen}
        onToggle={setActivityOpen}
        uploads={uploads}
        tasks={tasks}
        onCancelTask={cancelTask}
        onRetryTask={retryTask}
        onSaveExport={saveExport}
        onStartDownload={startDownload}
        onClearUploads={clearFinished}
      />

      {pendingFiles && (
        <UploadDialog
          files={pendingFiles}
          proposed={tagFilter}
          onCancel={() => setPendingFiles(undefined)}
          onUpload={(tags) => {
            addFiles(pendingFiles, tags);
            setPendingFiles(undefined);
            setActivityOpen(true);
          }}
        />
      )}

      {shortcutsOpen && <Shortcuts onClose={() => setShortcutsOpen(false)} />}

      {dragging && (
        <div class="dropzone" aria-hidden="true">
          <p>Drop files to upload</p>
        </div>
      )}
      <div class="sr-only" role="status" aria-live="polite">
        {announce}
      </div>
    </div>
  );
}

applyTheme();
// A slow service gets the page's loading state after a second, as it would without the head's requests.
void earlyReady(1000).then(() => render(<Root />, document.getElementById('app')!));
