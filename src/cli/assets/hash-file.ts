import fs from 'node:fs/promises';
import { blake3 } from '../../infra/blake3';

const READ = 4 << 20;

/**
 * `blake3:<hex>` of a file, read once: 4 MiB reads into two reused buffers, the next read in flight while the
 * current one is hashed (no allocation per read, disk and hashing overlap). `onBytes` sees the running count.
 */
export async function hashFile(file: string, onBytes?: (done: number) => void): Promise<string> {
  const h = blake3().create();
  const fh = await fs.open(file, 'r');
  try {
    const bufs = [Buffer.allocUnsafe(READ), Buffer.allocUnsafe(READ)];
    let done = 0;
    let which = 0;
    let pending = fh.read(bufs[0]!, 0, READ, null);
    for (;;) {
      const { bytesRead } = await pending;
      if (bytesRead === 0) break;
      const current = bufs[which]!;
      which ^= 1;
      pending = fh.read(bufs[which]!, 0, READ, null);
      h.update(current.subarray(0, bytesRead));
      done += bytesRead;
      onBytes?.(done);
    }
    return `blake3:${h.hex()}`;
  } finally {
    await fh.close();
  }
}
