/**
 * The Comfy asset fields' building blocks without a database: derived metadata, the path sanitiser, cursors, URL bases.
 */
import http from 'node:http';
import { Socket } from 'node:net';
import { decodeCursor, encodeCursor } from '../../src/domain/assets/cursor';
import { safeRelativePath } from '../../src/domain/assets/safe-path';
import {
  deriveFromHead,
  imageSize,
  safetensorsMetadata,
  SAFETENSORS_MAP_BYTES,
} from '../../src/domain/content/derived-metadata';
import {
  folderOfProviderTypes,
  isModelTagged,
  modelFolderOf,
  modelFolderTags,
} from '../../src/domain/assets/comfy-folders';
import { isOwnPreviewType } from '../../src/domain/content/mime';
import { isDomainError } from '../../src/domain/errors';
import { baseUrlOf } from '../../src/http/base-url';

const ID = '0b7d1a52-9c3e-4a57-8c53-0c3f1f2a9e10';

describe('image sizes from the first bytes', () => {
  test('PNG, GIF, WebP (VP8, VP8L, VP8X) and JPEG', () => {
    const png = Buffer.alloc(33);
    png.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    png.write('IHDR', 12, 'latin1');
    png.writeUInt32BE(1024, 16);
    png.writeUInt32BE(768, 20);
    expect(imageSize(png)).toEqual({ width: 1024, height: 768 });

    const gif = Buffer.alloc(13);
    gif.write('GIF89a', 0, 'latin1');
    gif.writeUInt16LE(320, 6);
    gif.writeUInt16LE(200, 8);
    expect(imageSize(gif)).toEqual({ width: 320, height: 200 });

    const webp = (kind: string, fill: (b: Buffer) => void) => {
      const b = Buffer.alloc(40);
      b.write('RIFF', 0, 'latin1');
      b.write('WEBP', 8, 'latin1');
      b.write(kind, 12, 'latin1');
      fill(b);
      return b;
    };
    expect(imageSize(webp('VP8 ', (b) => (b.writeUInt16LE(640, 26), b.writeUInt16LE(480, 28))))).toEqual({
      width: 640,
      height: 480,
    });
    expect(imageSize(webp('VP8X', (b) => (b.writeUIntLE(1919, 24, 3), b.writeUIntLE(1079, 27, 3))))).toEqual({
      width: 1920,
      height: 1080,
    });
    // VP8L: 14-bit width-1 and height-1 packed after the signature byte.
    const w = 99,
      h = 49;
    const bits = (w - 1) | ((h - 1) << 14);
    expect(imageSize(webp('VP8L', (b) => ((b[20] = 0x2f), b.writeUInt32LE(bits, 21))))).toEqual({
      width: 99,
      height: 49,
    });

    // JPEG: APP0, then SOF0 with height 600 and width 800.
    const jpeg = Buffer.from([
      0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x02, 0x58, 0x03, 0x20, 0x03, 0, 0,
      0, 0,
    ]);
    expect(imageSize(jpeg)).toEqual({ width: 800, height: 600 });
    expect(imageSize(Buffer.from('not an image'))).toBeUndefined();
  });
});

describe('safetensors __metadata__', () => {
  const file = (meta: Record<string, unknown>, cut?: number) => {
    const header = Buffer.from(
      JSON.stringify({ __metadata__: meta, t: { dtype: 'F16', shape: [1], data_offsets: [0, 2] } }),
    );
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(header.length));
    const whole = Buffer.concat([len, header, Buffer.alloc(2)]);
    return cut === undefined ? whole : whole.subarray(0, cut);
  };

  test('string values only, base_model and trained_words from kohya and modelspec keys', () => {
    const kohya = safetensorsMetadata(
      file({ ss_sd_model_name: 'v1-5.ckpt', ss_tag_frequency: '{"a":{"x":1,"y":5},"b":{"x":6}}', num: 3 }),
    );
    expect(kohya).toEqual({
      safetensors: { ss_sd_model_name: 'v1-5.ckpt', ss_tag_frequency: '{"a":{"x":1,"y":5},"b":{"x":6}}' },
      base_model: 'v1-5.ckpt',
      trained_words: ['x', 'y'],
    });
    const spec = safetensorsMetadata(
      file({ 'modelspec.architecture': 'stable-diffusion-xl-v1-base/lora', 'modelspec.trigger_phrase': 'foo, bar ,' }),
    );
    expect(spec).toMatchObject({ base_model: 'stable-diffusion-xl-v1-base/lora', trained_words: ['foo', 'bar'] });
  });

  test('at most 64 KiB of keys and values; a header cut short still gives __metadata__ when it came first', () => {
    const big = safetensorsMetadata(file({ a: 'x'.repeat(40_000), b: 'y'.repeat(40_000), c: 'z' }));
    expect(Object.keys(big.safetensors as object)).toEqual(['a', 'c']);
    const sizes = Object.entries(big.safetensors as Record<string, string>).reduce(
      (n, [k, v]) => n + k.length + v.length,
      0,
    );
    expect(sizes).toBeLessThanOrEqual(SAFETENSORS_MAP_BYTES);
    const whole = file({ ss_base_model_version: 'sdxl', s: 'a "quoted" } brace' });
    const cut = whole.subarray(0, whole.indexOf('"t"') + 2);
    expect(safetensorsMetadata(cut)).toEqual({
      safetensors: { ss_base_model_version: 'sdxl', s: 'a "quoted" } brace' },
      base_model: 'sdxl',
    });
    expect(deriveFromHead(whole, 'application/x-safetensors', undefined)).toMatchObject({
      format: 'safetensors',
      base_model: 'sdxl',
    });
    expect(deriveFromHead(Buffer.from('GGUF....'), 'application/x-gguf', undefined)).toEqual({ format: 'gguf' });
    expect(deriveFromHead(Buffer.from('zzzz'), 'application/octet-stream', 'model.ckpt')).toEqual({ format: 'ckpt' });
  });
});

