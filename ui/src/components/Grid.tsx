import { Component, type RefObject } from 'preact';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Api, Asset } from '../api';
import { baseModelOf, baseName, formatBytes, kindOf, modelFolderOf, modelTypeOf } from '../format';
import { KindIcon } from './icons';
import { FolderIcon } from './Models';
import { useInfiniteScroll } from '../hooks/useInfiniteScroll';
import { useThumbnail, type ThumbnailAccess } from './useThumbnail';

interface GridProps {
  api: Api;
  access: ThumbnailAccess;
  items: Asset[];
  selected: Set<string>;
  openId?: string;
  hasMore: boolean;
  loading: boolean;
  onOpen(id: string): void;
  onToggle(index: number, shift: boolean): void;
  onMore(): void;
  /** The scrolling element the infinite scroll watches (set once the page is mounted). */
  scrollRoot: RefObject<HTMLElement | null>;
  /** The grid's results may be out of date (the last request failed): shown dimmed. */
  stale?: boolean;
}

export function Grid(p: GridProps) {
  // Infinite scroll: the next page when the end of the grid comes within a screen of view.
  const sentinel = useInfiniteScroll(p.onMore, p.hasMore, p.items.length, p.scrollRoot);
  const grid = useRef<HTMLUListElement>(null);
  // The tiles' handlers, the same functions on every render (they read the latest props): a tile whose asset and
  // state are unchanged is not rendered again when the page around it is (a task's progress, a facet, the search).
  const latest = useRef(p);
  latest.current = p;
  const [actions] = useState<TileActions>(() => ({
    focus: (i) => setCurrent(i),
    open: (id) => latest.current.onOpen(id),
    toggle: (i, shift) => latest.current.onToggle(i, shift),
  }));
  // One tab stop for the whole grid (a roving tabindex): Tab enters at the last tile focused, arrows move within.
  const [current, setCurrent] = useState(0);
  const tabStop = Math.min(current, Math.max(0, p.items.length - 1));

  // When the first tiles are in the document (the benchmark and the UI test read it).
  const marked = useRef(false);
  useLayoutEffect(() => {
    if (marked.current || p.items.length === 0) return;
    marked.current = true;
    performance.mark('ui:tiles');
  }, [p.items.length]);

  function onKeyDown(e: KeyboardEvent) {
    const tiles = [...(grid.current?.querySelectorAll<HTMLElement>('.tile-main') ?? [])];
    const i = tiles.indexOf(document.activeElement as HTMLElement);
    if (i < 0) return;
    const cols = Math.max(1, getComputedStyle(grid.current!).gridTemplateColumns.split(' ').length);
    const to = {
      ArrowRight: i + 1,
      ArrowLeft: i - 1,
      ArrowDown: i + cols,
      ArrowUp: i - cols,
      Home: 0,
      End: tiles.length - 1,
    }[e.key];
    if (to !== undefined) {
      e.preventDefault();
      tiles[Math.min(tiles.length - 1, Math.max(0, to))]?.focus();
    } else if (e.key === ' ') {
      e.preventDefault();
      p.onToggle(i, e.shiftKey);
    }
  }

  return (
    <>
      <ul class={`grid${p.stale ? ' stale' : ''}`} ref={grid} onKeyDown={onKeyDown} aria-label="Assets">
        {p.items.map((a, i) => (
          <PureTile
            key={a.id}
            api={p.api}
            access={p.access}
            asset={a}
            index={i}
            selected={p.selected.has(a.id)}
            open={p.openId === a.id}
            selecting={p.selected.size > 0}
            tabStop={i === tabStop}
            actions={actions}
          />
        ))}
      </ul>
      <div ref={sentinel} class="sentinel" aria-hidden="true" />
      {p.loading && (
        <p class="muted center" role="status">
          Loading…
        </p>
      )}
    </>
  );
}

interface TileActions {
  focus(index: number): void;
  open(id: string): void;
  toggle(index: number, shift: boolean): void;
}

interface TileProps {
  api: Api;
  access: ThumbnailAccess;
  asset: Asset;
  index: number;
  selected: boolean;
  open: boolean;
  selecting: boolean;
  tabStop: boolean;
  actions: TileActions;
}

/** A tile rendered again only when one of its props changes (every prop is a value or a stable object). */
class PureTile extends Component<TileProps> {
  shouldComponentUpdate(next: TileProps): boolean {
    const now = this.props as TileProps;
    return (Object.keys(next) as (keyof TileProps)[]).some((k) => next[k] !== now[k]);
  }
  render(p: TileProps) {
    return <Tile {...p} />;
  }
}

function Tile(p: TileProps) {
  const a = p.asset;
  const kind = kindOf(a);
  const thumb = useThumbnail(p.api, p.access, a.thumbnailUrl);
  const label = baseName(a.name);
  // A model says what it is where an image shows itself: its ComfyUI folder (icon and name), base model and size.
  const model = kind === 'model';
  const folder = model ? modelFolderOf(a.tags) : 'other';
  const facts = (
    model
      ? [folder !== 'other' ? folder : modelTypeOf(a), baseModelOf(a), formatBytes(a.size)]
      : [a.mimeType.split(';')[0], formatBytes(a.size)]
  )
    .filter(Boolean)
    .join(' · ');
  return (
    <li
      class={`tile${p.selected ? ' selected' : ''}${p.open ? ' open' : ''}${p.selecting ? ' selecting' : ''}`}
      data-id={a.id}
    >
      <button
        type="button"
        class="tile-main"
        data-asset-id={a.id}
        tabIndex={p.tabStop ? 0 : -1}
        onFocus={() => p.actions.focus(p.index)}
        onClick={() => p.actions.open(a.id)}
      >
        <span class="thumb">
          {thumb.src ? (
            <img src={thumb.src} alt="" draggable={false} onError={thumb.onError} />
          ) : (
            <span class={`placeholder kind-${kind}`}>
              {folder !== 'other' ? <FolderIcon folder={folder} size={56} /> : <KindIcon kind={kind} />}
            </span>
          )}
        </span>
        <span class="tile-name" title={a.name}>
          {label}
        </span>
        <span class="tile-meta" title={model ? facts : undefined}>
          {facts}
          {p.selected && <span class="sr-only">, selected</span>}
        </span>
      </button>
      <input
        type="checkbox"
        class="tile-check"
        tabIndex={-1}
        checked={p.selected}
        aria-label={`Select ${a.name}`}
        onClick={(e) => {
          e.preventDefault();
          p.actions.toggle(p.index, (e as MouseEvent).shiftKey);
        }}
      />
    </li>
  );
}
