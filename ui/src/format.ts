export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '?';
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  return d.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });
}

/** A time of today as `15:04`, an older one with its date. */
export function formatWhen(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' }) : formatDate(iso);
}

export type Kind = 'image' | 'video' | 'audio' | 'model' | 'text' | 'archive' | 'file';

const MODEL_EXT = /\.(safetensors|sft|gguf|ckpt|pt|pth|bin|onnx)$/i;

export function kindOf(a: { mimeType: string; name: string }): Kind {
  const m = a.mimeType.toLowerCase();
  if (MODEL_EXT.test(a.name)) return 'model';
  if (m.startsWith('image/')) return 'image';
  if (m.startsWith('video/')) return 'video';
  if (m.startsWith('audio/')) return 'audio';
  if (m.startsWith('text/') || m === 'application/json' || m.endsWith('+json') || m.endsWith('yaml')) return 'text';
  if (/zip|tar|gzip|x-7z|rar/.test(m)) return 'archive';
  return 'file';
}

/** The last path segment of a name (model names are paths such as `SDXL/base.safetensors`). */
export const baseName = (name: string): string => name.slice(name.lastIndexOf('/') + 1) || name;

/** Comma-separated tags, as typed (tags keep their case), without repeats. */
export const parseTags = (text: string): string[] => {
  const seen = new Set<string>();
  for (const t of text.split(',')) {
    const v = t.trim();
    if (v) seen.add(v);
  }
  return [...seen];
};

/**
 * A task's error for people: the server's `CODE: text` as a sentence with the code after it (never cut; the row
 * wraps).
 */
export function readableError(message: string | null | undefined): string {
  if (!message) return 'Failed (no reason given).';
  const m = /^([A-Z][A-Z0-9_]+):(.*)$/s.exec(message.trim());
  const text = m ? m[2]!.trim() : message.trim();
  const sentence = text.charAt(0).toUpperCase() + text.slice(1);
  return m ? `${sentence} (${m[1]})` : sentence;
}

/** What a model file is: its format (from the derived metadata, else the name's extension). */
export function modelTypeOf(a: { name: string; mimeType: string; metadata?: Record<string, unknown> | null }): string {
  const format = a.metadata?.format;
  if (typeof format === 'string' && format) return format;
  const dot = a.name.lastIndexOf('.');
  return dot > 0 ? a.name.slice(dot + 1).toLowerCase() : a.mimeType;
}

/** The base model a model file's header names (derived metadata), if any. */
export const baseModelOf = (a: { metadata?: Record<string, unknown> | null }): string | undefined =>
  typeof a.metadata?.base_model === 'string' && a.metadata.base_model ? a.metadata.base_model : undefined;

/** The ComfyUI model folder of an asset (contract 3.7): its `model_type:` tag, else the tag after `models`. */
export function modelFolderOf(tags: string[]): string {
  const typed = tags.find((t) => t.startsWith('model_type:'));
  if (typed) return typed.slice('model_type:'.length) || 'other';
  const i = tags.indexOf('models');
  const next = i >= 0 ? tags.slice(i + 1).find((t) => !t.includes(':')) : undefined;
  return next ?? tags.find((t) => MODEL_FOLDERS.has(t)) ?? 'other';
}

/** ComfyUI's model folders (folder_paths.py), for tags in any order. */
export const MODEL_FOLDERS = new Set([
  'checkpoints',
  'loras',
  'vae',
  'controlnet',
  'embeddings',
  'upscale_models',
  'clip',
  'clip_vision',
  'unet',
  'diffusion_models',
  'text_encoders',
  'hypernetworks',
  'style_models',
  'gligen',
  'photomaker',
  'diffusers',
  'vae_approx',
]);
