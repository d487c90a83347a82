import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { taskFields, type Api, type Features, type Task } from '../api';
import type { ExportLink } from '../components/Activity';

const ACTIVE = new Set(['created', 'running']);
const FIRST_LOOK_DELAY_MS = 1000;

/**
 * The owner's tasks, polled (every second while one is active, else every five): downloads by URL and exports.
 * A download that completes refreshes the grid (`onDownloaded`); an export that completes gets its archive's URL.
 */
export function useTasks(api: Api, features: Features | undefined, onDownloaded: () => void, announce: (text: string) => void) {
  const [tasks, setTasks] = useState<Task[]>([]);
  const [exports, setExports] = useState<Record<string, ExportLink>>({});
  const known = useRef<Task[]>([]);
  const downloaded = useRef(onDownloaded);
  downloaded.current = onDownloaded;

  const fetchExport = useCallback(
    async (t: Task) => {
      const result = t.result as { exportName?: string; error?: string } | null;
      const name = result?.exportName;
      if (!name) {
        // Completed without an archive: nothing was there to export.
        if (result?.error) setExports((e) => ({ ...e, [t.id]: { taskId: t.id, error: result.error! } }));
        return;
      }
      try {
        const r = await api.json<{ url: string }>(`/api/assets/exports/${encodeURIComponent(name)}`);
        setExports((e) => ({ ...e, [t.id]: { taskId: t.id, url: r.url } }));
        announce('The export archive is ready to download.');
      } catch (err) {
        setExports((e) => ({ ...e, [t.id]: { taskId: t.id, error: (err as Error).message } }));
      }
    },
    [api, announce],
  );

  const load = useCallback(async () => {
    if (!features) return;
    try {
      const d = await api.gql<{ tasks: { items: Task[] } }>(`{ tasks(limit: 20) { items { ${taskFields(features)} } } }`);
      const before = new Map(known.current.map((t) => [t.id, t.status]));
      known.current = d.tasks.items;
      setTasks(d.tasks.items);
      const finished = d.tasks.items.filter((t) => t.status === 'completed' && before.has(t.id) && ACTIVE.has(before.get(t.id)!));
      if (finished.some((t) => t.taskName !== 'export_assets')) downloaded.current();
      for (const t of finished.filter((x) => x.taskName === 'export_assets')) void fetchExport(t);
    } catch {
      /* the list stays as it was until the next poll */
    }
  }, [api, features, fetchExport]);

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
  async function startDownload(url: string): Promise<string> {
    const d = await api.gql<{ startDownload: { asset?: { id: string; name: string } | null; task?: { id: string } | null } }>(
      'mutation($input: StartDownloadInput!) { startDownload(input: $input) { asset { id name } task { id } } }',
      { input: { sourceUrl: url } },
    );
    if (d.startDownload.asset) {
      downloaded.current();
      return `Already stored: ${d.startDownload.asset.name}`;
    }
    track(d.startDownload.task!.id, 'download_file');
    return 'Download started.';
  }

  async function startExport(assetIds: string[]): Promise<boolean> {
    try {
      const d = await api.gql<{ startExport: { id: string } }>('mutation($input: StartExportInput!) { startExport(input: $input) { id } }', {
        // The asset names, as the ComfyUI frontend asks for a selection (the service's default is job folders).
        input: { assetIds, namingStrategy: 'preserve' },
      });
      track(d.startExport.id, 'export_assets');
      return true;
    } catch (err) {
      announce(`Export failed: ${(err as Error).message}`);
      return false;
    }
  }

  return { tasks, exports, cancelTask, startDownload, startExport };
}
