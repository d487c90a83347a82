import { BackgroundSync, type BlockSink } from '../../src/infra/blob-store/block-writer';

/**
 * The background syncs of the block writer (uploads, resumable uploads' parts): one at a time, and a failed one is
 * kept for the writer (Linux reports a writeback error to one fsync of a descriptor only: the final
 * fsync after a failed background sync succeeds, so the writer must look at the background sync's outcome).
 */
function sink() {
  const pending: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  const s: BlockSink = {
    write: async (_b, _o, length) => ({ bytesWritten: length }),
    writev: async (bufs) => ({ bytesWritten: bufs.reduce((n, b) => n + b.length, 0) }),
    datasync: () => new Promise<void>((resolve, reject) => pending.push({ resolve, reject })),
  };
  return { s, pending };
}
const tick = () => new Promise((r) => setImmediate(r));

test('one background sync at a time without slots; the next starts once it ended and enough was written', async () => {
  const { s, pending } = sink();
  const sync = new BackgroundSync(s, 4);
  sync.wrote(4);
  sync.wrote(4);
  sync.wrote(4);
  expect(pending).toHaveLength(1);
  pending[0]!.resolve();
  await tick();
  sync.wrote(1);
  expect(pending).toHaveLength(2);
  pending[1]!.resolve();
  await sync.settled();
  expect(sync.failure).toBeUndefined();
});

test('a failed background sync is kept for the writer, and settled() does not reject', async () => {
  const { s, pending } = sink();
  const sync = new BackgroundSync(s, 1);
  sync.wrote(1);
  pending[0]!.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  await sync.settled();
  expect(sync.failure?.message).toMatch(/EIO/);
});
