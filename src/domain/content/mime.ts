/** MIME detection: magic bytes first, then the file name's extension, else application/octet-stream. */

type Sniffer = [mime: string, test: (b: Buffer) => boolean];

const at = (b: Buffer, offset: number, bytes: number[] | string): boolean => {
  const sig = typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : Buffer.from(bytes);
  return b.length >= offset + sig.length && b.subarray(offset, offset + sig.length).equals(sig);
};

const SNIFFERS: Sniffer[] = [
  ['image/png', (b) => at(b, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])],
  ['image/jpeg', (b) => at(b, 0, [0xff, 0xd8, 0xff])],
  ['image/gif', (b) => at(b, 0, 'GIF87a') || at(b, 0, 'GIF89a')],
  ['image/webp', (b) => at(b, 0, 'RIFF') && at(b, 8, 'WEBP')],
  ['audio/wav', (b) => at(b, 0, 'RIFF') && at(b, 8, 'WAVE')],
  ['video/x-msvideo', (b) => at(b, 0, 'RIFF') && at(b, 8, 'AVI ')],
  ['image/bmp', (b) => at(b, 0, 'BM') && b.length >= 26 && b.readUInt32LE(2) > 26],
  ['image/tiff', (b) => at(b, 0, [0x49, 0x49, 0x2a, 0x00]) || at(b, 0, [0x4d, 0x4d, 0x00, 0x2a])],
  ['image/x-icon', (b) => at(b, 0, [0x00, 0x00, 0x01, 0x00])],
  ['image/avif', (b) => at(b, 4, 'ftypavif') || at(b, 4, 'ftypavis')],
  ['image/heic', (b) => at(b, 4, 'ftypheic') || at(b, 4, 'ftypheix') || at(b, 4, 'ftypmif1')],
  ['video/quicktime', (b) => at(b, 4, 'ftypqt  ')],
  ['audio/mp4', (b) => at(b, 4, 'ftypM4A ')],
  ['video/mp4', (b) => at(b, 4, 'ftyp')],
  ['video/webm', (b) => at(b, 0, [0x1a, 0x45, 0xdf, 0xa3]) && b.subarray(0, 64).includes('webm')],
  ['video/x-matroska', (b) => at(b, 0, [0x1a, 0x45, 0xdf, 0xa3])],
  ['audio/flac', (b) => at(b, 0, 'fLaC')],
  ['audio/ogg', (b) => at(b, 0, 'OggS')],
  ['audio/mpeg', (b) => at(b, 0, 'ID3') || (b.length > 1 && b[0] === 0xff && (b[1]! & 0xe0) === 0xe0)],
  ['application/pdf', (b) => at(b, 0, '%PDF-')],
  ['application/gzip', (b) => at(b, 0, [0x1f, 0x8b])],
  ['application/zstd', (b) => at(b, 0, [0x28, 0xb5, 0x2f, 0xfd])],
  ['application/zip', (b) => at(b, 0, [0x50, 0x4b, 0x03, 0x04]) || at(b, 0, [0x50, 0x4b, 0x05, 0x06])],
  ['application/x-7z-compressed', (b) => at(b, 0, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c])],
  ['application/x-tar', (b) => at(b, 257, 'ustar')],
  ['application/x-gguf', (b) => at(b, 0, 'GGUF')],
  ['application/x-hdf5', (b) => at(b, 0, [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a])],
  ['application/wasm', (b) => at(b, 0, [0x00, 0x61, 0x73, 0x6d])],
  ['application/x-safetensors', isSafetensors],
  [
    'image/svg+xml',
    (b) =>
      /^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*<svg[\s>]/i.test(b.toString('utf8', 0, Math.min(b.length, 1024))),
  ],
  [
    'text/html',
    (b) =>
      /^\s*(<!doctype html|<html[\s>]|<head[\s>]|<script[\s>])/i.test(b.toString('utf8', 0, Math.min(b.length, 512))),
  ],
];

