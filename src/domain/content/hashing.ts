import crypto from 'node:crypto';
import { blake3 } from '../../infra/blake3';
import { DomainError } from '../errors';

export interface ContentDigest {
  blake3: string;
  sha256: string;
  size: number;
}

/** BLAKE3 and SHA-256 of a stream, computed in one pass as the bytes go by. */
export class DualHasher {
  private readonly b3 = blake3().create();
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
 * Passes `source` through unchanged while feeding `hasher` (if any) and enforcing `maxBytes` (413 once exceeded,
 * before the excess is written anywhere). `onHead` receives a copy of the first bytes, for content sniffing (a copy:
 * the consumer may detach the chunks it was given, see BlobStore.writeTempHashed).
 */
export async function* hashing(
  source: AsyncIterable<Buffer>,
  hasher: DualHasher | undefined,
  opts: { maxBytes: number; onHead?: (head: Buffer) => void; headBytes?: number; onBytes?: (bytes: number) => void },
): AsyncGenerator<Buffer> {
  const headBytes = opts.headBytes ?? 4100;
  const head: Buffer[] = [];
  let headLen = 0;
  let headDone = !opts.onHead;
  let size = 0;
  for await (const chunk of source) {
    size += chunk.length;
    if (size > opts.maxBytes) {
      throw new DomainError('PAYLOAD_TOO_LARGE', `the content is larger than the limit of ${opts.maxBytes} bytes`, {
        max_bytes: opts.maxBytes,
      });
    }
    hasher?.update(chunk);
    opts.onBytes?.(chunk.length);
    if (!headDone) {
      const part = Buffer.from(chunk.subarray(0, headBytes - headLen));
      head.push(part);
      headLen += part.length;
      if (headLen >= headBytes) {
        headDone = true;
        opts.onHead!(Buffer.concat(head));
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
