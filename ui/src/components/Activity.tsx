import { useEffect, useState } from 'preact/hooks';
import type { Task } from '../api';
import { formatBytes, formatWhen } from '../format';
import type { UploadState } from '../uploads';

export interface ExportLink {
  taskId: string;
  url?: string;
  error?: string;
}

interface ActivityProps {
  uploads: UploadState[];
  tasks: Task[];
  exports: Record<string, ExportLink>;
  onCancelTask(id: string): void;
  onStartDownload(url: string): Promise<string | undefined>;
  onClearUploads(): void;
}

const ACTIVE = new Set(['created', 'running']);

/** The bottom panel: uploads of this page, the owner's tasks with live progress, and a download by URL. */
export function Activity(p: ActivityProps) {
  const [open, setOpen] = useState(true);
  const [url, setUrl] = useState('');
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | undefined>();
  useEffect(() => {
    if (message?.kind !== 'ok') return;
    const t = setTimeout(() => setMessage(undefined), 6000);
    return () => clearTimeout(t);
  }, [message]);
  const active = p.tasks.filter((t) => ACTIVE.has(t.status)).length + p.uploads.filter((u) => u.status === 'uploading').length;

  async function start(e: Event) {
    e.preventDefault();
    if (!url.trim()) return;
    try {
      const text = await p.onStartDownload(url.trim());
      setMessage({ kind: 'ok', text: text ?? 'Download started.' });
      setUrl('');
    } catch (err) {
      setMessage({ kind: 'error', text: (err as Error).message });
    }
  }

  return (
    <section class={`activity${open ? '' : ' closed'}`} aria-labelledby="activity-title">
      <div class="activity-head">
        <h2 id="activity-title">
          <button type="button" class="link" aria-expanded={open} aria-controls="activity-body" onClick={() => setOpen(!open)}>
            {open ? '▾' : '▸'} Activity
          </button>
        </h2>
        <span class="muted">{active > 0 ? `${active} in progress` : 'Nothing in progress'}</span>
        <form class="download-form" onSubmit={start}>
          <label for="download-url">Download from URL</label>
          <input
            id="download-url"
            type="url"
            placeholder="https://huggingface.co/…/resolve/main/model.safetensors"
            value={url}
            onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
          />
          <button type="submit">Start download</button>
        </form>
        {message && (
          <span class={message.kind === 'ok' ? 'ok' : 'error'} role={message.kind === 'ok' ? 'status' : 'alert'}>
            {message.text}
          </span>
        )}
      </div>
      {open && (
        <div id="activity-body" class="activity-body">
          <div class="activity-col">
            <div class="col-head">
              <h3>Uploads</h3>
              {p.uploads.some((u) => u.status !== 'uploading') && (
                <button type="button" class="link" onClick={p.onClearUploads}>
                  Clear finished
                </button>
              )}
            </div>
            {p.uploads.length === 0 ? (
              <p class="muted">Drop files anywhere on the page, or use Upload.</p>
            ) : (
              <ul class="rows" aria-label="Uploads">
                {p.uploads.map((u) => (
                  <li key={u.key} class={`row-item status-${u.status}`} data-upload={u.name} data-via={u.via}>
                    <span class="row-name" title={u.name}>
                      {u.name}
                    </span>
                    <progress max={u.size || 1} value={u.status === 'done' ? u.size || 1 : u.sent} aria-label={`Upload of ${u.name}`} />
                    <span class="row-status">
                      {u.status === 'uploading'
                        ? `${formatBytes(u.sent)} / ${formatBytes(u.size)}`
                        : u.status === 'failed'
                          ? u.error
                          : u.status === 'done'
                            ? `Done · ${formatBytes(u.size)}${u.via === 'tus' ? ' · resumable' : ''}`
                            : 'Cancelled'}
                    </span>
                    <span class="row-actions">
                      {u.status === 'uploading' && u.cancel && (
                        <button type="button" class="link" onClick={u.cancel} aria-label={`Cancel upload of ${u.name}`}>
                          Cancel
                        </button>
                      )}
                    </span>
                  </li>
                ))}
              </ul>
            )}
          </div>
          <div class="activity-col">
            <h3>Tasks</h3>
            {p.tasks.length === 0 ? (
              <p class="muted">No tasks yet. Downloads by URL and exports appear here.</p>
            ) : (
              <ul class="rows" aria-label="Tasks">
                {p.tasks.map((t) => (
                  <TaskRow key={t.id} task={t} link={p.exports[t.id]} onCancel={() => p.onCancelTask(t.id)} />
                ))}
              </ul>
            )}
          </div>
        </div>
      )}
    </section>
  );
}

function TaskRow({ task: t, link, onCancel }: { task: Task; link?: ExportLink; onCancel(): void }) {
  const pr = t.progress;
  const fraction = pr.progress ?? (t.status === 'completed' ? 1 : undefined);
  const exported = (t.result as { assetsTotal?: number } | null | undefined)?.assetsTotal;
  const what =
    t.taskName === 'export_assets'
      ? `Export${exported !== undefined ? ` of ${exported} ${exported === 1 ? 'asset' : 'assets'}` : ''}`
      : t.payload?.sourceUrl
        ? baseOfUrl(t.payload.sourceUrl)
        : t.taskName;
  return (
    <li class={`row-item status-${t.status}`} data-task-id={t.id} data-status={t.status}>
      <span class="row-name" title={t.payload?.sourceUrl ?? t.taskName}>
        {what}
      </span>
      {fraction === undefined ? (
        <progress aria-label={`Progress of ${what}`} />
      ) : (
        <progress max={1} value={fraction} aria-label={`Progress of ${what}`} />
      )}
      <span class="row-status" title={t.errorMessage ?? undefined}>
        <span class={`badge badge-${t.status}`}>{t.status}</span>{' '}
        {t.status === 'running' || t.status === 'created'
          ? `${formatBytes(pr.bytesDownloaded)}${pr.bytesTotal ? ` / ${formatBytes(pr.bytesTotal)}` : ''}`
          : t.status === 'completed'
            ? formatWhen(t.completedAt ?? t.updateTime)
            : (t.errorMessage ?? '')}
      </span>
      <span class="row-actions">
        {(t.status === 'running' || t.status === 'created') && (
          <button type="button" class="link" onClick={onCancel} aria-label={`Cancel ${what}`}>
            Cancel
          </button>
        )}
        {link?.url && (
          <a class="button primary small" href={link.url} download>
            Download archive
          </a>
        )}
        {link?.error && <span class="error">{link.error}</span>}
      </span>
    </li>
  );
}

function baseOfUrl(u: string): string {
  try {
    const path = new URL(u).pathname;
    return decodeURIComponent(path.slice(path.lastIndexOf('/') + 1)) || u;
  } catch {
    return u;
  }
}
