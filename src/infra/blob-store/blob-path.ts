/**
 * `ab/cd/abcd…`: two levels of fan-out keep directories small. A module of its own so the ingest worker, which
 * commits the import's files under their content address, loads nothing more (copy-hashed.ts).
 */
export function blobPath(blake3Hex: string): string {
  return `${blake3Hex.slice(0, 2)}/${blake3Hex.slice(2, 4)}/${blake3Hex}`;
}
