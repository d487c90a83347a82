import fs from 'node:fs';
import { blake3 } from '../../infra/blake3';

/** `blake3:<hex>` of a file, read once as a stream (4 MiB reads); `onBytes` sees the running count. */
export async function hashFile(file: string, onBytes?: (done: number) => void): Promise<string> {
  const h = blake3().create();
  let done = 0;
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 4 << 20 })) {
    h.update(chunk as Buffer);
    done += (chunk as Buffer).length;
    onBytes?.(done);
  }
  return `blake3:${h.hex()}`;
}
