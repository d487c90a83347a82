import crypto from 'node:crypto';
import { DomainError } from '../errors';

/** Incremental BLAKE3; the native addon where it loads, else the WebAssembly build. */
interface Blake3Incremental {
  update(chunk: Uint8Array): void;
  hex(): string;
}

type Blake3Factory = () => Blake3Incremental;

function loadBlake3(): { impl: 'native' | 'wasm'; create: Blake3Factory } {
  if (process.env.ASSET_SERVICE_FORCE_WASM_BLAKE3 !== '1') {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { Blake3Hasher } = require('@napi-rs/blake-hash') as typeof import('@napi-rs/blake-hash');
      new Blake3Hasher().update(Buffer.alloc(1)).digest('hex');
      return {
        impl: 'native',
        create: () => {
          const h = new Blake3Hasher();
          return { update: (c) => void h.update(c), hex: () => h.digest('hex') };
        },
      };
    } catch {
      // fall through to WebAssembly
    }
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const wasm = require('blake3') as { createHash(): { update(c: Uint8Array): void; digest(enc: 'hex'): string } };
  return {
    impl: 'wasm',
    create: () => {
      const h = wasm.createHash();
      return { update: (c) => h.update(c), hex: () => h.digest('hex') };
    },
  };
}

let blake3: ReturnType<typeof loadBlake3> | undefined;
const getBlake3 = () => (blake3 ??= loadBlake3());

/** Which BLAKE3 implementation this process uses. */
export const blake3Implementation = (): 'native' | 'wasm' => getBlake3().impl;

export interface ContentDigest {
  blake3: string;
  sha256: string;
  size: number;
}

/** BLAKE3 and SHA-256 of a stream, computed in one pass as the bytes go by. */
export class DualHasher {
  private readonly b3 = getBlake3().create();
  private readonly sha = crypto.createHash('sha256');
  size = 0;

  update(chunk: Buffer): void {
    this.b3.update(chunk);
    this.sha.update(chunk);
    this.size += chunk.length;
  }

  digest(): ContentDigest {
    return { blake3: this.b3.hex(), sha256: this.sha.digest('hex'), size: this.size };
  }
}

/**
 * Passes `source` through unchanged while feeding `hasher` and enforcing `maxBytes` (413 once exceeded, before the
 * excess is written anywhere). `head` receives the first bytes, for content sniffing.
 */
export async function* hashing(
  source: AsyncIterable<Buffer>,
  hasher: DualHasher,
  opts: { maxBytes: number; onHead?: (head: Buffer) => void; headBytes?: number },
): AsyncGenerator<Buffer> {
  const headBytes = opts.headBytes ?? 4100;
  const head: Buffer[] = [];
  let headLen = 0;
  let headDone = !opts.onHead;
  for await (const chunk of source) {
    if (hasher.size + chunk.length > opts.maxBytes) {
      throw new DomainError('PAYLOAD_TOO_LARGE', `the content is larger than the limit of ${opts.maxBytes} bytes`, {
        max_bytes: opts.maxBytes,
      });
    }
    hasher.update(chunk);
    if (!headDone) {
      head.push(chunk);
      headLen += chunk.length;
      if (headLen >= headBytes) {
        headDone = true;
        opts.onHead!(Buffer.concat(head).subarray(0, headBytes));
      }
    }
    yield chunk;
  }
  if (!headDone) opts.onHead!(Buffer.concat(head));
}

export const HASH_PATTERN = /^(blake3|sha256):([a-f0-9]{64})$/;

export interface ParsedHash {
  algorithm: 'blake3' | 'sha256';
  hex: string;
}

export function parseHash(value: unknown): ParsedHash | undefined {
  if (typeof value !== 'string') return undefined;
  const m = HASH_PATTERN.exec(value);
  return m ? { algorithm: m[1] as ParsedHash['algorithm'], hex: m[2]! } : undefined;
}
