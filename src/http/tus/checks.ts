import type { Request, Response } from 'express';
import { isUuid } from '../../domain/assets/validation';
import { DomainError } from '../../domain/errors';
import type { UploadService } from '../../domain/uploads/upload.service';
import { principalOf } from '../shared/handler';
import { parseUploadMetadata, readMetadataHeader } from './metadata';

/** The tus media type of PATCH bodies (and of creation-with-upload bodies). */
export const OFFSET_STREAM = 'application/offset+octet-stream';

/**
 * What is ours in a tus request, checked before tus sees it: the protocol version, a PATCH's media type, that the
 * upload is the key owner's, a creation's metadata and length. Returns whether the body is the offset stream, the
 * headers to add to tus's answer (a HEAD's), and a creation's Upload-Metadata without the pairs that are ignored
 * (see readMetadataHeader).
 */
export async function checkOurs(
  req: Request,
  res: Response,
  uploads: UploadService,
): Promise<{ offsetStream: boolean; extraHeaders: Record<string, string>; keptMetadata: string | undefined }> {
  const principal = principalOf(res);
  const id = req.params.id as string | undefined;
  let extraHeaders: Record<string, string> = {};
  let keptMetadata: string | undefined;
  if (req.method !== 'OPTIONS') {
    // Every answer but OPTIONS' names the protocol version, errors of ours included (tus 1.0, "Tus-Resumable").
    res.set('Tus-Resumable', '1.0.0');
    if (req.get('tus-resumable') !== '1.0.0') {
      throw new DomainError(
        'TUS_VERSION_UNSUPPORTED',
        'send Tus-Resumable: 1.0.0 (the tus version this server speaks)',
      );
    }
  }
  // The media type as RFC 9110 has it (case-insensitive, parameters aside); tus itself takes only the exact text.
  const offsetStream = req.is(OFFSET_STREAM) === OFFSET_STREAM;
  if (req.method === 'PATCH' && !offsetStream) {
    throw new DomainError('UNSUPPORTED_MEDIA_TYPE', `a PATCH takes Content-Type: ${OFFSET_STREAM}`);
  }
  if (req.method === 'OPTIONS') {
    // Capabilities only, of an upload that can exist: an id that is no UUID is no upload's, as HEAD and PATCH answer.
    // (A browser's preflight is answered before this, for any path: http/cors.ts.)
    if (id !== undefined && !isUuid(id)) throw new DomainError('NOT_FOUND', `upload ${id} not found`);
  } else if (id !== undefined && req.method === 'PATCH') {
    // Whose upload it is, is checked by the statement that takes its lease (another owner's is NOT_FOUND there).
    if (!isUuid(id)) throw new DomainError('NOT_FOUND', `upload ${id} not found`);
  } else if (id !== undefined) {
    const rec = isUuid(id) ? await uploads.find(principal, id.toLowerCase()) : undefined;
    if (!rec) throw new DomainError('NOT_FOUND', `upload ${id} not found`);
    if (req.method === 'HEAD' && rec.offset === rec.length) {
      // The last PATCH's answer may have been lost (or the instance died before the asset was made): finish now.
      const done = await uploads.finish(principal, rec.id, parseUploadMetadata(rec.metadata));
      extraHeaders = { 'Asset-Id': done.assetId, 'Asset-Created': String(done.created) };
    } else if (req.method === 'HEAD') {
      // As the creation and every PATCH answer it (tus expiration: when the unfinished upload goes).
      extraHeaders = { 'Upload-Expires': rec.expiresAt.toUTCString() };
    }
  } else if (req.method === 'POST') {
    const deferred = req.get('upload-defer-length');
    if (deferred !== undefined) {
      // As tusd and @tus/server answer a client that asks for an extension they do not offer (a malformed
      // request stays a 400): tus-js-client's `uploadLengthDeferred`.
      if (deferred !== '1' || req.get('upload-length') !== undefined) {
        throw new DomainError('INVALID_REQUEST', 'send either Upload-Length or Upload-Defer-Length: 1');
      }
      throw new DomainError(
        'NOT_IMPLEMENTED',
        'creation-defer-length is not offered: send Upload-Length (the size must be known at creation)',
      );
    }
    const length = Number(req.get('upload-length'));
    if (Number.isSafeInteger(length) && length > uploads.maxUploadBytes) {
      throw new DomainError(
        'PAYLOAD_TOO_LARGE',
        `the content is larger than the limit of ${uploads.maxUploadBytes} bytes`,
        {
          max_bytes: uploads.maxUploadBytes,
        },
      );
    }
    const header = req.get('upload-metadata');
    // An empty header is no metadata, as tusd reads it (tus's own parser refuses it).
    const read =
      header === undefined ? undefined : header.trim() === '' ? { meta: {}, kept: '' } : readMetadataHeader(header);
    parseUploadMetadata(read?.meta ?? {});
    keptMetadata = read?.kept;
  }
  return { offsetStream, extraHeaders, keptMetadata };
}
