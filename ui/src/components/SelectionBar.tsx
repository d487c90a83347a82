import { useState } from 'preact/hooks';
import { parseTags } from '../format';

interface SelectionBarProps {
  count: number;
  canExport: boolean;
  onExport(): void;
  onAddTags(tags: string[]): Promise<void>;
  onRemoveTags(tags: string[]): Promise<void>;
  onDelete(): Promise<void>;
  onClear(): void;
}

/** What can be done with the selected assets: export, add or remove tags, delete (after a confirmation). */
export function SelectionBar(p: SelectionBarProps) {
  const [panel, setPanel] = useState<'tags' | 'delete'>();
  const [tags, setTags] = useState('');
  const [busy, setBusy] = useState(false);
  const run = async (f: () => Promise<void>) => {
    setBusy(true);
    try {
      await f();
      setPanel(undefined);
      setTags('');
    } finally {
      setBusy(false);
    }
  };
  const list = parseTags(tags);
  return (
    <div class="selection" role="group" aria-label="Selection">
      <span class="selection-count">{p.count} selected</span>
      <button
        type="button"
        class="primary"
        onClick={p.onExport}
        disabled={!p.canExport}
        title={p.canExport ? undefined : 'This service has no export'}
      >
        Export as ZIP
      </button>
      <button
        type="button"
        aria-expanded={panel === 'tags'}
        onClick={() => setPanel(panel === 'tags' ? undefined : 'tags')}
      >
        Edit tags
      </button>
      <button
        type="button"
        class="danger"
        aria-expanded={panel === 'delete'}
        onClick={() => setPanel(panel === 'delete' ? undefined : 'delete')}
      >
        Delete
      </button>
      <button type="button" onClick={p.onClear}>
        Clear selection
      </button>
      {panel === 'tags' && (
        <form class="selection-panel" onSubmit={(e) => e.preventDefault()}>
          <label for="bulk-tags">Tags for the {p.count} selected</label>
          <input
            id="bulk-tags"
            value={tags}
            placeholder="tag, another tag"
            onInput={(e) => setTags((e.target as HTMLInputElement).value)}
          />
          <button type="button" disabled={busy || !list.length} onClick={() => run(() => p.onAddTags(list))}>
            Add tags
          </button>
          <button type="button" disabled={busy || !list.length} onClick={() => run(() => p.onRemoveTags(list))}>
            Remove tags
          </button>
        </form>
      )}
      {panel === 'delete' && (
        <div class="selection-panel" role="group" aria-label="Confirm delete">
          <span>
            Delete {p.count} {p.count === 1 ? 'asset' : 'assets'}? This cannot be undone.
          </span>
          <button type="button" class="danger-solid" disabled={busy} onClick={() => run(p.onDelete)}>
            Delete {p.count}
          </button>
          <button type="button" onClick={() => setPanel(undefined)}>
            Keep them
          </button>
        </div>
      )}
    </div>
  );
}
