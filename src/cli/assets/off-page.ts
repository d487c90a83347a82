/**
 * A buffer of `size` bytes that does not start at the beginning of a memory page, for the CLI's file reads and writes.
 *
 * Node allocates large buffers page-aligned, and the kernel's copy between the page cache (whole pages: file offsets
 * that are multiples of 4 KiB) and a buffer at the same offset in its page costs several times the system time of any
 * other offset on a virtualized AMD EPYC (`node bench/profiles/cli-hash.cjs`). 64 bytes keep the buffer cache-line
 * aligned; nothing is lost elsewhere.
 */
export function offPage(size: number): Buffer {
  return Buffer.allocUnsafeSlow(size + 64).subarray(64);
}
