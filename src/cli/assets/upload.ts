import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { Upload, type DetailedError } from 'tus-js-client';
import { ApiError, type ApiClient } from './client';
import { fileRangeHttpStack, fileRangeReader } from './tus-file-stack';
import type { UploadStateFile } from './upload-state';

export interface UploadInput {
  file: string;
  size: number;
  /** Known before the upload starts (sent as the `hash` field, which the service checks), or not yet. */
  hash: string | undefined;
  name: string;
  tags: string[];
}

export interface UploadResult {
  id: string;
  created: boolean;
}

/** POST /api/uploads answered 404: an instance without resumable uploads. */
export class TusUnsupported extends Error {}

/** A tus upload under way. */
export interface TusTransfer {
  /** The asset, once the last byte is acknowledged. Observed (no unhandled rejection) even before it is awaited. */
  result: Promise<UploadResult>;
  /** True once `result` has resolved. */
  finished(): boolean;
  /** Stops sending and terminates the upload on the service (its part goes); `result` then rejects. */
  terminate(): Promise<void>;
}

/** The key a push finds its unfinished upload by in the state file: the service, the name, and the content. */
async function fingerprintOf(endpoint: string, input: UploadInput): Promise<string> {
  // The content hash where it is known, not the path and mtime: a renamed or touched file still resumes; another
  // service does not. Without it (the upload starts while the file is hashed), the file as it is: its size, mtime
  // and inode, so a file changed since starts over.
  if (input.hash) return `assets-cli:${endpoint}:${input.hash}:${input.name}`;
  const st = await fs.promises.stat(input.file, { bigint: true });
  return `assets-cli:${endpoint}:file:${st.size}:${st.mtimeNs}:${st.ino}:${input.name}`;
}

/**
 * Sends one file through a tus upload in PATCH requests of `chunkSize` bytes (0: one request; the service keeps what
 * arrived of a broken one all the same, and the retry continues from its offset), read in large steps (tus-file-stack), resuming the upload a previous
 * run left in `state` for the same file, name and service. `onBytes` sees the bytes sent so far.
 */
export function startTusUpload(client: ApiClient, state: UploadStateFile, input: UploadInput, chunkSize: number, onBytes: (n: number) => void): TusTransfer {
  const endpoint = `${client.base}/api/uploads`;
  let upload: Upload | undefined;
  let done = false;
  let stopped = false;
  let stop: ((err: Error) => void) | undefined;
  const result = new Promise<UploadResult>((resolve, reject) => {
    stop = reject;
    let assetId: string | undefined;
    let created = false;
    upload = new Upload(input.file as unknown as Buffer, {
      endpoint,
      fileReader: fileRangeReader,
      httpStack: fileRangeHttpStack,
      headers: client.headers(),
      chunkSize: chunkSize > 0 ? chunkSize : Infinity,
      uploadSize: input.size,
      retryDelays: [0, 1000, 3000, 5000],
      metadata: {
        filename: path.basename(input.file),
        name: input.name,
        tags: JSON.stringify(input.tags),
        ...(input.hash ? { hash: input.hash } : {}),
      },
      fingerprint: () => fingerprintOf(endpoint, input),
      urlStorage: state,
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: true,
      onProgress: (sent) => onBytes(sent),
      onAfterResponse: (_req, res) => {
        const id = res.getHeader('Asset-Id');
        if (id) {
          assetId = id;
          created = res.getHeader('Asset-Created') === 'true';
        }
      },
      onSuccess: () => {
        done = true;
        if (assetId) resolve({ id: assetId, created });
        else reject(new ApiError(0, 'NO_ASSET_ID', 'the upload finished but the service named no Asset-Id'));
      },
      onError: (err) => {
        const d = err as DetailedError;
        const status = d.originalResponse?.getStatus() ?? 0;
        if (status === 404 && d.originalRequest?.getMethod() === 'POST') return reject(new TusUnsupported());
        if (status) {
          let code = `HTTP_${status}`;
          let message = err.message;
          try {
            const body = JSON.parse(d.originalResponse!.getBody()) as { code?: string; message?: string };
            code = body.code ?? code;
            message = body.message ?? message;
          } catch {
            // not a JSON error body
          }
          return reject(new ApiError(status, code, message));
        }
        reject(new ApiError(0, 'NETWORK', (d.causingError ?? err).message));
      },
    });
    const u = upload;
    u.findPreviousUploads().then(
      (previous) => {
        if (stopped) return;
        if (previous.length > 0) u.resumeFromPreviousUpload(previous[0]!);
        u.start();
      },
      (err: Error) => reject(err),
    );
  });
  result.catch(() => undefined);
  return {
    result,
    finished: () => done,
    terminate: async () => {
      if (done) return;
      stopped = true;
      stop?.(new ApiError(0, 'TERMINATED', 'the upload was stopped'));
      await upload?.abort(true).catch(() => undefined);
    },
  };
}

/** A whole tus upload (see startTusUpload). */
export const tusUpload = (client: ApiClient, state: UploadStateFile, input: UploadInput, chunkSize: number, onBytes: (n: number) => void): Promise<UploadResult> =>
  startTusUpload(client, state, input, chunkSize, onBytes).result;

/** `"` and line breaks percent-encoded, as browsers send a multipart file name (WHATWG HTML). */
const quoteName = (s: string): string => s.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

/**
 * A streamed multipart POST /api/assets for an instance without /api/uploads and for empty files:
 * the `hash` field goes before the file part, so the service can check the bytes against it.
 */
export function multipartUpload(client: ApiClient, input: UploadInput & { hash: string }, onBytes: (n: number) => void): Promise<UploadResult> {
  const boundary = `----assets-cli-${crypto.randomBytes(12).toString('hex')}`;
  const field = (name: string, value: string): string => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = Buffer.from(
    field('hash', input.hash) +
      field('name', input.name) +
      field('tags', JSON.stringify(input.tags)) +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quoteName(path.basename(input.file))}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const url = new URL(`${client.base}/api/assets`);
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise<UploadResult>((resolve, reject) => {
    const req = lib.request(url, {
      method: 'POST',
      headers: client.headers({
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(head.length + input.size + tail.length),
      }),
    });
    req.on('error', (err) => reject(new ApiError(0, 'NETWORK', `POST ${url}: ${(err as NodeJS.ErrnoException).code ?? err.message}`)));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => reject(new ApiError(0, 'NETWORK', err.message)));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: { id?: string; created_new?: boolean; code?: string; message?: string } = {};
        try {
          body = JSON.parse(text) as typeof body;
        } catch {
          // not JSON
        }
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300 && body.id) resolve({ id: body.id, created: body.created_new === true });
        else reject(new ApiError(status, body.code ?? `HTTP_${status}`, body.message ?? (text.slice(0, 200) || 'upload failed')));
      });
    });
    req.write(head);
    let sent = 0;
    const stream = fs.createReadStream(input.file, { highWaterMark: 1 << 20 });
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
    stream.on('end', () => req.end(tail));
  });
}
