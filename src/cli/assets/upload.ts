import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { Upload, type DetailedError } from 'tus-js-client';
import { ANSWER_WAIT_MS, ApiError, jsonBody, type ApiClient } from './client';
import { fileRangeHttpStack, fileRangeReader } from './tus-file-stack';
import type { UploadStateFile } from './upload-state';

export interface UploadInput {
  file: string;
  size: number;
  /** Sent as the `hash` field: the service checks the bytes against it. */
  hash: string;
  name: string;
  tags: string[];
  /** The tree path, sent as the `path` field of a multipart upload (kept in `metadata.paths` by the service). */
  path?: string;
}

export interface UploadResult {
  id: string;
  created: boolean;
  /** The asset's `metadata.paths` as answered (an instance that ignores the `path` field answers without it). */
  paths?: string[];
}

/** PATCHes in a row the service may answer without moving its offset before the upload is given up. */
const MAX_STALLED_PATCHES = 3;

/** POST /api/uploads answered 404: an instance without resumable uploads. */
export class TusUnsupported extends Error {}

/**
 * Sends one file through a tus upload in PATCH requests of `chunkSize` bytes (0: one request; the service keeps what
 * arrived of a broken one all the same, and the retry continues from its offset), read in large steps (tus-file-stack),
 * resuming the upload a previous run left in `state` for the same file, name and service. `onBytes`: bytes sent.
 */
export function tusUpload(
  client: ApiClient,
  state: UploadStateFile,
  input: UploadInput,
  chunkSize: number,
  onBytes: (n: number) => void,
  onCreated: () => void = () => undefined,
): Promise<UploadResult> {
  const endpoint = `${client.base}/api/uploads`;
  return new Promise<UploadResult>((resolve, reject) => {
    let assetId: string | undefined;
    let created = false;
    // A broken or hostile server must not keep the client sending for ever: an offset outside the file, or PATCHes
    // that move the offset nowhere, end the upload.
    let stalled = 0;
    const fail = (code: string, message: string): void => {
      void upload.abort();
      reject(new ApiError(0, code, message));
    };
    const checkOffset = (
      method: string,
      sentOffset: string | undefined,
      status: number,
      offsetHeader: string | undefined,
    ): void => {
      if (status < 200 || status >= 300 || (method !== 'PATCH' && method !== 'HEAD') || offsetHeader === undefined)
        return;
      const offset = /^\d{1,16}$/.test(offsetHeader) ? Number(offsetHeader) : NaN;
      if (!(offset <= input.size))
        return fail(
          'INVALID_RESPONSE',
          `the service answered Upload-Offset ${JSON.stringify(offsetHeader)} for a file of ${input.size} bytes`,
        );
      if (method !== 'PATCH') return;
      if (offset > Number(sentOffset ?? 0)) stalled = 0;
      else if (++stalled >= MAX_STALLED_PATCHES)
        fail('NO_PROGRESS', `the service took none of the bytes of ${MAX_STALLED_PATCHES} requests in a row`);
    };
    const upload = new Upload(input.file as unknown as Buffer, {
      endpoint,
      fileReader: fileRangeReader,
      httpStack: fileRangeHttpStack(client.timeoutMs),
      headers: client.headers(),
      chunkSize: chunkSize > 0 ? chunkSize : Infinity,
      uploadSize: input.size,
      retryDelays: [0, 1000, 3000, 5000],
      metadata: {
        filename: path.basename(input.file),
        name: input.name,
        tags: JSON.stringify(input.tags),
        hash: input.hash,
      },
      // The key a push finds its unfinished upload by in the state file: the service, the content hash and the name
      // (not the path and mtime: a renamed or touched file still resumes; another service does not).
      fingerprint: async () => `assets-cli:${endpoint}:${input.hash}:${input.name}`,
      urlStorage: state,
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: true,
      onProgress: (sent) => onBytes(sent),
      onAfterResponse: (req, res) => {
        if (req.getMethod() === 'POST') onCreated();
        const id = res.getHeader('Asset-Id');
        if (id) {
          assetId = id;
          created = res.getHeader('Asset-Created') === 'true';
        }
        checkOffset(req.getMethod(), req.getHeader('Upload-Offset'), res.getStatus(), res.getHeader('Upload-Offset'));
      },
      onSuccess: () => {
        if (assetId) resolve({ id: assetId, created });
        else reject(new ApiError(0, 'NO_ASSET_ID', 'the upload finished but the service named no Asset-Id'));
      },
      onError: (err) => {
        const d = err as DetailedError;
        const status = d.originalResponse?.getStatus() ?? 0;
        if (status === 404 && d.originalRequest?.getMethod() === 'POST') return reject(new TusUnsupported());
        if (status) {
          const body = jsonBody(d.originalResponse!.getBody());
          return reject(
            new ApiError(
              status,
              (body?.code as string | undefined) ?? `HTTP_${status}`,
              (body?.message as string | undefined) ?? err.message,
            ),
          );
        }
        const cause = (d.causingError ?? err) as NodeJS.ErrnoException;
        reject(new ApiError(0, cause.code === 'EFILECHANGED' ? 'FILE_CHANGED' : 'NETWORK', cause.message));
      },
      // The library's rule (no answer, 5xx, 409, 423), and 429 too: the service did nothing with a rate-limited PATCH.
      onShouldRetry: (err) => {
        const status = (err as DetailedError).originalResponse?.getStatus() ?? 0;
        return status === 0 || status >= 500 || status === 409 || status === 423 || status === 429;
      },
    });
    upload.findPreviousUploads().then(
      (previous) => {
        if (previous.length > 0) upload.resumeFromPreviousUpload(previous[0]!);
        upload.start();
      },
      (err: Error) => reject(err),
    );
  });
}

