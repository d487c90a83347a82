import type { NamingStrategy } from '../tasks/task.types';

export interface ExportMember {
  id: string;
  name: string;
  promptId: string | null;
  createdAt: Date;
}

/**
 * A name as a safe relative path inside an archive (the rule of `loader_path`): no `..` or `.` segment,
 * no leading `/`, no `\`, no control character. Unsafe parts are dropped or replaced rather than refused, so every
 * asset gets a member; `fallback` when nothing is left.
 */
export function safeArchivePath(name: string, fallback: string): string {
  const segments = name
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
    .replace(/\\/g, '_')
    .split('/')
    .map((s) => s.trim())
    .filter((s) => s !== '' && s !== '.' && s !== '..');
  return segments.length > 0 ? segments.join('/') : fallback;
}

/** `a.txt` → `a (2).txt`, `a` → `a (2)`; the extension of the last segment is kept. */
function numbered(path: string, n: number): string {
  const slash = path.lastIndexOf('/');
  const dot = path.lastIndexOf('.');
  const cut = dot > slash + 1 ? dot : path.length;
  return `${path.slice(0, cut)} (${n})${path.slice(cut)}`;
}

/** Member paths for `assets` under a naming strategy, safe and unique (case-insensitively). */
export function memberPaths(assets: ExportMember[], strategy: NamingStrategy): string[] {
  // A job's time: the creation time of its first asset in the archive.
  const jobTime = new Map<string, Date>();
  for (const a of assets) {
    if (!a.promptId) continue;
    const t = jobTime.get(a.promptId);
    if (!t || a.createdAt < t) jobTime.set(a.promptId, a.createdAt);
  }
  const taken = new Set<string>();
  return assets.map((a) => {
    const base = safeArchivePath(a.name, `asset-${a.id}`);
    let path: string;
    switch (strategy) {
      case 'asset_id':
        path = `${a.id}-${base.replace(/\//g, '_')}`;
        break;
      case 'group_by_job_id':
        path = a.promptId ? `${a.promptId}/${base}` : base;
        break;
      case 'group_by_job_time':
        path = a.promptId ? `${timeLabel(jobTime.get(a.promptId)!)}_${a.promptId}/${base}` : base;
        break;
      default:
        path = base;
    }
    let unique = path;
    for (let n = 2; taken.has(unique.toLowerCase()); n++) unique = numbered(path, n);
    taken.add(unique.toLowerCase());
    return unique;
  });
}

/** `2026-11-22_15-04-05` (UTC): sortable, and valid in file names everywhere. */
const timeLabel = (d: Date): string => d.toISOString().slice(0, 19).replace('T', '_').replace(/:/g, '-');
