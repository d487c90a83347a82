import type { Logger } from '../../infra/logger';
import type { IngestedContent } from '../content/content.service';
import { DEFAULT_MIME, mimeFromName } from '../content/mime';
import type { DownloadDeps } from './download.service';
import { digestMismatch, PROBE_TIMEOUT_MS } from './download.service';
import type { Transfer } from './download.repository';
import type { TransferProgress } from './download-lease';
import { lastSegment, SourceError } from './providers/provider';
import { SourceTransfer, withRetries } from './source-transfer';

export const partialName = (transferId: string): string => `download-${transferId}`;

/**
 * The transfer itself: streams the source to its partial file (resuming what an earlier attempt or process left),
 * verifies the provider's hash and stores the content under its hash. Returns the BLAKE3; sets `t.fileName`.
 */
export async function downloadAndStore(
  d: DownloadDeps & { maxBytes: number },
  t: Transfer,
  token: string,
  signal: AbortSignal,
  progress: TransferProgress,
  log: Logger,
): Promise<string> {
  const { provider, url } = d.providers.resolve(t.sourceUrl);
  const expected = { sha256: t.expectedSha256, blake3: t.expectedBlake3 };
  if (!expected.sha256 && !expected.blake3)
    Object.assign(
      expected,
      await provider.probe(url, AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)])),
    );
  const transfer = new SourceTransfer(
    { fetcher: d.fetcher, blobs: d.blobs, hashers: d.hashers, meter: d.meter, bodiesOnWorker: d.bodiesOnWorker },
    {
      url,
      auth: provider.auth(),
      partialName: partialName(t.id),
      validator: t.validator,
      maxBytes: d.maxBytes,
      signal,
      onResponse: async (r) => {
        progress.total = r.total;
        progress.bytes = r.offset;
        await d.repo.saveResponse(t.id, token, {
          validator: r.validator,
          total: r.total,
          bytes: r.offset,
          fileName: r.fileName,
        });
      },
    },
  );
  const counter = setInterval(() => (progress.bytes = transfer.bytes), 100);
  const startedAt = Date.now();
  let ingested: IngestedContent;
  try {
    ingested = await withRetries(transfer, () => transfer.attempt(), {
      signal,
      onRetry: (err, delayMs) =>
        log.info('download interrupted; retrying', {
          reason: err.message,
          delay_ms: Math.round(delayMs),
          bytes: transfer.bytes,
        }),
    });
  } finally {
    clearInterval(counter);
    transfer.close();
  }
  progress.bytes = ingested.digest.size;
  const mismatch = digestMismatch(ingested.digest, expected);
  if (mismatch) throw new SourceError('HASH_MISMATCH', `the download does not match the provider's hash: ${mismatch}`);
  const fileName = transfer.fileName ?? t.fileName ?? lastSegment(url) ?? 'download';
  const mimeType =
    ingested.sniffedMime && ingested.sniffedMime !== DEFAULT_MIME
      ? ingested.sniffedMime
      : (mimeFromName(fileName) ?? DEFAULT_MIME);
  const blake3 = ingested.digest.blake3;
  try {
    // The copy to the content address (slow on S3 for large files) happens before the lock: see precommit.
    await d.content.precommit(ingested);
    await d.transactions.run(
      async (tx) => {
        await d.content.lock(blake3, tx);
        await d.content.ensureStored(tx, ingested, { name: fileName, mimeType });
        await d.repo.saveSource(t.sourceUrl, blake3, fileName, tx);
        await d.repo.setStored(t.id, blake3, ingested.digest.size, fileName, tx);
      },
      { timeoutMs: 120_000, maxWaitMs: 30_000 },
    );
  } finally {
    await d.content.discard(ingested);
  }
  t.fileName = fileName;
  const seconds = (Date.now() - startedAt) / 1000;
  log.info('download stored', {
    blake3,
    bytes: ingested.digest.size,
    seconds,
    mib_per_s: Math.round(ingested.digest.size / 1048576 / seconds),
  });
  return blake3;
}
