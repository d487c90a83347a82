/**
 * The asset's `metadata`: what the service derives from a content's first bytes while they stream in (never by
 * re-reading a stored file at request time). Image sizes come from the PNG/JPEG/WebP/GIF headers; safetensors files
 * give their `__metadata__` map and, from kohya `ss_*` / `modelspec.*` keys, `base_model` and `trained_words`.
 */

/**
 * How many leading bytes ingest keeps for this (a safetensors `__metadata__` block is written first, before tensors).
 */
export const METADATA_HEAD_BYTES = 1024 * 1024;
/** The `safetensors` map holds at most 64 KiB of keys and values (entries past that budget are left out). */
export const SAFETENSORS_MAP_BYTES = 64 * 1024;

export type DerivedMetadata = Record<string, unknown>;

const FORMAT_OF_MIME: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'application/x-safetensors': 'safetensors',
  'application/x-gguf': 'gguf',
};

/** Content-level fields (the same for every asset of the content): `format`, `width`/`height`, `safetensors`... */
export function deriveFromHead(
  head: Buffer,
  sniffedMime: string | undefined,
  fileName: string | undefined,
): DerivedMetadata {
  const out: DerivedMetadata = {};
  // The bytes name a format only for the types listed; otherwise the file name's extension (where a name is known).
  const format = (sniffedMime && FORMAT_OF_MIME[sniffedMime]) ?? extensionOf(fileName);
  if (format) out.format = format;
  const size = imageSize(head);
  if (size) Object.assign(out, size);
  if (format === 'safetensors') Object.assign(out, safetensorsMetadata(head));
  return out;
}

/** The asset's `metadata`: the content's derived fields, then this asset's own (file name, length, download source). */
export function assetMetadata(
  derived: DerivedMetadata | null,
  own: { fileName?: string; contentLength: number; sourceUrl?: string },
): DerivedMetadata {
  return {
    ...(derived ?? {}),
    ...(own.fileName ? { filename: own.fileName } : {}),
    content_length: own.contentLength,
    ...(own.sourceUrl ? { source_url: own.sourceUrl } : {}),
  };
}

function extensionOf(name: string | undefined): string | undefined {
  const m = name ? /\.([a-z0-9]{1,12})$/i.exec(name) : null;
  return m ? m[1]!.toLowerCase() : undefined;
}

export function imageSize(b: Buffer): { width: number; height: number } | undefined {
  const ok = (w: number, h: number) => (w > 0 && h > 0 ? { width: w, height: h } : undefined);
  if (b.length >= 24 && b.readUInt32BE(0) === 0x89504e47 && b.toString('latin1', 12, 16) === 'IHDR') {
    return ok(b.readUInt32BE(16), b.readUInt32BE(20));
  }
  if (b.length >= 10 && (b.toString('latin1', 0, 6) === 'GIF87a' || b.toString('latin1', 0, 6) === 'GIF89a')) {
    return ok(b.readUInt16LE(6), b.readUInt16LE(8));
  }
  if (b.length >= 30 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') {
    const kind = b.toString('latin1', 12, 16);
    if (kind === 'VP8 ') return ok(b.readUInt16LE(26) & 0x3fff, b.readUInt16LE(28) & 0x3fff);
    if (kind === 'VP8L') {
      const w = 1 + (((b[22]! & 0x3f) << 8) | b[21]!);
      const h = 1 + (((b[24]! & 0x0f) << 10) | (b[23]! << 2) | ((b[22]! & 0xc0) >> 6));
      return ok(w, h);
    }
    if (kind === 'VP8X') return ok(1 + b.readUIntLE(24, 3), 1 + b.readUIntLE(27, 3));
    return undefined;
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    let i = 2;
    while (i + 9 < b.length) {
      if (b[i] !== 0xff) return undefined;
      const marker = b[i + 1]!;
      if (marker === 0xff) {
        i++;
        continue;
      }
      if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
        i += 2;
        continue;
      }
      const len = b.readUInt16BE(i + 2);
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return ok(b.readUInt16BE(i + 7), b.readUInt16BE(i + 5));
      }
      i += 2 + len;
    }
  }
  return undefined;
}

/**
 * The `__metadata__` map of a safetensors header, from the head bytes. When the whole header is there it is parsed;
 * otherwise the `__metadata__` object (which writers put first) is cut out of the partial header.
 */
export function safetensorsMetadata(b: Buffer): DerivedMetadata {
  if (b.length < 10) return {};
  const headerLen = Number(b.readBigUInt64LE(0));
  const text = b.toString('utf8', 8, Math.min(b.length, 8 + headerLen));
  let raw: unknown;
  try {
    raw = (JSON.parse(text) as Record<string, unknown>).__metadata__;
  } catch {
    raw = extractObject(text, '"__metadata__"');
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return {};
  const map: Record<string, string> = {};
  let bytes = 0;
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof v !== 'string') continue;
    const cost = Buffer.byteLength(k) + Buffer.byteLength(v);
    if (bytes + cost > SAFETENSORS_MAP_BYTES) continue;
    bytes += cost;
    map[k] = v;
  }
  const all = raw as Record<string, unknown>;
  const out: DerivedMetadata = { safetensors: map };
  const str = (k: string) =>
    typeof all[k] === 'string' && (all[k] as string).trim() !== '' ? (all[k] as string).trim() : undefined;
  const baseModel = str('ss_base_model_version') ?? str('modelspec.architecture') ?? str('ss_sd_model_name');
  if (baseModel) out.base_model = baseModel;
  const words = trainedWords(str('modelspec.trigger_phrase'), str('ss_tag_frequency'));
  if (words.length > 0) out.trained_words = words;
  return out;
}

/** `modelspec.trigger_phrase` (comma-separated), else the 20 most frequent tags of kohya's `ss_tag_frequency`. */
function trainedWords(trigger: string | undefined, tagFrequency: string | undefined): string[] {
  if (trigger)
    return trigger
      .split(',')
      .map((w) => w.trim())
      .filter(Boolean);
  if (!tagFrequency) return [];
  try {
    const freq = JSON.parse(tagFrequency) as Record<string, Record<string, number>>;
    const counts = new Map<string, number>();
    for (const dataset of Object.values(freq ?? {})) {
      for (const [tag, n] of Object.entries(dataset ?? {}))
        if (typeof n === 'number') counts.set(tag.trim(), (counts.get(tag.trim()) ?? 0) + n);
    }
    return [...counts.entries()]
      .filter(([t]) => t)
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, 20)
      .map(([t]) => t);
  } catch {
    return [];
  }
}

/** The JSON object following `key:` in `text`, if it is complete there. */
function extractObject(text: string, key: string): unknown {
  const at = text.indexOf(key);
  if (at < 0) return undefined;
  const start = text.indexOf('{', at + key.length);
  if (start < 0) return undefined;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) {
      try {
        return JSON.parse(text.slice(start, i + 1));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}
