export interface TagCount {
  name: string;
  count: number;
}

/** The left column: the tags of the assets matching the current filter, with counts; a click filters by one. */
export function Facets({ tags, active, onToggle, onClear }: { tags: TagCount[]; active: string[]; onToggle(t: string): void; onClear(): void }) {
  const shown = [...active.filter((t) => !tags.some((x) => x.name === t)).map((name) => ({ name, count: 0 })), ...tags];
  return (
    <nav class="facets" aria-labelledby="facets-title">
      <div class="facets-head">
        <h2 id="facets-title">Tags</h2>
        {active.length > 0 && (
          <button type="button" class="link" onClick={onClear}>
            Clear
          </button>
        )}
      </div>
      {shown.length === 0 ? (
        <p class="muted">No tags yet.</p>
      ) : (
        <ul>
          {shown.map((t) => {
            const on = active.includes(t.name);
            return (
              <li key={t.name}>
                <button type="button" class={`facet${on ? ' on' : ''}`} aria-pressed={on} onClick={() => onToggle(t.name)}>
                  <span class="facet-name">{t.name}</span>
                  <span class="count">{t.count}</span>
                </button>
              </li>
            );
          })}
        </ul>
      )}
    </nav>
  );
}
