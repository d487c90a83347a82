import path from 'node:path';
import { comfyPlacement, type ComfyPlacement } from '../../domain/assets/comfy-folders';

export { comfyPlacement, type ComfyPlacement };

/**
 * The safe-relative-path rule of `loader_path`: no `..` segment, no leading `/`, no `\`, no
 * control character. Returns the POSIX path with empty and `.` segments dropped, or undefined when the name is not
 * safe. The one sanitiser every name → path conversion of the CLI goes through.
 */
export function safeRelativePath(name: string): string | undefined {
  if (name === '' || name.startsWith('/') || name.includes('\\') || /[\u0000-\u001f\u007f]/.test(name))
    return undefined;
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.length === 0 || parts.some((p) => p === '..')) return undefined;
  // A Windows drive letter would make the path absolute there.
  if (/^[A-Za-z]:$/.test(parts[0]!)) return undefined;
  return parts.join('/');
}

/** A file name of last resort for an asset whose name is not a safe path: its last safe segment, else its id. */
export function fallbackFileName(name: string, id: string): string {
  const last =
    name
      .split(/[/\\]/)
      .pop()
      ?.replace(/[\u0000-\u001f\u007f]/g, '') ?? '';
  return last === '' || last === '.' || last === '..' ? id : last;
}

/** At most this many UTF-8 bytes per path segment: 255 is the limit of common file systems, less room for `.part`. */
const MAX_SEGMENT_BYTES = 240;

/**
 * `rel` with each segment longer than MAX_SEGMENT_BYTES cut to it (whole characters; the extension kept), so a long
 * asset name (the service allows 512 characters) is still a file name the disk takes.
 */
export function fitSegments(rel: string): string {
  return rel
    .split('/')
    .map((seg) => {
      if (Buffer.byteLength(seg) <= MAX_SEGMENT_BYTES) return seg;
      const dot = seg.lastIndexOf('.');
      const ext = dot > 0 && Buffer.byteLength(seg.slice(dot)) <= 32 ? seg.slice(dot) : '';
      let stem = '';
      let bytes = Buffer.byteLength(ext);
      for (const ch of seg.slice(0, seg.length - ext.length)) {
        bytes += Buffer.byteLength(ch);
        if (bytes > MAX_SEGMENT_BYTES) break;
        stem += ch;
      }
      return stem + ext;
    })
    .join('/');
}

/** Joins a safe relative POSIX path under `root`, refusing (throwing) anything that would land outside it. */
export function resolveInside(root: string, rel: string): string {
  const abs = path.resolve(root, ...rel.split('/'));
  const base = path.resolve(root);
  if (abs !== base && !abs.startsWith(base + path.sep)) throw new Error(`refusing to write outside ${root}: ${rel}`);
  return abs;
}

/**
 * The placement of a file pushed with `--comfyui`: by its path inside the pushed folder (the ComfyUI root), else by
 * the part of its absolute path from the last `models`/`input`/`output` folder on, so pushing `ComfyUI/models/loras`
 * or a single model file places it as pushing the whole tree would. `treePath` is its path in the ComfyUI tree
 * (`models/loras/x.safetensors`), recorded with the asset (`metadata.paths`).
 */
export function comfyPlacementOf(
  absPath: string,
  relPosix: string,
): (ComfyPlacement & { treePath: string }) | undefined {
  const direct = comfyPlacement(relPosix);
  if (direct) return { ...direct, treePath: relPosix };
  const parts = absPath.split(/[\\/]/);
  for (let i = parts.length - 2; i >= 0; i--) {
    if (parts[i] === 'models' || parts[i] === 'input' || parts[i] === 'output') {
      const treePath = parts.slice(i).join('/');
      const place = comfyPlacement(treePath);
      return place ? { ...place, treePath } : undefined;
    }
  }
  return undefined;
}

export interface AssetPlacementInput {
  id: string;
  name: string;
  tags: string[];
  loader_path?: string;
  metadata?: unknown;
}

/**
 * Where `pull --comfyui` writes an asset, relative to the target dir: `models/<folder>/<loader_path>` for an asset
 * tagged `models` (folder = the tag after `models`, as push writes them, else its first other tag), `input/<name>`,
 * `output/<name>`, else `<name>`. The name part is `loader_path`, or the name through the same sanitiser when the
 * service sends no `loader_path` (an older instance); an unsafe name falls back to its last segment.
 */
export function pullPath(asset: AssetPlacementInput, comfyui: boolean): string {
  const wanted = asset.tags.includes('models') && asset.loader_path !== undefined ? asset.loader_path : asset.name;
  const safe = fitSegments(safeRelativePath(wanted) ?? fallbackFileName(asset.name, asset.id));
  if (!comfyui) return safe;
  if (asset.tags.includes('models')) {
    const notFolder = (t: string | undefined): boolean =>
      t === undefined || t === 'models' || t === 'input' || t === 'output' || t.includes(':');
    const next = asset.tags[asset.tags.indexOf('models') + 1];
    const typed = asset.tags.find((t) => t.startsWith('model_type:'))?.slice('model_type:'.length);
    const folder = typed || (notFolder(next) ? asset.tags.find((t) => !notFolder(t)) : next);
    const folderSafe = folder === undefined ? undefined : safeRelativePath(folder);
    if (folderSafe !== undefined && !folderSafe.includes('/')) return `models/${folderSafe}/${safe}`;
    return `models/${safe}`;
  }
  if (asset.tags.includes('input')) return `input/${safe}`;
  if (asset.tags.includes('output')) return `output/${safe}`;
  return safe;
}

/**
 * Every path `pull` writes an asset to: one per tree path recorded with it (`metadata.paths`, every path its content
 * was pushed or imported under), else `pullPath`. With `--comfyui` a ComfyUI tree path is kept as it is
 * (`models/loras/a.safetensors`) and other paths are placed by the asset's tags; without, a ComfyUI tree path becomes
 * the path inside its folder, as the asset's name is. Unsafe paths are left out; the first path is the primary copy.
 */
export function pullPaths(asset: AssetPlacementInput, comfyui: boolean): string[] {
  const recorded = (asset.metadata as { paths?: unknown } | undefined)?.paths;
  const out = new Set<string>();
  for (const p of Array.isArray(recorded) ? recorded : []) {
    const safe = typeof p === 'string' ? safeRelativePath(p) : undefined;
    if (safe === undefined) continue;
    const place = comfyPlacement(safe);
    if (comfyui) out.add(place ? fitSegments(safe) : pullPath({ ...asset, name: safe, loader_path: undefined }, true));
    else out.add(fitSegments(place ? place.name : safe));
  }
  if (out.size === 0) out.add(pullPath(asset, comfyui));
  return [...out];
}
