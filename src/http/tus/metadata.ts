import { Metadata } from '@tus/server';
import { sanitizeFileName, validateCreateFields, validateHashField } from '../../domain/assets/validation';
import { DomainError } from '../../domain/errors';
import { assertJsonInput } from '../../domain/input';
import type { UploadFields } from '../../domain/uploads/upload.service';
import { check } from '../schema/check';
import { UploadMetadata } from '../schema/forms';
import { createInputOfForm, uploadMetadataOf } from '../shared/asset-input';

/** Upload-Metadata keys (POST /api/assets' multipart fields); others (tus-js-client's filetype) are kept, unused. */
export function parseUploadMetadata(meta: Record<string, string | null | undefined>): UploadFields {
  // Every value is stored with the upload (jsonb): no NUL or lone surrogate (a 400, not a database error).
  assertJsonInput(meta, 'Upload-Metadata');
  const form = uploadMetadataOf(meta);
  check(UploadMetadata, form);
  const fields = validateCreateFields(createInputOfForm(form));
  const hash: UploadFields['hash'] = typeof form.hash === 'string' ? validateHashField(form.hash) : undefined;
  const fileName = typeof form.filename === 'string' ? sanitizeFileName(form.filename) : undefined;
  return { fields, fileName, hash };
}

/**
 * Upload-Metadata as tus reads it (comma-separated pairs of an ASCII key and an optional base64 value, each key once;
 * anything else is a 400), except for keys that name a property every JavaScript object has (`__proto__`,
 * `constructor`, `hasOwnProperty`...): tus's parser refuses those (it looks keys up with `in`), but they are no field
 * of ours, and unknown keys are ignored, as tusd ignores them. They are left out of `kept`, the header tus is then
 * given, so they are neither stored nor echoed by HEAD.
 */
export function readMetadataHeader(header: string): { meta: Record<string, string | null>; kept: string } {
  const meta: Record<string, string | null> = {};
  const seen = new Set<string>();
  const kept: string[] = [];
  for (const pair of header.split(',')) {
    const tokens = pair.split(' ');
    const [key, value] = tokens as [string, string | undefined];
    const valid =
      Metadata.validateKey(key) && (tokens.length === 1 || (tokens.length === 2 && Metadata.validateValue(value!)));
    if (!valid || seen.has(key)) throw new DomainError('INVALID_BODY', 'Upload-Metadata is not valid tus metadata');
    seen.add(key);
    if (key in Object.prototype) continue;
    meta[key] = value ? Buffer.from(value, 'base64').toString('utf8') : null;
    kept.push(pair);
  }
  return { meta, kept: kept.join(',') };
}
