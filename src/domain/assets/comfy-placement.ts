/**
 * Where a file of a ComfyUI tree belongs: the one mapping shared by the CLI's `push --comfyui` and the server's
 * import (POST /api/assets/seed), so both tag and name a file alike (contract 3.7, 6.2, 6.4).
 */

export interface ComfyPlacement {
  tags: string[];
  /** The asset name: the path inside the model folder (or inside input/ / output/), POSIX separators. */
  name: string;
}

/** The tag that names an asset's ComfyUI model folder (ComfyUI's `model_type` mode). */
export const modelTypeTag = (folder: string): string => `model_type:${folder}`;

/**
 * A tree path (`models/<folder>/<path>`, `input/<path>`, `output/<path>`, POSIX separators) as ComfyUI's asset scanner
 * sees it: `models/loras/SDXL/a.safetensors` → tags `models`, `model_type:loras`, `loras` and name
 * `SDXL/a.safetensors`; `input/<path>` → tag `input`; `output/<path>` → tag `output`. Other paths (and files directly
 * in `models/`) have no place: undefined.
 */
export function comfyPlacement(treePath: string): ComfyPlacement | undefined {
  const [top, ...rest] = treePath.split('/');
  if (top === 'models' && rest.length >= 2) {
    const folder = rest[0]!.toLowerCase();
    return { tags: ['models', modelTypeTag(folder), folder], name: rest.slice(1).join('/') };
  }
  if ((top === 'input' || top === 'output') && rest.length >= 1) return { tags: [top], name: rest.join('/') };
  return undefined;
}

/** An asset's model folder: its `model_type:` tag, else (older clients) the tag after `models`. */
export function modelFolderOf(tags: readonly string[]): string | undefined {
  const typed = tags.find((t) => t.startsWith('model_type:'));
  if (typed) return typed.slice('model_type:'.length) || undefined;
  const next = tags[tags.indexOf('models') + 1];
  return tags.includes('models') && next !== undefined && !next.includes(':') ? next : undefined;
}