/** safetensors: an 8-byte little-endian header length, then a JSON object. */
function isSafetensors(b: Buffer): boolean {
  if (b.length < 10) return false;
  const len = b.readBigUInt64LE(0);
  return len > 1n && len < 100_000_000n && b[8] === 0x7b && (b[9] === 0x22 || b[9] === 0x7d);
}

const BY_EXTENSION: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  bmp: 'image/bmp',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  svg: 'image/svg+xml',
  ico: 'image/x-icon',
  avif: 'image/avif',
  heic: 'image/heic',
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  mov: 'video/quicktime',
  webm: 'video/webm',
  mkv: 'video/x-matroska',
  avi: 'video/x-msvideo',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  flac: 'audio/flac',
  ogg: 'audio/ogg',
  m4a: 'audio/mp4',
  opus: 'audio/ogg',
  json: 'application/json',
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  html: 'text/html',
  htm: 'text/html',
  js: 'text/javascript',
  mjs: 'text/javascript',
  css: 'text/css',
  xml: 'application/xml',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tar: 'application/x-tar',
  '7z': 'application/x-7z-compressed',
  safetensors: 'application/x-safetensors',
  gguf: 'application/x-gguf',
  ckpt: 'application/octet-stream',
  pt: 'application/octet-stream',
  pth: 'application/octet-stream',
  bin: 'application/octet-stream',
  onnx: 'application/octet-stream',
  h5: 'application/x-hdf5',
  wasm: 'application/wasm',
};

export const DEFAULT_MIME = 'application/octet-stream';

export function sniffMime(head: Buffer): string | undefined {
  for (const [mime, test] of SNIFFERS) if (test(head)) return mime;
  return undefined;
}

export function mimeFromName(name: string | undefined): string | undefined {
  if (!name) return undefined;
  const m = /\.([a-z0-9]{1,12})$/i.exec(name);
  return m ? BY_EXTENSION[m[1]!.toLowerCase()] : undefined;
}

export function detectMime(head: Buffer | undefined, name: string | undefined): string {
  return (head && sniffMime(head)) ?? mimeFromName(name) ?? DEFAULT_MIME;
}

export const isImageMime = (mime: string): boolean => mime.toLowerCase().startsWith('image/');

/** `type/subtype` of a media type, lower-cased, its parameters (`; charset=utf-8`) dropped. */
export const baseMediaType = (mime: string): string => {
  const semi = mime.indexOf(';');
  return (semi < 0 ? mime : mime.slice(0, semi)).trim().toLowerCase();
};

/**
 * Whether an asset of this type is its own preview when none is nominated (contract 3.7 and 6.4, ComfyUI's current
 * rule): images, video, audio, every `text/*` (HTML included: the content route still serves active types as forced
 * downloads, isActiveContent) and JSON; model weights and other types are not.
 */
export function isOwnPreviewType(mime: string): boolean {
  const m = baseMediaType(mime);
  return (
    m.startsWith('image/') ||
    m.startsWith('video/') ||
    m.startsWith('audio/') ||
    m.startsWith('text/') ||
    m === 'application/json'
  );
}

/** Types a browser would execute or render as a document; always served as attachments. */
export function isActiveContent(mime: string): boolean {
  const m = mime.toLowerCase().split(';')[0]!.trim();
  return (
    m === 'text/html' ||
    m === 'application/xhtml+xml' ||
    m === 'image/svg+xml' ||
    m.includes('javascript') ||
    m === 'text/xml' ||
    m === 'application/xml' ||
    m.endsWith('+xml') ||
    m === 'application/pdf'
  );
}

/**
 * The Content-Type the content route (and a presigned store URL) sends for a stored media type: active content goes
 * out as `application/octet-stream` (as ComfyUI's asset API serves it), besides `attachment`, `nosniff` and a
 * sandbox policy, so no browser renders or runs it from this origin; the asset's `mime_type` keeps the real type.
 */
export function servedContentType(servable: string): string {
  return isActiveContent(servable) ? 'application/octet-stream' : servable;
}
