import { DomainError } from '../errors';
import { assertStorableText } from '../input';
import { longerThan } from '../text-length';
import { safeRelativePath } from './safe-path';

/**
 * `metadata.paths`: every tree path a content was pushed or imported under, kept with this owner's one asset of that
 * content (the service keeps one asset per content and owner, so `a.safetensors` and `a-copy.safetensors` of the same
 * bytes are one asset with two paths). A ComfyUI tree's paths are relative to its root (`models/loras/a.safetensors`,
 * `input/x.png`), a plain folder's to that folder. Appended by the server only (`POST /api/assets/{id}/paths`, the
 * import), atomically, never removed; `assets pull` recreates each of them.
 */
export const PATHS_LIMITS = { perAsset: 256, perRequest: 100, length: 1024 } as const;

const invalid = (message: string) => new DomainError('INVALID_BODY', message, { field: 'paths' });

/** A list of 1–100 safe relative POSIX paths (the `loader_path` rule), duplicates dropped, order kept. */
export function validatePaths(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0) throw invalid('paths must be a non-empty list of relative paths');
  if (value.length > PATHS_LIMITS.perRequest) throw invalid(`paths may list at most ${PATHS_LIMITS.perRequest} paths`);
  const out = new Set<string>();
  for (const p of value) {
    if (typeof p !== 'string') throw invalid('paths must be a list of strings');
    assertStorableText(p, 'paths');
    if (longerThan(p, PATHS_LIMITS.length))
      throw invalid(`each path must be at most ${PATHS_LIMITS.length} characters`);
    if (safeRelativePath(p) === undefined)
      throw invalid(
        `${JSON.stringify(p.slice(0, 200))} is not a safe relative path (no "..", ".", empty segment, leading "/", "\\\\" or control character)`,
      );
    out.add(p);
  }
  return [...out];
}
