import type { RequestHandler } from 'express';

/**
 * GET /api/features (contract 6.4, ComfyUI after August 2026): what this server supports, answered without a key as
 * ComfyUI answers it (its frontend asks before it has one). Model folders are `model_type:<folder>` tags (contract 3.7).
 */
export const featuresHandler: RequestHandler = (_req, res) => {
  res.json({ supports_model_type_tags: true });
};
