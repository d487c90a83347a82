import { trimEnd } from '../input';
import type { NamingStrategy } from '../tasks/task.types';

export interface ExportMember {
  id: string;
  name: string;
  promptId: string | null;
  createdAt: Date;
}

/**
 * Characters removed from names: C0 and C1 controls, and the bidirectional controls (U+202E and its kin) that make
 * `evil\u202Etxt.exe` show as `evilexe.txt` in a file manager.
 */
const DROPPED = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
/** Characters Windows does not allow in a file name (besides `/`): each becomes `_`. */
const REPLACED = /[\\<>:"|?*]/g;
/**
 * Windows device names, which no file may have, whatever its extension (`CON`, `aux.txt`, `com1.tar.gz`, `nul .txt`).
 */
const DEVICE = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]) *(\.|$)/i;
/** At most this many UTF-8 bytes per segment: 255 is the limit of common file systems, less room for ` (n)`. */
const MAX_SEGMENT_BYTES = 240;

/**
 * One path segment as a file name every common file system takes: controls dropped, Windows' forbidden characters
 * replaced, trailing dots and spaces removed (Windows drops them; a name of dots only is then empty), device names
 * prefixed with `_`, at most MAX_SEGMENT_BYTES (the extension kept). '' when nothing is left.
 */
function safeSegment(segment: string): string {
  let s = segment.replace(DROPPED, '').replace(REPLACED, '_').trim();
  s = trimEnd(s, '. ');
  if (s === '') return '';
  if (DEVICE.test(s)) s = `_${s}`;
  if (Buffer.byteLength(s) <= MAX_SEGMENT_BYTES) return s;
  const dot = s.lastIndexOf('.');
  const ext = dot > 0 && Buffer.byteLength(s.slice(dot)) <= 32 ? s.slice(dot) : '';
  return (
    trimEnd(truncateUtf8(s.slice(0, s.length - ext.length), MAX_SEGMENT_BYTES - Buffer.byteLength(ext)), '. ') + ext
  );
}

/** The longest prefix of `s` of at most `max` UTF-8 bytes that does not split a character. */
function truncateUtf8(s: string, max: number): string {
  let bytes = 0;
  let end = 0;
  for (const ch of s) {
    bytes += Buffer.byteLength(ch);
    if (bytes > max) break;
    end += ch.length;
  }
  return s.slice(0, end);
}

/**
 * A name as a safe relative path inside an archive, one that extracts on Linux, macOS and Windows: no `..` or `.`
 * segment, no leading `/`, no `\`, no control or bidirectional-control character, no Windows device name or
 * forbidden character, no segment over MAX_SEGMENT_BYTES. Unsafe parts are dropped or replaced rather than refused,
 * so every asset gets a member; `fallback` when nothing is left.
 */
export function safeArchivePath(name: string, fallback: string): string {
  const segments = name
    .split('/')
    .map(safeSegment)
    .filter((s) => s !== '');
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
  const paths = assets.map((a) => {
    const base = safeArchivePath(a.name, `asset-${a.id}`);
    switch (strategy) {
      case 'asset_id':
        // The id prefix may make the one segment too long: through the sanitiser again.
        return safeArchivePath(`${a.id}-${base.replace(/\//g, '_')}`, a.id);
      case 'group_by_job_id':
        return a.promptId ? `${a.promptId}/${base}` : base;
      case 'group_by_job_time':
        return a.promptId ? `${timeLabel(jobTime.get(a.promptId)!)}_${a.promptId}/${base}` : base;
      default:
        return base;
    }
  });
  // A member must not take the path of another's folder (`a` beside `a/b`: `a` cannot be both a file and a folder
  // when extracted), nor of another member, compared as case-insensitive file systems (Windows, macOS) compare.
  const key = (p: string): string => p.normalize('NFC').toLowerCase();
  const folders = new Set<string>();
  for (const p of paths)
    for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) folders.add(key(p.slice(0, i)));
  const taken = new Set<string>();
  // The next number to try per path, so 10,000 assets of one name are numbered in linear time.
  const nextNumber = new Map<string, number>();
  return paths.map((path) => {
    let unique = path;
    let n = nextNumber.get(key(path)) ?? 2;
    while (taken.has(key(unique)) || folders.has(key(unique))) unique = numbered(path, n++);
    nextNumber.set(key(path), n);
    taken.add(key(unique));
    return unique;
  });
}

/** `2026-11-22_15-04-05` (UTC): sortable, and valid in file names everywhere. */
const timeLabel = (d: Date): string => d.toISOString().slice(0, 19).replace('T', '_').replace(/:/g, '-');
