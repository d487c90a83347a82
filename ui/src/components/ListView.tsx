import type { RefObject } from 'preact';
import type { Asset } from '../api';
import { formatBytes, formatDate, kindOf } from '../format';
import { useInfiniteScroll } from '../hooks/useInfiniteScroll';

interface ListViewProps {
  items: Asset[];
  selected: Set<string>;
  openId?: string;
  hasMore: boolean;
  loading: boolean;
  stale?: boolean;
  /** `field:order`, as the sort menu has it. */
  sort: string;
  onSort(sort: string): void;
  onOpen(id: string): void;
  onToggle(index: number, shift: boolean): void;
  onMore(): void;
  scrollRoot: RefObject<HTMLElement | null>;
}

/** The columns the service sorts by, and the order a first click on each asks for. */
const SORTABLE: Record<string, 'asc' | 'desc'> = { name: 'asc', size: 'desc', created_at: 'desc' };

/**
 * The assets as a table (name, type, size, created, tags) beside the grid: the same page, selection and bulk actions;
 * a click on a sortable column's head sorts by it (again: the other way), as the service sorts.
 */
export function ListView(p: ListViewProps) {
  const sentinel = useInfiniteScroll(p.onMore, p.hasMore, p.items.length, p.scrollRoot);

  const [field, order] = p.sort.split(':');
  const head = (key: string, label: string) => {
    const first = SORTABLE[key];
    if (!first) return <th scope="col">{label}</th>;
    const on = field === key;
    const next = on ? (order === 'asc' ? 'desc' : 'asc') : first;
    return (
      <th scope="col" aria-sort={on ? (order === 'asc' ? 'ascending' : 'descending') : undefined}>
        <button type="button" class="sort-head" onClick={() => p.onSort(`${key}:${next}`)}>
          {label}
          <span aria-hidden="true">{on ? (order === 'asc' ? ' ▲' : ' ▼') : ''}</span>
        </button>
      </th>
    );
  };

  return (
    <>
      <div class="list-wrap">
        <table class={`list${p.stale ? ' stale' : ''}`} aria-label="Assets">
          <thead>
            <tr>
              <th scope="col" class="list-check">
                <span class="sr-only">Selected</span>
              </th>
              {head('name', 'Name')}
              {head('type', 'Type')}
              {head('size', 'Size')}
              {head('created_at', 'Created')}
              {head('tags', 'Tags')}
            </tr>
          </thead>
          <tbody>
            {p.items.map((a, i) => (
              <tr
                key={a.id}
                data-id={a.id}
                class={`${p.selected.has(a.id) ? 'selected' : ''}${p.openId === a.id ? ' open' : ''}`}
              >
                <td class="list-check">
                  <input
                    type="checkbox"
                    checked={p.selected.has(a.id)}
                    aria-label={`Select ${a.name}`}
                    onClick={(e) => {
                      e.preventDefault();
                      p.onToggle(i, (e as MouseEvent).shiftKey);
                    }}
                  />
                </td>
                <td class="list-name">
                  <button type="button" class="link" data-asset-id={a.id} onClick={() => p.onOpen(a.id)} title={a.name}>
                    {a.name}
                  </button>
                </td>
                <td title={a.mimeType}>{kindOf(a)}</td>
                <td class="num" data-bytes={a.size}>
                  {formatBytes(a.size)}
                </td>
                <td>{formatDate(a.createdAt)}</td>
                <td class="list-tags">{a.tags.join(', ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div ref={sentinel} class="sentinel" aria-hidden="true" />
      {p.loading && (
        <p class="muted center" role="status">
          Loading…
        </p>
      )}
    </>
  );
}
