/** Below this, a chunk is never taken for the sole user of its ArrayBuffer (Node's shared pool is 8 KiB). */
const OWN_MIN = 16 << 10;

/**
 * Whether `chunk` is, as far as can be told, the only view of its ArrayBuffer (so it may be freed here, or moved to
 * the ingest worker): large, ending where the buffer ends and covering nearly all of it. A parser may cut several
 * chunks from one read (HTTP chunked encoding): only the last of them ends where the buffer ends, so freeing or moving
 * the buffer with an earlier one would empty the later ones.
 */
export function holdsItsBuffer(chunk: Buffer): boolean {
  const ab = chunk.buffer;
  return (
    ab instanceof ArrayBuffer &&
    chunk.length >= OWN_MIN &&
    chunk.byteOffset + chunk.length === ab.byteLength &&
    ab.byteLength - chunk.length <= OWN_MIN
  );
}

/**
 * Frees the memory of a chunk its owner is done with (its bytes copied elsewhere), now rather than at V8's next full
 * mark-compact: a received chunk is a 64 KiB ArrayBuffer of external memory that barely fills the young generation,
 * so a GiB of them makes V8 mark the whole heap dozens of times. Detaching (`transfer(0)`) returns the memory at once.
 * Only for chunks nobody else uses (`ownsChunks`) that hold their buffer alone (`holdsItsBuffer`).
 */
export function releaseChunk(chunk: Buffer): void {
  if (holdsItsBuffer(chunk)) releaseBuffer(chunk);
}

/** Frees a buffer of one's own (allocated with `allocUnsafeSlow`, never shared, no write of it pending). */
export function releaseBuffer(buf: Buffer): void {
  (buf.buffer as ArrayBuffer as unknown as Detachable).transfer(0);
}

/** ES2024's ArrayBuffer.prototype.transfer (Node ≥ 22.12, see node-version.ts); the project's lib is ES2023. */
interface Detachable {
  transfer(newLength: number): ArrayBuffer;
}
