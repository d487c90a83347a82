import { pageLoaded } from '../page-loaded';
import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api';
import { MODEL_FOLDERS, parseTags } from '../format';
import { KINDS, type ViewState } from '../view-state';

export type FilterState = Pick<ViewState, 'not' | 'kind' | 'since' | 'before' | 'folder' | 'base'>;
const SINGLE = ['kind', 'since', 'before', 'folder', 'base'] as const;

/**
 * The filters the service applies beside the search and the tags: type, creation dates, excluded tags (`tags_none`)
 * ComfyUI model folder (its `model_type:` tag) and base model (the models' derived metadata: offered only when some
 * model names one). Each change is a new first page and a new URL.
 */
export function Filters({ api, value, onChange }: { api: Api; value: FilterState; onChange(v: FilterState): void }) {
  // The excluded tags are typed as text and applied on Enter or when the field is left.
  const [not, setNot] = useState(value.not.join(', '));
  useEffect(() => setNot(value.not.join(', ')), [value.not.join('\n')]);
  const set = (patch: Partial<FilterState>) => {
    const next: FilterState = { ...value, ...patch };
    for (const k of SINGLE) if (!next[k]) delete next[k];
    onChange(next);
  };
  const count = (value.not.length ? 1 : 0) + SINGLE.filter((k) => value[k]).length;
  const active = count > 0;
  // Open at first on wide screens and when a filter is set (a shared link); on a phone, a line until it is opened.
  const [open] = useState(() => active || matchMedia('(min-width: 900px)').matches);
  // The base models the owner's assets name, asked for once (a failure just leaves the field out).
  const [bases, setBases] = useState<string[]>([]);
  useEffect(() => {
    pageLoaded
      .then(() => api.gql<{ baseModels: { name: string }[] }>('{ baseModels(limit: 100) { name } }'))
      .then(
        (d) => setBases(d.baseModels.map((b) => b.name)),
        () => undefined,
      );
  }, [api]);
  const baseChoices = value.base && !bases.includes(value.base) ? [value.base, ...bases] : bases;
  return (
    <details class="filters-box" open={open}>
      <summary>Filters{active ? ` (${count})` : ''}</summary>
      <fieldset class="filters">
        <legend class="sr-only">Filters</legend>
        <Choice
          id="filter-type"
          label="Type"
          any="All types"
          value={value.kind}
          options={Object.entries(KINDS)}
          onChange={(kind) => set({ kind: kind as FilterState['kind'] })}
        />
        <label>
          <span>Created since</span>
          <input
            id="filter-since"
            type="date"
            value={value.since ?? ''}
            onChange={(e) => set({ since: (e.target as HTMLInputElement).value || undefined })}
          />
        </label>
        <label>
          <span>Created before</span>
          <input
            id="filter-before"
            type="date"
            value={value.before ?? ''}
            onChange={(e) => set({ before: (e.target as HTMLInputElement).value || undefined })}
          />
        </label>
        <Choice
          id="filter-folder"
          label="Model folder"
          any="Any folder"
          value={value.folder}
          options={[...MODEL_FOLDERS].sort().map((f) => [f, f])}
          onChange={(folder) => set({ folder })}
        />
        {baseChoices.length > 0 && (
          <Choice
            id="filter-base"
            label="Base model"
            any="Any base model"
            value={value.base}
            options={baseChoices.map((b) => [b, b])}
            onChange={(base) => set({ base })}
          />
        )}
        <label class="filter-not">
          <span>Not tagged</span>
          <input
            id="filter-not"
            value={not}
            placeholder="e.g. draft, nsfw"
            onInput={(e) => setNot((e.target as HTMLInputElement).value)}
            onChange={() => set({ not: parseTags(not) })}
          />
        </label>
        {active && (
          <button type="button" class="link" onClick={() => onChange({ not: [] })}>
            Clear filters
          </button>
        )}
      </fieldset>
    </details>
  );
}

/** One of the filters' menus: `any` (no condition) first, then `options` as [value, text]. */
function Choice(props: {
  id: string;
  label: string;
  any: string;
  value: string | undefined;
  options: [string, string][];
  onChange(value: string | undefined): void;
}) {
  return (
    <label>
      <span>{props.label}</span>
      <select
        id={props.id}
        value={props.value ?? ''}
        onChange={(e) => props.onChange((e.target as HTMLSelectElement).value || undefined)}
      >
        <option value="">{props.any}</option>
        {props.options.map(([v, text]) => (
          <option key={v} value={v}>
            {text}
          </option>
        ))}
      </select>
    </label>
  );
}