/** `"` and line breaks percent-encoded, as browsers send a multipart file name (WHATWG HTML). */
const quoteName = (s: string): string => s.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

/**
 * A streamed multipart POST /api/assets for an instance without /api/uploads and for empty files:
 * the `hash` field goes before the file part, so the service can check the bytes against it.
 */
export function multipartUpload(
  client: ApiClient,
  input: UploadInput,
  onBytes: (n: number) => void,
): Promise<UploadResult> {
  const boundary = `----assets-cli-${crypto.randomBytes(12).toString('hex')}`;
  const field = (name: string, value: string): string =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = Buffer.from(
    field('hash', input.hash) +
      field('name', input.name) +
      field('tags', JSON.stringify(input.tags)) +
      (input.path !== undefined ? field('path', input.path) : '') +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quoteName(path.basename(input.file))}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const url = new URL(`${client.base}/api/assets`);
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise<UploadResult>((resolve, reject) => {
    const req = lib.request(url, {
      method: 'POST',
      timeout: client.timeoutMs,
      headers: client.headers({
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(head.length + input.size + tail.length),
      }),
    });
    req.on('timeout', () => req.destroy(new Error('the service stopped answering')));
    // The body sent: the service's last step may take minutes without a byte (its copy into place on S3).
    req.once('finish', () => req.setTimeout(Math.max(client.timeoutMs, ANSWER_WAIT_MS)));
    req.on('error', (err) =>
      reject(new ApiError(0, 'NETWORK', `POST ${url}: ${(err as NodeJS.ErrnoException).code ?? err.message}`)),
    );
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => reject(new ApiError(0, 'NETWORK', err.message)));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: {
          id?: string;
          created_new?: boolean;
          code?: string;
          message?: string;
          metadata?: { paths?: unknown };
        } = {};
        try {
          body = JSON.parse(text) as typeof body;
        } catch {
          // not JSON
        }
        const status = res.statusCode ?? 0;
        const paths = body.metadata?.paths;
        if (status >= 200 && status < 300 && body.id)
          resolve({
            id: body.id,
            created: body.created_new === true,
            ...(Array.isArray(paths) ? { paths: paths.filter((p): p is string => typeof p === 'string') } : {}),
          });
        else
          reject(
            new ApiError(
              status,
              body.code ?? `HTTP_${status}`,
              body.message ?? (text.slice(0, 200) || 'upload failed'),
            ),
          );
      });
    });
    req.write(head);
    if (input.size === 0) return void req.end(tail); // nothing read: a size-0 /proc file or a FIFO would never end
    let sent = 0;
    // The bytes that were hashed and announced in Content-Length, not whatever the file has by now.
    const stream = fs.createReadStream(input.file, { highWaterMark: 1 << 20, start: 0, end: input.size - 1 });
    stream.on('data', (c) => {
      sent += c.length;
      onBytes(sent);
      if (!req.write(c)) {
        stream.pause();
        req.once('drain', () => stream.resume());
      }
    });
    stream.on('error', (err) => {
      req.destroy();
      reject(err);
    });
    stream.on('end', () => {
      // A file cut short since its hash: the request would wait for bytes that never come.
      if (sent !== input.size) {
        req.destroy();
        return reject(new ApiError(0, 'FILE_CHANGED', `${input.file} ended at ${sent} bytes, before ${input.size}`));
      }
      req.end(tail);
    });
  });
}
