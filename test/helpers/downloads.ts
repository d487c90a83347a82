import fs from 'node:fs';
import path from 'node:path';
import { json, KEYS, waitFor, type TestService } from './harness';

type Json = any;

/** POST /api/assets/download as `key` (alice by default). */
export function startDownload(
  svc: { fetch: TestService['fetch'] },
  body: Record<string, unknown>,
  key: string = KEYS.alice,
  headers: Record<string, string> = {},
) {
  return svc.fetch('/api/assets/download', {
    method: 'POST',
    key,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

export async function getTask(
  svc: { fetch: TestService['fetch'] },
  id: string,
  key: string = KEYS.alice,
): Promise<Json> {
  const res = await svc.fetch(`/api/tasks/${id}`, { key });
  if (res.status !== 200) throw new Error(`GET /api/tasks/${id}: ${res.status} ${await res.text()}`);
  return json(res);
}

/** Polls the task until it is completed or failed (or matches `until`). */
export function waitTask(
  svc: { fetch: TestService['fetch'] },
  id: string,
  opts: { key?: string; until?: (t: Json) => boolean; timeoutMs?: number } = {},
): Promise<Json> {
  const until = opts.until ?? ((t: Json) => t.status === 'completed' || t.status === 'failed');
  return waitFor(
    async () => {
      const t = await getTask(svc, id, opts.key);
      return until(t) ? t : undefined;
    },
    { timeoutMs: opts.timeoutMs ?? 60_000, intervalMs: 100, what: `task ${id}` },
  );
}

/** Files left in the blob store's partial-download folder. */
export function partialFiles(dataDir: string): string[] {
  const dir = path.join(dataDir, 'blobs', '.partial');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

export const TASK_KEYS = [
  'id',
  'idempotency_key',
  'task_name',
  'payload',
  'status',
  'create_time',
  'update_time',
  'started_at',
  'completed_at',
  'progress',
  'result',
  'error_message',
].sort();

/** A completed task has no error_message (fields without a value are omitted). */
export const COMPLETED_TASK_KEYS = TASK_KEYS.filter((k) => k !== 'error_message');
