import { BatchCollector } from '../../src/domain/imports/import-batch';

/** The import's batches: committed in order, at most 64 at a time; after a failed commit nothing is lost for `drop`. */
test('batches of at most 64, committed one after the other, the rest on flush', async () => {
  const commits: number[][] = [];
  let running = 0;
  const c = new BatchCollector<number>(async (items) => {
    expect(running++).toBe(0);
    await new Promise((r) => setTimeout(r, 5));
    commits.push(items);
    running--;
  });
  await Promise.all(Array.from({ length: 150 }, (_, i) => c.add(i)));
  await c.flush();
  expect(commits.map((b) => b.length)).toEqual([64, 64, 22]);
  expect(commits.flat()).toEqual(Array.from({ length: 150 }, (_, i) => i));
});

test("after a failed commit, every item not yet committed is left for drop (the failed batch is its committer's to drop)", async () => {
  const c = new BatchCollector<number>(async () => {
    throw new Error('database gone');
  });
  const adds = Array.from({ length: 70 }, (_, i) => c.add(i).catch((e: Error) => e.message));
  await expect(c.flush()).rejects.toThrow('database gone');
  expect(new Set(await Promise.all(adds))).toEqual(new Set([undefined, 'database gone']));
  const dropped: number[] = [];
  await c.drop(async (i) => void dropped.push(i));
  // The first 64 went to the failed commit (which drops them itself); the 6 after it are dropped here.
  expect(dropped.sort((a, b) => a - b)).toEqual([64, 65, 66, 67, 68, 69]);
});
