import { useState } from 'preact/hooks';
import { downloadHref, type Asset } from '../api';
import { copyText } from '../copy';
import { baseModelOf, baseName, formatBytes, modelFolderOf, modelTypeOf } from '../format';

/** A colour and a glyph per kind of ComfyUI model folder; other folders get the plain folder. */
const FOLDER_LOOK: Record<string, [string, string]> = {
  checkpoints: ['#6d3fc0', 'CK'],
  diffusion_models: ['#6d3fc0', 'DM'],
  unet: ['#6d3fc0', 'UN'],
  loras: ['#0b57d0', 'LO'],
  vae: ['#0f766e', 'VA'],
  controlnet: ['#9a3412', 'CN'],
  embeddings: ['#a21caf', 'EM'],
  upscale_models: ['#146c2e', 'UP'],
  clip: ['#b45309', 'CL'],
  clip_vision: ['#b45309', 'CV'],
  text_encoders: ['#b45309', 'TE'],
};

export function FolderIcon({ folder, size = 28 }: { folder: string; size?: number }) {
  const [color, glyph] = FOLDER_LOOK[folder] ?? ['#59636e', ''];
  return (
    <svg width={size} height={size} viewBox="0 0 32 32" aria-hidden="true" class="folder-icon">
      <path d="M3 8a2 2 0 0 1 2-2h7l3 3h12a2 2 0 0 1 2 2v14a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2z" fill={color} />
      {glyph && (
        <text
          x="16"
          y="22"
          text-anchor="middle"
          font-size="9"
          font-weight="700"
          fill="#fff"
          font-family="system-ui, sans-serif"
        >
          {glyph}
        </text>
      )}
    </svg>
  );
}

interface ModelsProps {
  items: Asset[];
  /** The page's read grant (downloads are signed links). */
  access?: string;
  loading: boolean;
  error?: string;
  onOpen(id: string): void;
  onRetry(): void;
  announce(text: string): void;
}

/**
 * The model library: the assets tagged `models`, grouped by their ComfyUI folder (contract 3.7), each card with its
 * type, base model and size, and its loader path one click from the clipboard.
 */
export function Models({ items, access, loading, error, onOpen, onRetry, announce }: ModelsProps) {
  const [copied, setCopied] = useState<string>();
  const groups = new Map<string, Asset[]>();
  for (const a of items) {
    const f = modelFolderOf(a.tags);
    groups.set(f, [...(groups.get(f) ?? []), a]);
  }
  const folders = [...groups.keys()].sort((a, b) => (a === 'other' ? 1 : b === 'other' ? -1 : a.localeCompare(b)));

  async function copy(a: Asset) {
    try {
      await copyText(a.loaderPath!);
      setCopied(a.id);
      announce(`Copied the loader path ${a.loaderPath}.`);
    } catch (err) {
      announce(`Could not copy: ${(err as Error).message}`);
    }
  }

  if (error)
    return (
      <div class="empty" role="alert">
        <p>The models could not be loaded: {error}</p>
        <button type="button" onClick={onRetry}>
          Retry
        </button>
      </div>
    );
  if (!loading && items.length === 0)
    return (
      <div class="empty">
        <p>No models match.</p>
        <p class="muted">Models are the assets tagged “models” (the CLI’s --comfyui and downloads tag them).</p>
      </div>
    );
  return (
    <div class="models">
      {folders.map((f) => (
        <section key={f} class="model-group" aria-labelledby={`folder-${f}`}>
          <h2 id={`folder-${f}`} class="folder-title">
            <FolderIcon folder={f} /> <span>{f}</span> <span class="count">{groups.get(f)!.length}</span>
          </h2>
          <ul class="model-cards">
            {groups.get(f)!.map((a) => {
              const base = baseModelOf(a);
              const download = downloadHref(a, access);
              return (
                <li key={a.id} class="model-card" data-id={a.id}>
                  <button type="button" class="model-open" onClick={() => onOpen(a.id)} title={a.name}>
                    <FolderIcon folder={f} size={22} />
                    <span class="model-name">{baseName(a.name)}</span>
                  </button>
                  <dl class="model-facts">
                    <dt>Type</dt>
                    <dd>{modelTypeOf(a)}</dd>
                    <dt>Base model</dt>
                    <dd>{base ?? '—'}</dd>
                    <dt>Size</dt>
                    <dd>{formatBytes(a.size)}</dd>
                  </dl>
                  <div class="model-actions">
                    {a.loaderPath && (
                      <button type="button" class="small copy-loader" onClick={() => copy(a)} title={a.loaderPath}>
                        {copied === a.id ? 'Copied ✓' : 'Copy loader path'}
                      </button>
                    )}
                    {download && (
                      <a class="button small" href={download} download={baseName(a.name)}>
                        Download<span class="sr-only"> {baseName(a.name)}</span>
                      </a>
                    )}
                  </div>
                </li>
              );
            })}
          </ul>
        </section>
      ))}
      {loading && (
        <p class="muted center" role="status">
          Loading…
        </p>
      )}
    </div>
  );
}
