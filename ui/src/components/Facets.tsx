import type { ComponentChildren } from 'preact';

export interface TagCount {
  name: string;
  count: number;
}

export type TagMode = 'all' | 'any';

interface FacetsProps {
  tags: TagCount[];
  active: string[];
  mode: TagMode;
  /** On narrow screens the facets are a drawer: `open` shows it, `onClose` hides it. */
  open: boolean;
  onClose(): void;
  onMode(m: TagMode): void;
  onToggle(t: string): void;
  onClear(): void;
  /** Shown under the tags (the storage use). */
  children?: ComponentChildren;
}

/**
 * The tags column (a drawer on narrow screens): every tag stays listed while some are picked, so a pick can be
 * widened or switched without clearing; several picked tags match all of them or any of them.
 */
export function Facets(p: FacetsProps) {
  const shown = [
    ...p.active.filter((t) => !p.tags.some((x) => x.name === t)).map((name) => ({ name, count: 0 })),
    ...p.tags,
  ];
  return (
    <nav class={`facets${p.open ? ' open' : ''}`} aria-labelledby="facets-title" id="facets">
      <div class="facets-head">
        <h2 id="facets-title">Tags</h2>
        {p.active.length > 0 && (
          <button type="button" class="link" onClick={p.onClear}>
            Clear
          </button>
        )}
        <button type="button" class="icon-button facets-close" onClick={p.onClose} aria-label="Close tags">
          ×
        </button>
      </div>
      <fieldset class="tag-mode">
        <legend class="sr-only">Match</legend>
        <label>
          <input type="radio" name="tag-mode" value="all" checked={p.mode === 'all'} onChange={() => p.onMode('all')} />{' '}
          All of
        </label>
        <label>
          <input type="radio" name="tag-mode" value="any" checked={p.mode === 'any'} onChange={() => p.onMode('any')} />{' '}
          Any of
        </label>
      </fieldset>
      {shown.length === 0 ? (
        <p class="muted">No tags yet.</p>
      ) : (
        <ul>
          {shown.map((t) => {
            const on = p.active.includes(t.name);
            return (
              <li key={t.name}>
                <button
                  type="button"
                  class={`facet${on ? ' on' : ''}`}
                  aria-pressed={on}
                  onClick={() => p.onToggle(t.name)}
                >
                  <span class="facet-check" aria-hidden="true">
                    {on ? '✓' : ''}
                  </span>
                  <span class="facet-name">{t.name}</span>
                  <span class="count">{t.count}</span>
                </button>
              </li>
            );
          })}
        </ul>
      )}
      {p.children}
    </nav>
  );
}
