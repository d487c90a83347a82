/**
 * What the domain reports about bytes on the move, for the operator's metrics. An interface
 * here so the domain does not depend on the metrics library; `infra/metrics.ts` implements it.
 */
export interface TransferMeter {
  /** An upload (bytes from a client into the content ingest) or a download (from a provider) began; returns its end. */
  begin(kind: 'upload' | 'download'): () => void;
  /**
   * Bytes received from a client (`uploaded`), fetched from a provider (`downloaded`) or sent to a client (`served`).
   */
  add(flow: 'uploaded' | 'downloaded' | 'served', bytes: number): void;
}

const end = (): void => undefined;

/** Counts nothing (tests and tools that build services without metrics). */
export const NO_METER: TransferMeter = { begin: () => end, add: () => undefined };
