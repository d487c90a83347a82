import { useState } from 'preact/hooks';

/** One field of the user metadata as the form holds it: its key and its value as typed. */
export interface MetaRow {
  key: string;
  value: string;
}

/** The rows of an object: strings as they are, other values (numbers, lists, objects) as JSON. */
export function rowsOf(meta: Record<string, unknown>): MetaRow[] {
  return Object.entries(meta).map(([key, v]) => ({ key, value: typeof v === 'string' ? v : JSON.stringify(v) }));
}

/**
 * The object the rows make, or the reason they make none. A value that reads as JSON other than a string (`42`,
 * `true`, `["a"]`, `{"k": 1}`) is that value; anything else is the text itself, so a plain word needs no quotes.
 * Rows without a key are left out; a key given twice is an error (which of the two would win is not obvious).
 */
export function objectOf(rows: MetaRow[]): { value: Record<string, unknown> } | { error: string } {
  const out: Record<string, unknown> = {};
  for (const r of rows) {
    const key = r.key.trim();
    if (!key) continue;
    if (Object.hasOwn(out, key)) return { error: `The key "${key}" is given twice.` };
    out[key] = valueOf(r.value);
  }
  return { value: out };
}

function valueOf(text: string): unknown {
  const t = text.trim();
  if (/^(-?\d|true$|false$|null$|[[{"])/.test(t)) {
    try {
      return JSON.parse(t);
    } catch {
      // Not JSON after all (`12 cats`, `[draft`): the text itself.
    }
  }
  return text;
}

/**
 * The user metadata as key/value rows (add, edit, remove), with the whole object as JSON one click away for nested
 * values. The form around it reads `rows` (or the JSON text) when it saves.
 */
export function MetadataEditor(p: {
  rows: MetaRow[];
  onRows(rows: MetaRow[]): void;
  json: string | undefined;
  onJson(text: string | undefined): void;
}) {
  const [focusLast, setFocusLast] = useState(false);
  const [jsonError, setJsonError] = useState<string | undefined>();
  const toFields = () => {
    let v: unknown;
    try {
      v = JSON.parse(p.json || '{}');
    } catch {
      return setJsonError('This is not valid JSON.');
    }
    if (!v || typeof v !== 'object' || Array.isArray(v)) return setJsonError('User metadata must be a JSON object.');
    setJsonError(undefined);
    p.onRows(rowsOf(v as Record<string, unknown>));
    p.onJson(undefined);
  };
  const toJson = () => {
    const o = objectOf(p.rows);
    p.onJson(JSON.stringify('value' in o ? o.value : Object.fromEntries(p.rows.map((r) => [r.key, r.value])), null, 2));
  };
  const set = (i: number, patch: Partial<MetaRow>) =>
    p.onRows(p.rows.map((r, k) => (k === i ? { ...r, ...patch } : r)));
  if (p.json !== undefined)
    return (
      <div class="meta-editor">
        <label for="edit-meta">User metadata (JSON object)</label>
        <textarea
          id="edit-meta"
          rows={6}
          spellcheck={false}
          value={p.json}
          onInput={(e) => p.onJson((e.target as HTMLTextAreaElement).value)}
        />
        {jsonError && (
          <p class="error" role="alert">
            {jsonError}
          </p>
        )}
        <button type="button" class="link" onClick={toFields}>
          Edit as fields
        </button>
      </div>
    );
  return (
    <fieldset class="meta-editor">
      <legend>User metadata</legend>
      {p.rows.length === 0 && <p class="help">No fields.</p>}
      {p.rows.map((r, i) => (
        <div class="meta-row" key={i}>
          <input
            aria-label={`Key ${i + 1}`}
            placeholder="key"
            value={r.key}
            ref={(el) => {
              if (el && focusLast && i === p.rows.length - 1) {
                el.focus();
                setFocusLast(false);
              }
            }}
            onInput={(e) => set(i, { key: (e.target as HTMLInputElement).value })}
          />
          <input
            aria-label={`Value ${i + 1}`}
            placeholder="value"
            value={r.value}
            onInput={(e) => set(i, { value: (e.target as HTMLInputElement).value })}
          />
          <button
            type="button"
            class="link"
            aria-label={`Remove ${r.key || `field ${i + 1}`}`}
            onClick={() => p.onRows(p.rows.filter((_, k) => k !== i))}
          >
            Remove
          </button>
        </div>
      ))}
      <div class="row">
        <button
          type="button"
          class="small"
          onClick={() => {
            p.onRows([...p.rows, { key: '', value: '' }]);
            setFocusLast(true);
          }}
        >
          Add field
        </button>
        <button type="button" class="link" onClick={toJson}>
          Edit as JSON
        </button>
      </div>
      <p class="help">Numbers, true/false and JSON lists or objects are kept as such; anything else as text.</p>
    </fieldset>
  );
}