test('safeRelativePath: the one sanitiser for names that become paths', () => {
  for (const ok of ['a.safetensors', 'SDXL/base.safetensors', 'a b/c..d.gguf']) expect(safeRelativePath(ok)).toBe(ok);
  for (const bad of ['', '/abs', '../x', 'a/../b', './a', 'a//b', 'a/', 'a\\b', 'a\u0000b', 'a\nb'])
    expect(safeRelativePath(bad)).toBeUndefined();
});

test('cursors: opaque round trip; another sort/order or a forged value is INVALID_CURSOR', () => {
  const c = encodeCursor('created_at', 'desc', { value: '2026-01-01T00:00:00.000Z', id: ID });
  expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
  expect(decodeCursor(c, 'created_at', 'desc')).toEqual({ value: '2026-01-01T00:00:00.000Z', id: ID });
  const code = (f: () => unknown) => {
    try {
      f();
      return 'ok';
    } catch (err) {
      return isDomainError(err) ? err.code : String(err);
    }
  };
  expect(code(() => decodeCursor(c, 'created_at', 'asc'))).toBe('INVALID_CURSOR');
  expect(code(() => decodeCursor(c, 'updated_at', 'desc'))).toBe('INVALID_CURSOR');
  expect(code(() => decodeCursor(encodeCursor('size', 'asc', { value: 'x', id: ID }), 'size', 'asc'))).toBe(
    'INVALID_CURSOR',
  );
  expect(code(() => decodeCursor(encodeCursor('name', 'asc', { value: 'n', id: 'nope' }), 'name', 'asc'))).toBe(
    'INVALID_CURSOR',
  );
  expect(code(() => decodeCursor('%%%', 'name', 'asc'))).toBe('INVALID_CURSOR');
  expect(code(() => decodeCursor(encodeCursor('size', 'asc', { value: 12, id: ID }), 'size', 'asc'))).toBe('ok');
});

test('model folders from provider model types', () => {
  expect(folderOfProviderTypes(['LORA'])).toBe('loras');
  expect(folderOfProviderTypes(['LoCon'])).toBe('loras');
  expect(folderOfProviderTypes(['sub', 'upscale_models'])).toBe('upscale_models');
  expect(folderOfProviderTypes(['Poses'])).toBeUndefined();
});

test("an asset's model folder: its model_type: tag, else the tag after models naming a ComfyUI folder (contract 3.7)", () => {
  expect(modelFolderOf(['x', 'model_type:loras', 'models', 'vae'])).toBe('loras');
  expect(modelFolderOf(['model_type:my_custom_nodes_folder'])).toBe('my_custom_nodes_folder');
  expect(modelFolderOf(['models', 'team-x', 'checkpoints'])).toBe('checkpoints');
  expect(modelFolderOf(['checkpoints', 'models'])).toBeUndefined();
  expect(modelFolderOf(['models', 'Loras'])).toBeUndefined();
  expect(modelFolderOf(['model_type:', 'loras'])).toBeUndefined();
  expect(modelFolderTags('loras')).toEqual(['models', 'model_type:loras', 'loras']);
  expect([
    isModelTagged(['models']),
    isModelTagged(['model_type:vae']),
    isModelTagged(['model_type:']),
    isModelTagged(['loras']),
  ]).toEqual([true, true, false, false]);
});

test('which types are their own preview (contract 3.7)', () => {
  const own = [
    'image/png',
    'image/svg+xml',
    'video/mp4',
    'audio/wav',
    'text/plain',
    'Text/Plain; charset=utf-8',
    'application/json',
    'text/markdown',
    // Every text/* (contract 6.4, ComfyUI's current rule), active HTML included: it is still served as a download.
    'text/html',
    'text/x-python',
  ];
  const not = [
    'application/x-safetensors',
    'application/octet-stream',
    'application/x-gguf',
    'application/zip',
    'application/pdf',
  ];
  expect(own.map(isOwnPreviewType)).toEqual(own.map(() => true));
  expect(not.map(isOwnPreviewType)).toEqual(not.map(() => false));
});

describe('the base of absolute URLs', () => {
  const req = (headers: Record<string, string>) => {
    const r = new http.IncomingMessage(new Socket());
    r.headers = headers;
    return r;
  };
  test('PUBLIC_URL wins; else Host; X-Forwarded-* only with TRUST_PROXY', () => {
    const fwd = { host: 'inner:8080', 'x-forwarded-host': 'assets.example.com', 'x-forwarded-proto': 'https' };
    expect(baseUrlOf(req(fwd), { publicUrl: 'https://pub.example/base', trustProxy: true })).toBe(
      'https://pub.example/base',
    );
    expect(baseUrlOf(req(fwd), { publicUrl: undefined, trustProxy: false })).toBe('http://inner:8080');
    expect(baseUrlOf(req(fwd), { publicUrl: undefined, trustProxy: true })).toBe('https://assets.example.com');
    expect(baseUrlOf(req({ host: 'bad host/x' }), { publicUrl: undefined, trustProxy: false })).not.toContain(
      'bad host',
    );
  });
});
