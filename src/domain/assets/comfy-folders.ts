/**
 * ComfyUI's model folders and how an asset's tags name one (contract 3.7). The one place the service, the CLI
 * (`push`/`pull --comfyui`) and the server-side import read the mapping from: no transport or Node-only imports.
 */

/** The tag every model carries (ComfyUI's asset scanner's root tag). */
export const MODELS_TAG = 'models';

/** ComfyUI's namespaced folder tag since August 2026: `model_type:loras`. */
export const MODEL_TYPE_PREFIX = 'model_type:';

/** The model folders of ComfyUI's `folder_paths` (legacy names `clip`, `unet`, `t2i_adapter` included). */
export const COMFY_MODEL_FOLDERS: readonly string[] = [
  'checkpoints',
  'configs',
  'loras',
  'vae',
  'text_encoders',
  'clip',
  'diffusion_models',
  'unet',
  'clip_vision',
  'style_models',
  'embeddings',
  'diffusers',
  'vae_approx',
  'controlnet',
  't2i_adapter',
  'gligen',
  'upscale_models',
  'latent_upscale_models',
  'hypernetworks',
  'photomaker',
  'classifiers',
  'model_patches',
  'audio_encoders',
];

const FOLDERS = new Set(COMFY_MODEL_FOLDERS);

export const isComfyModelFolder = (name: string): boolean => FOLDERS.has(name);

/**
 * An asset's model folder: its first `model_type:<folder>` tag (any folder name: ComfyUI's custom nodes add their
 * own), else (older clients) the first tag after `models` that names a ComfyUI model folder; undefined otherwise.
 */
export function modelFolderOf(tags: readonly string[]): string | undefined {
  const typed = tags.find(isModelTypeTag);
  if (typed !== undefined) return typed.slice(MODEL_TYPE_PREFIX.length);
  const models = tags.indexOf(MODELS_TAG);
  if (models < 0) return undefined;
  for (let i = models + 1; i < tags.length; i++) if (FOLDERS.has(tags[i]!)) return tags[i];
  return undefined;
}

/** Whether the tags make an asset a model (`loader_path`): `models`, or a `model_type:<folder>` tag. */
export function isModelTagged(tags: readonly string[]): boolean {
  return tags.some((t) => t === MODELS_TAG || isModelTypeTag(t));
}

/** `model_type:<folder>` with a folder name. */
const isModelTypeTag = (t: string): boolean => t.startsWith(MODEL_TYPE_PREFIX) && t.length > MODEL_TYPE_PREFIX.length;

/**
 * The tags the service (and the CLI) writes for a model of `folder`: `models`, `model_type:<folder>` and the plain
 * folder name, so clients before and after ComfyUI's August 2026 change both find it.
 */
export function modelFolderTags(folder: string): string[] {
  return [MODELS_TAG, `${MODEL_TYPE_PREFIX}${folder}`, folder];
}

/** A provider's model type (Civitai `model.type`, a Hugging Face folder name) → ComfyUI model folder. */
const PROVIDER_TYPES: Record<string, string> = {
  checkpoint: 'checkpoints',
  checkpoints: 'checkpoints',
  lora: 'loras',
  locon: 'loras',
  loras: 'loras',
  textualinversion: 'embeddings',
  embeddings: 'embeddings',
  vae: 'vae',
  controlnet: 'controlnet',
  upscaler: 'upscale_models',
  upscale_models: 'upscale_models',
};

/** The first of a provider's model types that maps to a ComfyUI folder (case-insensitively: `LORA`, `LoCon`). */
export function folderOfProviderTypes(types: readonly string[]): string | undefined {
  for (const t of types) {
    const folder = PROVIDER_TYPES[t.toLowerCase()];
    if (folder) return folder;
  }
  return undefined;
}
