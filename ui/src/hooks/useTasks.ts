import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { taskFields, type Api, type ExportRequest, type Features, type Task } from '../api';

const ACTIVE = new Set(['created', 'running']);
const FIRST_LOOK_DELAY_MS = 1000;

/**
 * The owner's tasks, polled (every second while one is active, else every five): downloads by URL and exports.
 * A download that completes refreshes the grid (`onDownloaded`); `onStarted` is told when a task starts (the page
 * opens its Activity bar then). Every completed export keeps its archive link: the archive's URL is asked for when
 * the link is used, so a reload loses nothing.
 */
export function useTasks(
  api: Api,
  features: Features | undefined,
  onDownloaded: () => void,
  announce: (text: string) => void,
  onStarted: () => void,
) {
  const [tasks, setTasks] = useState<Task[]>([]);
  const known = useRef<Task[]>([]);
  const downloaded = useRef(onDownloaded);
  downloaded.current = onDownloaded;
  const started = useRef(onStarted);
  started.current = onStarted;

  const load = useCallback(async () => {
    if (!features) return;
    try {
      const d = await api.gql<{ tasks: { items: Task[] } }>(
        `{ tasks(limit: 20) { items { ${taskFields(features)} } } }`,
      );
      const before = new Map(known.current.map((t) => [t.id, t.status]));
      known.current = d.tasks.items;
      setTasks(d.tasks.items);
      const finished = d.tasks.items.filter(
        (t) => t.status === 'completed' && before.has(t.id) && ACTIVE.has(before.get(t.id)!),
      );
      if (finished.some((t) => t.taskName !== 'export_assets')) downloaded.current();
      if (finished.some((t) => t.taskName === 'export_assets')) announce('The export archive is ready to download.');
      // Something started elsewhere (another tab, the CLI) shows too.
      if (before.size && d.tasks.items.some((t) => ACTIVE.has(t.status) && !before.has(t.id))) started.current();
    } catch {
      /* the list stays as it was until the next poll */
    }
  }, [api, features, announce]);

  const anyActive = tasks.some((t) => ACTIVE.has(t.status));
  const loadedOnce = useRef(false);
  useEffect(() => {
    if (!features) return;
    // The first look waits a moment after the first page's data: until then the browser's few connections to the
    // service are better spent on the grid's thumbnails than on the task list below it.
    const first = setTimeout(
      () => {
        loadedOnce.current = true;
        void load();
      },
      loadedOnce.current ? 0 : FIRST_LOOK_DELAY_MS,
    );
    const t = setInterval(load, anyActive ? 1000 : 5000);
    return () => {
      clearTimeout(first);
      clearInterval(t);
    };
  }, [load, anyActive]);

  /** A task this page started: known as active, so its completion is noticed. */
  const track = (id: string, taskName: string) => {
    known.current = [...known.current, { id, status: 'created', taskName } as Task];
    started.current();
    void load();
  };

  async function cancelTask(id: string) {
    try {
      await api.gql(`mutation($id: ID!) { cancelTask(id: $id) { id status } }`, { id });
    } catch (err) {
      announce(`Cancel failed: ${(err as Error).message}`);
    }
    void load();
  }

  /** Starts a download by URL; the text says what happened (an error is thrown for the form to show). */
  async function startDownload(
    url: string,
    more: Pick<NonNullable<Task['payload']>, 'tags' | 'userMetadata' | 'previewId'> = {},
  ): Promise<string> {
    const input = {
      sourceUrl: url,
      ...(more.tags?.length ? { tags: more.tags } : {}),
      ...(more.userMetadata && Object.keys(more.userMetadata).length ? { userMetadata: more.userMetadata } : {}),
      ...(more.previewId ? { previewId: more.previewId } : {}),
    };
    const d = await api.gql<{
      startDownload: { asset?: { id: string; name: string } | null; task?: { id: string } | null };
    }>('mutation($input: StartDownloadInput!) { startDownload(input: $input) { asset { id name } task { id } } }', {
      input,
    });
    if (d.startDownload.asset) {
      downloaded.current();
      return `Already stored: ${d.startDownload.asset.name}`;
    }
    track(d.startDownload.task!.id, 'download_file');
    return 'Download started.';
  }

  async function startExport(request: ExportRequest): Promise<boolean> {
    const input = Object.fromEntries(Object.entries(request).filter(([, v]) => v !== null && v !== undefined));
    try {
      const d = await api.gql<{ startExport: { id: string } }>(
        'mutation($input: StartExportInput!) { startExport(input: $input) { id } }',
        { input },
      );
      track(d.startExport.id, 'export_assets');
      return true;
    } catch (err) {
      announce(`Export failed: ${(err as Error).message}`);
      return false;
    }
  }

  /** Retry of a failed or cancelled task: the same download, or the same export request, started again. */
  async function retryTask(t: Task): Promise<void> {
    if (t.taskName === 'export_assets' && t.exportRequest) {
      await startExport(t.exportRequest);
      return;
    }
    if (!t.payload?.sourceUrl) return;
    try {
      announce(await startDownload(t.payload.sourceUrl, t.payload));
    } catch (err) {
      announce(`Retry failed: ${(err as Error).message}`);
    }
  }

  /**
   * Saves a finished export: its archive's short-lived URL asked for now, then followed by a link (the service names
   * the saved file by when the export was made; `download` names it the same way where the header does not).
   */
  async function saveExport(t: Task): Promise<void> {
    const name = (t.result as { exportName?: string } | null | undefined)?.exportName;
    if (!name) return;
    try {
      const r = await api.json<{ url: string }>(`/api/assets/exports/${encodeURIComponent(name)}`);
      const a = document.createElement('a');
      a.href = r.url;
      a.download = exportFileName(t.completedAt ?? t.updateTime);
      document.body.appendChild(a);
      a.click();
      a.remove();
    } catch (err) {
      announce(`The archive cannot be downloaded: ${(err as Error).message}`);
    }
  }

  return { tasks, cancelTask, startDownload, startExport, retryTask, saveExport };
}

/** `assets-2026-11-27-1530.zip` (UTC, as the service names it). */
export function exportFileName(iso: string): string {
  const t = new Date(iso).toISOString();
  return `assets-${t.slice(0, 10)}-${t.slice(11, 13)}${t.slice(14, 16)}.zip`;
}
