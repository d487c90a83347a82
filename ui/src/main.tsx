import { render } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Api, ApiError, assetFields, type Asset, type AssetFilter, type AssetPageData, type Features } from './api';
import { Activity } from './components/Activity';
import { Detail } from './components/Detail';
import { Facets, type TagCount } from './components/Facets';
import { Grid } from './components/Grid';
import { KeyGate } from './components/KeyGate';
import { useThumbnailAccess } from './components/useThumbnail';
import { DEFAULT_SORT, firstScreenArgs, KEY_STORE, pageSizeOf } from './first-screen';
import { useTasks } from './hooks/useTasks';
import { useUploads } from './hooks/useUploads';
import './styles.css';

// The bundle's own code starts here (its modules are evaluated): the benchmark reads the mark.
performance.mark('ui:run');

const PAGE_SIZE = pageSizeOf(location.search);
const SORTS = {
  'created_at:desc': 'Newest first',
  'created_at:asc': 'Oldest first',
  'name:asc': 'Name A–Z',
  'size:desc': 'Largest first',
  'updated_at:desc': 'Recently updated',
} as const;
type SortKey = keyof typeof SORTS;

function Root() {
  const [key, setKey] = useState<string | null>(() => sessionStorage.getItem(KEY_STORE));
  const [notice, setNotice] = useState<string>();
  const signOut = useCallback((why?: string) => {
    sessionStorage.removeItem(KEY_STORE);
    setNotice(why);
    setKey(null);
  }, []);
  const api = useMemo(() => (key ? new Api(key, () => signOut('The key was refused (401 UNAUTHORIZED). Enter a valid key.')) : null), [key, signOut]);
  if (!api)
    return (
      <KeyGate
        notice={notice}
        onKey={(k) => {
          sessionStorage.setItem(KEY_STORE, k);
          setNotice(undefined);
          setKey(k);
        }}
      />
    );
  // Keyed by the key: another key is a fresh browser (its first screen state is its own).
  return <Browser key={api.key} api={api} onSignOut={() => signOut()} />;
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

function Browser({ api, onSignOut }: { api: Api; onSignOut(): void }) {
  // The first screen, when the page's head has its answer already: then the first render shows the tiles.
  const [first] = useState(() => api.startNow(firstScreenArgs(PAGE_SIZE)));
  const [features, setFeatures] = useState<Features | undefined>(first?.features);
  const [search, setSearch] = useState('');
  const [query, setQuery] = useState('');
  const [tagFilter, setTagFilter] = useState<string[]>([]);
  const [sort, setSort] = useState<SortKey>(DEFAULT_SORT);
  const [page, setPage] = useState<PageState>(() => (first ? pageOf(first.assets, []) : EMPTY));
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string>();
  const [facets, setFacets] = useState<TagCount[]>(first?.tagCounts ?? []);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const anchor = useRef<number | undefined>(undefined);
  const [openId, setOpenId] = useState<string>();
  const [announce, setAnnounce] = useState('');
  const [scrollRoot, setScrollRoot] = useState<HTMLElement | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const generation = useRef(0);
  const inFlight = useRef(false);

  // The first screen in one request (unless it came with the first render); the effect below then skips the first
  // page it would ask for. A layout effect: it runs right after the first render, where an effect would wait for the
  // first paint.
  const started = useRef(!!first);
  useLayoutEffect(() => {
    if (first) {
      performance.mark('ui:first-page');
      return;
    }
    api.start(firstScreenArgs(PAGE_SIZE, sort)).then(
      (d) => {
        performance.mark('ui:first-page');
        started.current = true;
        setFeatures(d.features);
        setPage(pageOf(d.assets, []));
        setFacets(d.tagCounts);
      },
      (e) => setError(String(e.message ?? e)),
    );
  }, [api]);

  // Asked for beside the first screen's request: the thumbnails' <img src> URLs need it.
  const access = useThumbnailAccess(api);

  const filter = useMemo<AssetFilter>(() => ({ ...(tagFilter.length ? { includeTags: tagFilter } : {}), ...(query ? { nameContains: query } : {}) }), [tagFilter, query]);

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
        if (gen === generation.current && !(err instanceof ApiError && err.code === 'UNAUTHORIZED')) setError((err as Error).message);
      } finally {
        if (gen === generation.current) {
          inFlight.current = false;
          setLoading(false);
        }
      }
    },
    [api, features, filter, sort, page],
  );

  const loadFacets = useCallback(async () => {
    if (!features) return;
    try {
      if (features.tagCounts) {
        const d = await api.gql<{ tagCounts: TagCount[] }>('query($filter: AssetFilter) { tagCounts(filter: $filter, limit: 60) { name count } }', { filter });
        setFacets(d.tagCounts);
      } else {
        const d = await api.gql<{ tags: { items: TagCount[] } }>('{ tags(limit: 60) { items { name count } } }');
        setFacets(d.tags.items);
      }
    } catch {
      /* facets are a convenience: the grid still works */
    }
  }, [api, features, filter]);

  const refresh = useCallback(() => {
    void loadPage(true);
    void loadFacets();
  }, [loadPage, loadFacets]);

  // A new filter or sort: start again from the first page.
  useEffect(() => {
    if (!features) return;
    if (started.current) {
      started.current = false; // the first page and facets came with the features
      return;
    }
    setSelected(new Set());
    anchor.current = undefined;
    refresh();
  }, [features, filter, sort]);

  // Search as you type, a moment after the last key.
  useEffect(() => {
    const t = setTimeout(() => setQuery(search.trim()), 250);
    return () => clearTimeout(t);
  }, [search]);

  // Thumbnails are made in the background after an upload: ask again for images that have none yet.
  const pendingThumbs = page.items.filter((a) => !a.thumbnailUrl && /^(image|video)\//.test(a.mimeType) && Date.now() - Date.parse(a.createdAt) < 120_000);
  const pendingKey = pendingThumbs.map((a) => a.id).join(',');
  useEffect(() => {
    if (!pendingKey || !features?.cursor) return;
    const t = setTimeout(async () => {
      const batch = pendingThumbs.slice(0, 20);
      const q = batch.map((a, i) => `a${i}: assets(filter: {hash: ${JSON.stringify(a.assetHash)}}, limit: 1) { items { id thumbnailUrl } }`).join('\n');
      try {
        const d = await api.gql<Record<string, { items: { id: string; thumbnailUrl?: string | null }[] }>>(`{ ${q} }`);
        const found = new Map(Object.values(d).flatMap((p) => p.items.filter((x) => x.thumbnailUrl).map((x) => [x.id, x.thumbnailUrl!] as const)));
        if (found.size) setPage((prev) => ({ ...prev, items: prev.items.map((a) => (found.has(a.id) ? { ...a, thumbnailUrl: found.get(a.id) } : a)) }));
        else setPage((prev) => ({ ...prev })); // poll again
      } catch {
        /* next tick */
      }
    }, 1000);
    return () => clearTimeout(t);
  }, [pendingKey, page, features, api]);

  const { tasks, exports, cancelTask, startDownload, startExport } = useTasks(api, features, refresh, setAnnounce);
  const { uploads, dragging, addFiles, clearFinished } = useUploads(api, tagFilter, (name) => {
    setAnnounce(`Uploaded ${name}.`);
    refresh();
  });

  async function exportSelected() {
    const ids = [...selected];
    if (await startExport(ids)) setAnnounce(`Exporting ${ids.length} assets…`);
  }

  // Escape closes the drawer and gives focus back to the tile it came from.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || !openId) return;
      const id = openId;
      setOpenId(undefined);
      document.querySelector<HTMLElement>(`.tile-main[data-asset-id="${id}"]`)?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [openId]);

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
  const open = page.items.find((a) => a.id === openId);

  return (
    <div class={`app${open ? ' with-drawer' : ''}`}>
      <header class="top">
        <h1 class="brand">Assets</h1>
        <div class="search">
          <label for="search" class="sr-only">
            Search by name
          </label>
          <input id="search" type="search" placeholder="Search by name" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        </div>
        <label for="sort" class="sr-only">
          Sort
        </label>
        <select id="sort" value={sort} onChange={(e) => setSort((e.target as HTMLSelectElement).value as SortKey)}>
          {Object.entries(SORTS).map(([k, v]) => (
            <option key={k} value={k}>
              {v}
            </option>
          ))}
        </select>
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
            addFiles(input.files);
            input.value = '';
          }}
        />
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>

      <Facets tags={facets} active={tagFilter} onToggle={toggleTag} onClear={() => setTagFilter([])} />

      <main class="content" ref={setScrollRoot}>
        <div class="toolbar">
          <p class="count" aria-live="polite">
            {page.totalIsLowerBound ? `${page.total.toLocaleString()}+` : page.total.toLocaleString()} {page.total === 1 ? 'asset' : 'assets'}
            {query && ` matching “${query}”`}
            {tagFilter.length > 0 && ` tagged ${tagFilter.join(' + ')}`}
          </p>
          {selected.size > 0 && (
            <div class="selection" role="group" aria-label="Selection">
              <span>{selected.size} selected</span>
              <button type="button" class="primary" onClick={exportSelected} disabled={!features?.startExport} title={features?.startExport ? '' : 'This service has no export'}>
                Export as ZIP
              </button>
              <button type="button" onClick={() => setSelected(new Set())}>
                Clear selection
              </button>
            </div>
          )}
        </div>
        {error && (
          <p class="error banner" role="alert">
            {error}
          </p>
        )}
        {!loading && page.items.length === 0 && !error && (
          <div class="empty">
            <p>{query || tagFilter.length ? 'No assets match.' : 'No assets yet.'}</p>
            <p class="muted">Drop files here to upload them, or download a model by URL below.</p>
          </div>
        )}
        <Grid
          api={api}
          access={access}
          items={page.items}
          selected={selected}
          openId={openId}
          hasMore={page.hasMore}
          loading={loading}
          onOpen={setOpenId}
          onToggle={toggle}
          onMore={() => void loadPage(false)}
          scrollRoot={scrollRoot}
        />
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
            void loadFacets();
          }}
          onTag={(t) => setTagFilter([t])}
        />
      )}

      <Activity
        uploads={uploads}
        tasks={tasks}
        exports={exports}
        onCancelTask={cancelTask}
        onStartDownload={startDownload}
        onClearUploads={clearFinished}
      />

      {dragging && (
        <div class="dropzone" aria-hidden="true">
          <p>Drop files to upload{tagFilter.length ? ` (tagged ${tagFilter.join(', ')})` : ''}</p>
        </div>
      )}
      <div class="sr-only" role="status" aria-live="polite">
        {announce}
      </div>
    </div>
  );
}

render(<Root />, document.getElementById('app')!);
