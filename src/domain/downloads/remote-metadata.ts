import type { HttpFetcher } from '../../infra/http-fetch';
import { dropBody, FetchError, headerText } from '../../infra/http-fetch';
import { folderOfProviderTypes, modelFolderTags } from '../assets/comfy-folders';
import type { RemoteIssue, RemoteMetadata } from '../tasks/task.types';
import type { DownloadProvider } from './providers/provider';

/** A `preview_image` data: URL is at most this long. */
export const PREVIEW_DATA_URL_BYTES = 512 * 1024;

/** Model files the import wizard accepts. */
export const MODEL_EXTENSIONS = ['.safetensors', '.gguf', '.ckpt', '.pt', '.pth', '.bin', '.onnx', '.sft'] as const;

/** The wizard's answer for one URL: the provider's description, proposed tags, preview image and validation. */
export async function describeRemote(
  deps: { fetcher: HttpFetcher; maxUploadBytes: number },
  provider: DownloadProvider,
  url: URL,
  signal: AbortSignal,
): Promise<RemoteMetadata> {
  const d = await provider.describe(url, signal);
  const errors: RemoteIssue[] = [];
  const warnings: RemoteIssue[] = [];
  if (d.size !== undefined && d.size > deps.maxUploadBytes) {
    errors.push({
      code: 'FILE_TOO_LARGE',
      message: `the file has ${d.size} bytes; this service takes at most ${deps.maxUploadBytes}`,
      field: 'url',
    });
  }
  const name = d.fileName?.toLowerCase();
  if (name && !MODEL_EXTENSIONS.some((e) => name.endsWith(e))) {
    errors.push({
      code: 'FORMAT_NOT_ALLOWED',
      message: `${d.fileName} is not a model file (${MODEL_EXTENSIONS.join(', ')})`,
      field: 'url',
    });
  }
  if (!d.fileName)
    warnings.push({ code: 'FILENAME_UNKNOWN', message: 'the provider did not name the file', field: 'url' });
  if (d.size === undefined)
    warnings.push({ code: 'SIZE_UNKNOWN', message: 'the provider did not state the size', field: 'url' });
  const folder = folderOfProviderTypes(d.modelTypes ?? []);
  const preview = d.previewImageUrl ? await previewDataUrl(deps.fetcher, d.previewImageUrl, signal) : undefined;
  return {
    contentLength: d.size ?? -1,
    finalUrl: url.href,
    ...(d.contentType ? { contentType: d.contentType } : {}),
    ...(d.fileName ? { filename: d.fileName } : {}),
    ...(d.displayName || d.fileName ? { name: d.displayName ?? d.fileName } : {}),
    ...(folder ? { tags: modelFolderTags(folder) } : {}),
    ...(preview ? { previewImage: preview } : {}),
    validation: { isValid: errors.length === 0, errors, warnings },
  };
}

/** The image as a data: URL, or undefined when it cannot be fetched, is no image, or would exceed 512 KiB. */
async function previewDataUrl(fetcher: HttpFetcher, href: string, signal: AbortSignal): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  try {
    const res = await fetcher.open(url, { signal });
    const type = headerText(res.headers['content-type'])?.split(';')[0]?.trim().toLowerCase();
    const maxRaw = Math.floor(((PREVIEW_DATA_URL_BYTES - `data:${type};base64,`.length) * 3) / 4);
    if (res.status !== 200 || !type || !/^image\/[\w.+-]+$/.test(type)) {
      dropBody(res.body);
      return undefined;
    }
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of res.body as AsyncIterable<Buffer>) {
      n += c.length;
      if (n > maxRaw) {
        dropBody(res.body);
        return undefined;
      }
      chunks.push(c);
    }
    return `data:${type};base64,${Buffer.concat(chunks).toString('base64')}`;
  } catch (err) {
    if (err instanceof FetchError) return undefined;
    throw err;
  }
}
