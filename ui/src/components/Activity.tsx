import { useEffect, useState } from 'preact/hooks';
import type { Task } from '../api';
import { formatBytes, formatWhen, readableError } from '../format';
import type { UploadState } from '../uploads';

interface ActivityProps {
  open: boolean;
  onToggle(open: boolean): void;
  uploads: UploadState[];
  tasks: Task[];
  onCancelTask(id: string): void;
  onRetryTask(t: Task): void;
  onSaveExport(t: Task): void;
  onStartDownload(url: string): Promise<string | undefined>;
  onClearUploads(): void;
}

const ACTIVE = new Set(['created', 'running']);

/**
 * The bottom bar: one line while collapsed (what is going on), and when open the uploads of this page, the owner's
 * tasks with live progress, and a download by URL. The page opens it when something starts.
 */
export function Activity(p: ActivityProps) {
  const [url, setUrl] = useState('');
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | undefined>();
  useEffect(() => {
    if (message?.kind !== 'ok') return;
    const t = setTimeout(() => setMessage(undefined), 6000);
    return () => clearTimeout(t);
  }, [message]);
  const active =
    p.tasks.filter((t) => ACTIVE.has(t.status)).length + p.uploads.filter((u) => u.status === 'uploading').length;
  const failed =
    p.tasks.filter((t) => t.status === 'failed').length + p.uploads.filter((u) => u.status === 'failed').length;
  const summary = [active > 0 ? `${active} in progress` : 'Nothing in progress', failed > 0 ? `${failed} failed` : '']
    .filter(Boolean)
    .join(' · ');

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
    <section class={`activity${p.open ? ' open' : ''}`} aria-labelledby="activity-title">
      <div class="activity-head">
        <h2 id="activity-title">
          <button
            type="button"
            class="link activity-toggle"
            aria-expanded={p.open}
            aria-controls="activity-body"
            onClick={() => p.onToggle(!p.open)}
          >
            <span aria-hidden="true">{p.open ? '▾' : '▴'}</span> Activity
          </button>
        </h2>
        <span class={failed ? 'error' : 'muted'}>{summary}</span>
      </div>
      {p.open && (
        <div id="activity-body" class="activity-body">
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
            {message && (
              <span class={message.kind === 'ok' ? 'ok' : 'error'} role={message.kind === 'ok' ? 'status' : 'alert'}>
                {message.text}
              </span>
            )}
          </form>
          <div class="activity-cols">
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
                    <UploadRow key={u.key} u={u} />
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
                    <TaskRow
                      key={t.id}
                      task={t}
                      onCancel={() => p.onCancelTask(t.id)}
                      onRetry={() => p.onRetryTask(t)}
                      onSave={() => p.onSaveExport(t)}
                    />
                  ))}
                </ul>
              )}
            </div>
          </div>
        </div>
      )}
    </section>
  );
}

function UploadRow({ u }: { u: UploadState }) {
  return (
    <li class={`row-item status-${u.status}`} data-upload={u.name} data-via={u.via}>
      <span class="row-name" title={u.name}>
        {u.name}
      </span>
      {u.status === 'uploading' ? (
        <progress max={u.size || 1} value={u.sent} aria-label={`Upload of ${u.name}`} />
      ) : (
        <span />
      )}
      <span class="row-status">
        {u.status === 'uploading'
          ? `${formatBytes(u.sent)} / ${formatBytes(u.size)}`
          : u.status === 'failed'
            ? readableError(u.error)
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
  );
}

function TaskRow({
  task: t,
  onCancel,
  onRetry,
  onSave,
}: {
  task: Task;
  onCancel(): void;
  onRetry(): void;
  onSave(): void;
}) {
  const pr = t.progress;
  const running = ACTIVE.has(t.status);
  const ended = t.status === 'failed' || t.status === 'cancelled';
  const fraction = pr.progress ?? undefined;
  const result = t.result as { assetsTotal?: number; exportName?: string } | null | undefined;
  const exported = result?.assetsTotal;
  const seed = (t.result as { seed?: { created: number; skipped: number; errors?: unknown[] } } | null)?.seed;
  const what =
    t.taskName === 'seed_assets'
      ? `Import of ${t.importRoots?.length ? t.importRoots.join(', ') : 'server folders'}`
      : t.taskName === 'export_assets'
        ? `Export${exported !== undefined && exported !== null ? ` of ${exported} ${exported === 1 ? 'asset' : 'assets'}` : ''}`
        : t.payload?.sourceUrl
          ? baseOfUrl(t.payload.sourceUrl)
          : t.taskName;
  const canRetry = ended && (t.taskName === 'export_assets' ? !!t.exportRequest : !!t.payload?.sourceUrl);
  return (
    <li class={`row-item status-${t.status}`} data-task-id={t.id} data-status={t.status}>
      <span class="row-name" title={t.payload?.sourceUrl || t.taskName}>
        {what}
      </span>
      {running ? (
        fraction === undefined ? (
          <progress aria-label={`Progress of ${what}`} />
        ) : (
          <progress max={1} value={fraction} aria-label={`Progress of ${what}`} />
        )
      ) : (
        <span class={`badge badge-${t.status}`}>{t.status}</span>
      )}
      <span class={`row-status${ended ? ' row-error' : ''}`}>
        {running
          ? `${formatBytes(pr.bytesDownloaded)}${pr.bytesTotal ? ` / ${formatBytes(pr.bytesTotal)}` : ''}`
          : t.status === 'completed'
            ? `${seed ? `${seed.created} new, ${seed.skipped} skipped${seed.errors?.length ? ` (${seed.errors.length} unreadable or refused)` : ''} · ` : ''}${formatWhen(t.completedAt ?? t.updateTime)}`
            : readableError(t.errorMessage)}
      </span>
      <span class="row-actions">
        {running && (
          <button type="button" class="link" onClick={onCancel} aria-label={`Cancel ${what}`}>
            Cancel
          </button>
        )}
        {canRetry && (
          <button type="button" class="small" onClick={onRetry} aria-label={`Retry ${what}`}>
            Retry
          </button>
        )}
        {t.status === 'completed' && result?.exportName && (
          <button type="button" class="primary small" onClick={onSave}>
            Download archive
          </button>
        )}
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
