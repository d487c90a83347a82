import type { DetailedError } from 'tus-js-client';
import { Api, ApiError } from './api';

export interface UploadState {
  key: string;
  name: string;
  size: number;
  sent: number;
  status: 'uploading' | 'done' | 'failed' | 'cancelled';
  error?: string;
  assetId?: string;
  /** Which path carried it: resumable (tus at /api/uploads) or one GraphQL multipart request. */
  via?: 'tus' | 'graphql';
  cancel?: () => void;
}

type Update = (patch: Partial<UploadState>) => void;

/** Chunks of a tus PATCH: big enough to be fast, small enough that a dropped connection loses little. */
const CHUNK = 16 * 1024 * 1024;

/** A tus upload of `file`; the asset id comes back in the final answer's Asset-Id header. */
async function uploadTus(api: Api, file: File, tags: string[], update: Update): Promise<string> {
  // Loaded with the first upload, not with the page: tus-js-client is more than half of the page's script, which the
  // first screen waits for (`npm run bench -- grid`).
  const { Upload } = await import('tus-js-client');
  return new Promise((resolve, reject) => {
    let assetId: string | undefined;
    const upload = new Upload(file, {
      endpoint: '/api/uploads',
      headers: api.headers(),
      chunkSize: CHUNK,
      retryDelays: [0, 1000, 3000, 5000],
      removeFingerprintOnSuccess: true,
      metadata: {
        filename: file.name,
        ...(tags.length ? { tags: JSON.stringify(tags) } : {}),
        ...(file.type ? { mime_type: file.type } : {}),
      },
      onProgress: (sent) => update({ sent }),
      onAfterResponse: (_req, res) => {
        const id = res.getHeader('Asset-Id');
        if (id) assetId = id;
      },
      onShouldRetry: (err) => {
        const status = err.originalResponse?.getStatus() ?? 0;
        return status === 0 || status === 423 || status >= 500;
      },
      onSuccess: () =>
        assetId ? resolve(assetId) : reject(new ApiError('the upload ended without an asset', 'NO_ASSET', 0)),
      onError: (error) => {
        const err = error as DetailedError;
        const status = err.originalResponse?.getStatus() ?? 0;
        let message = err.message;
        try {
          message = JSON.parse(err.originalResponse?.getBody() ?? '').message ?? message;
        } catch {
          /* keep tus's message */
        }
        reject(new ApiError(message, status === 404 ? 'NO_TUS' : 'UPLOAD_FAILED', status));
      },
    });
    update({ cancel: () => void upload.abort(true).then(() => reject(new ApiError('cancelled', 'CANCELLED', 0))) });
    upload.start();
  });
}

/** The GraphQL multipart request (uploadAsset): one request, progress from XHR's upload events. */
function uploadGraphql(api: Api, file: File, tags: string[], update: Update): Promise<string> {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    form.append(
      'operations',
      JSON.stringify({
        query:
          'mutation($file: Upload!, $input: UploadAssetInput) { uploadAsset(file: $file, input: $input) { asset { id } } }',
        variables: { file: null, input: tags.length ? { tags } : null },
      }),
    );
    form.append('map', JSON.stringify({ 0: ['variables.file'] }));
    form.append('0', file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/graphql');
    for (const [k, v] of Object.entries(api.headers({ 'Apollo-Require-Preflight': 'true' })))
      xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => update({ sent: e.loaded });
    xhr.onerror = () => reject(new ApiError('network error', 'NETWORK', 0));
    xhr.onabort = () => reject(new ApiError('cancelled', 'CANCELLED', 0));
    xhr.onload = () => {
      try {
        const body = JSON.parse(xhr.responseText);
        const id = body.data?.uploadAsset?.asset?.id;
        if (id) resolve(id);
        else
          reject(
            new ApiError(
              body.errors?.[0]?.message ?? `answered ${xhr.status}`,
              body.errors?.[0]?.extensions?.code ?? 'ERROR',
              xhr.status,
            ),
          );
      } catch {
        reject(new ApiError(`answered ${xhr.status}`, 'ERROR', xhr.status));
      }
    };
    update({ cancel: () => xhr.abort() });
    xhr.send(form);
  });
}

let tusMissing = false;

/** Resumable when the service has /api/uploads; else (404) the GraphQL multipart upload. */
export async function uploadFile(api: Api, file: File, tags: string[], update: Update): Promise<string> {
  if (!tusMissing) {
    try {
      const id = await uploadTus(api, file, tags, update);
      update({ via: 'tus' });
      return id;
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 'NO_TUS')) throw err;
      tusMissing = true;
    }
  }
  update({ sent: 0 });
  const id = await uploadGraphql(api, file, tags, update);
  update({ via: 'graphql' });
  return id;
}
