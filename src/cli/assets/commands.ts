import fs from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError, errorOf, type ApiClient, type Asset, type Task } from './client';
import { formatBytes, printable, type Progress } from './progress';

/** One line of `assets ls`: id, size, name, tags. */
export const assetLine = (a: Asset): string =>
  printable(`${a.id}  ${formatBytes(a.size).padStart(10)}  ${a.name}  [${a.tags.join(', ')}]`);

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Polls a task until it ends, with a progress bar of its bytes where it reports them. */
export async function followTask(client: ApiClient, taskId: string, label: string, progress: Progress): Promise<Task> {
  let bar: ReturnType<Progress['item']> | undefined;
  let total = 0;
  for (;;) {
    const task = await client.getTask(taskId);
    const p = task.progress ?? {};
    const size = typeof p.bytes_total === 'number' ? p.bytes_total : 0;
    if (!bar && size > 0) {
      total = size;
      progress.addTotal(size);
      bar = progress.item(label, size);
    }
    const doneBytes =
      typeof p.bytes_downloaded === 'number'
        ? p.bytes_downloaded
        : typeof p.bytes_done === 'number'
          ? (p.bytes_done as number)
          : undefined;
    if (bar && doneBytes !== undefined) bar.update(Math.min(doneBytes, total));
    if (TERMINAL.has(task.status)) {
      bar?.finish(`${task.status} ${label}`);
      return task;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

export interface DownloadOutcome {
  asset?: Asset;
  task?: Task;
}

/** `assets download <url>`: 200 → the asset at once; 202 → the task, followed to its end. */
export async function downloadUrl(
  client: ApiClient,
  url: string,
  tags: string[],
  progress: Progress,
): Promise<DownloadOutcome> {
  const res = await client.json<Asset | { task_id: string }>('/api/assets/download', {
    method: 'POST',
    body: JSON.stringify({ source_url: url, tags }),
  });
  if (res.status !== 202) return { asset: res.body as Asset };
  const task = await followTask(
    client,
    (res.body as { task_id: string }).task_id,
    url.split('/').pop() ?? url,
    progress,
  );
  if (task.status !== 'completed') return { task };
  const assetId = task.result?.asset_id;
  return { task, asset: typeof assetId === 'string' ? await client.getAsset(assetId) : undefined };
}

/** `assets export`: an export task for the assets, followed, then its archive streamed into `out`. */
export async function exportZip(
  client: ApiClient,
  assetIds: string[],
  out: string,
  progress: Progress,
): Promise<{ task: Task; bytes: number; failed: { asset_id: string; error: string }[] }> {
  const started = await client.json<{ task_id: string }>('/api/assets/export', {
    method: 'POST',
    body: JSON.stringify({ asset_ids: assetIds, naming_strategy: 'preserve' }),
  });
  const task = await followTask(client, started.body.task_id, `export of ${assetIds.length} assets`, progress);
  if (task.status !== 'completed')
    throw new ApiError(0, 'EXPORT_FAILED', task.error_message ?? `export task ${task.id} ${task.status}`);
  const name = task.result?.export_name;
  if (typeof name !== 'string') {
    // A completed export without an archive says why (`success: false`): nothing matched, or nothing could be read.
    const why = task.result?.error;
    throw new ApiError(
      0,
      'EXPORT_FAILED',
      typeof why === 'string' && why ? why : `export task ${task.id} named no archive`,
    );
  }
  const link = (await client.json<{ url: string }>(`/api/assets/exports/${encodeURIComponent(name)}`)).body;
  // The URL is signed (presigned on S3): it needs no key, and a key must not travel to another host.
  const res = await client.raw(link.url, { noKey: true });
  if (!res.ok || !res.body) throw await errorOf(res);
  const size = Number(res.headers.get('content-length') ?? 0);
  progress.addTotal(size);
  const bar = progress.item(`↓ ${out}`, size);
  let done = 0;
  const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
  body.on('data', (c: Buffer) => bar.update((done += c.length)));
  const tmp = `${out}.part`;
  try {
    await pipeline(body, fs.createWriteStream(tmp));
    if (res.headers.get('content-length') !== null && done !== size)
      throw new ApiError(0, 'SIZE_MISMATCH', `the archive has ${done} of its ${size} bytes`);
    fs.renameSync(tmp, out);
  } catch (err) {
    // Nothing half-written stays: a broken or short download (or a full disk) leaves no file.
    fs.rmSync(tmp, { force: true });
    throw err instanceof ApiError || (err as NodeJS.ErrnoException).syscall
      ? err
      : new ApiError(0, 'NETWORK', `the archive download broke off: ${(err as Error).message}`);
  }
  bar.finish(`saved ${out} (${formatBytes(done)})`);
  return { task, bytes: done, failed: failedAssetsOf(task) };
}

/** The assets an export left out of its archive (its result's `failed_assets`), read defensively. */
function failedAssetsOf(task: Task): { asset_id: string; error: string }[] {
  const list = task.result?.failed_assets;
  if (!Array.isArray(list)) return [];
  return list
    .filter((f): f is Record<string, unknown> => typeof f === 'object' && f !== null)
    .map((f) => ({ asset_id: String(f.asset_id ?? ''), error: String(f.error ?? 'failed') }));
}
