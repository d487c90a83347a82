import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BlobNotFoundError, type BlobStore, type TempBlob } from '../../src/infra/blob-store/blob-store';
import { FsBlobStore } from '../../src/infra/blob-store/fs';
import { IngestWorkers } from '../../src/infra/blob-store/ingest-pool';
import { S3BlobStore } from '../../src/infra/blob-store/s3';
import { startS3Server, type TestS3Server } from '../helpers/rgw';

/**
 * One contract, run unchanged against every backend. "No temporaries left" is observed through the store's own
 * sweeper with a cut-off in the future (it counts whatever temporaries, partials and unfinished uploads exist).
 */
const MiB = 1024 * 1024;
const ALL = -3600_000;
/** The quarantine day cases move blobs aside to when they are done with them. */
const DAY = '2026-01-01';

interface Backend {
  name: string;
  /** Bytes of a partial's segment (the S3 store's resumable unit; any size on disk). */
  segment: number;
  setup(): Promise<{ store: BlobStore; reopen(): BlobStore; teardown(): Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'fs',
    segment: MiB,
    setup: async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-blobs-'));
      const workers = new IngestWorkers();
      const store = new FsBlobStore(dir, workers);
      await store.init();
      return {
        store,
        reopen: () => new FsBlobStore(dir, workers),
        teardown: async () => {
          await workers.close();
          fs.rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 's3',
    segment: 5 * MiB,
    setup: async () => {
      const s3: TestS3Server = await startS3Server();
      // Small sizes so the multipart paths (upload parts, UploadPartCopy) run on small data; segments are S3's smallest
      // part (5 MiB, which RGW enforces as AWS does), since a committed partial is copied part by part.
      const make = () =>
        new S3BlobStore(
          {
            backend: 's3',
            bucket: s3.bucket,
            endpoint: s3.endpoint,
            region: 'us-east-1',
            forcePathStyle: true,
            prefix: 'pfx',
            presignedDownloads: true,
          },
          { partSize: 5 * MiB, queueSize: 2, maxSingleCopyBytes: 4 * MiB, copyPartSize: 5 * MiB, segmentSize: 5 * MiB },
        );
      const store = make();
      await store.init();
      return {
        store,
        reopen: make,
        teardown: async () => {
          await store.close();
          await s3.stop();
        },
      };
    },
  },
];

const hex = (b: Buffer) =>
  crypto
    .createHash('sha256')
    .update(b)
    .digest('hex')
    .replace(/^(.{64}).*$/, '$1');
async function* chunks(buf: Buffer, size = 64 * 1024): AsyncIterable<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}
async function* failingAfter(buf: Buffer, bytes: number): AsyncIterable<Buffer> {
  for await (const c of chunks(buf.subarray(0, bytes))) yield c;
  throw new Error('client went away');
}
async function collect(src: AsyncIterable<Buffer | string> | NodeJS.ReadableStream): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of src as AsyncIterable<Buffer>) out.push(Buffer.from(c));
  return Buffer.concat(out);
}
const random = (n: number) => crypto.randomBytes(n);

describe.each(backends)('$name blob store', (backend) => {
  let store: BlobStore;
  let reopen: () => BlobStore;
  let teardown: () => Promise<void>;
  beforeAll(async () => {
    ({ store, reopen, teardown } = await backend.setup());
  });
  afterAll(async () => {
    await teardown?.();
  });
  afterEach(async () => {
    // Every case leaves no temporaries behind unless it says otherwise.
    expect(await store.sweepTemps(ALL)).toBe(0);
  });

  test('write, commit, exists, read, range, move aside', async () => {
    const data = random(300_000);
    const h = hex(data);
    const temp = await store.writeTemp(chunks(data));
    expect(temp.size).toBe(data.length);
    expect(await store.exists(h)).toBe(false);
    await store.commit(temp, h);
    expect(await store.exists(h)).toBe(true);
    expect((await collect(await store.read(h))).equals(data)).toBe(true);
    expect((await collect(await store.read(h, { start: 1000, end: 1999 }))).equals(data.subarray(1000, 2000))).toBe(
      true,
    );
    expect(
      (await collect(await store.read(h, { start: data.length - 1, end: data.length - 1 }))).equals(data.subarray(-1)),
    ).toBe(true);
    await store.quarantine(h, DAY);
    expect(await store.exists(h)).toBe(false);
    await expect(store.read(h)).rejects.toBeInstanceOf(BlobNotFoundError);
    await store.quarantine(h, DAY); // moving a missing blob aside is not an error
  });

  test('derived objects: stored beside a blob, replaced, never listed as blobs, moved aside with the blob', async () => {
    const data = random(10_000);
    const h = hex(data);
    await store.commit(await store.writeTemp(chunks(data)), h);
    expect(await store.readDerived(h, 'thumbnail.webp')).toBeUndefined();
    await store.putDerived(h, 'thumbnail.webp', Buffer.from('first'));
    await store.putDerived(h, 'thumbnail.webp', Buffer.from('second'));
    expect((await store.readDerived(h, 'thumbnail.webp'))?.toString()).toBe('second');
    const listed: string[] = [];
    for await (const b of store.listBlobs(-3600_000)) listed.push(b);
    expect(listed.filter((b) => b.startsWith(h))).toEqual([h]);
    await store.quarantine(h, DAY);
    expect(await store.exists(h)).toBe(false);
    expect(await store.readDerived(h, 'thumbnail.webp')).toBeUndefined();
    expect(await store.restore(h)).toBe(true);
    expect((await store.readDerived(h, 'thumbnail.webp'))?.toString()).toBe('second');
    await store.quarantine(h, DAY);
  });

  test('derived objects without a blob (an in-place content): moving the content aside removes them', async () => {
    const h = hex(random(4_000));
    await store.putDerived(h, 'thumbnail.webp', Buffer.from('made from the file'));
    expect(await store.exists(h)).toBe(false);
    await store.quarantine(h, DAY);
    expect(await store.readDerived(h, 'thumbnail.webp')).toBeUndefined();
    expect(await store.restore(h)).toBe(false);
    expect(await store.readDerived(h, 'thumbnail.webp')).toBeUndefined();
  });

  test('quarantine: moved aside whole, listed with its day, back on a restore (never on a read), removed only by purge', async () => {
    const data = random(12 * MiB + 777); // above the S3 store's single-copy limit here: moved by a multipart copy
    const h = hex(data);
    await store.commit(await store.writeTemp(chunks(data, 1 << 20)), h);
    const quarantined = async () => {
      const out: string[] = [];
      for await (const q of store.listQuarantined()) if (q.blake3 === h) out.push(`${q.day} ${q.size}`);
      return out.sort();
    };
    await store.quarantine(h, '2026-01-02');
    const live: string[] = [];
    for await (const b of store.listBlobs(ALL)) live.push(b);
    expect(live).not.toContain(h);
    expect(await quarantined()).toEqual([`2026-01-02 ${data.length}`]);
    await expect(store.read(h)).rejects.toBeInstanceOf(BlobNotFoundError);
    // The store's own read never takes a blob out of the quarantine (only ContentReadingStore does, under the lock).
    expect(await quarantined()).toEqual([`2026-01-02 ${data.length}`]);
    expect(await store.restore(h)).toBe(true);
    expect((await collect(await store.read(h, { start: 5, end: 9 }))).equals(data.subarray(5, 10))).toBe(true);
    expect(await quarantined()).toEqual([]);
    await store.quarantine(h, '2026-01-03');
    expect(await store.restore(h)).toBe(true);
    expect((await collect(await store.read(h))).equals(data)).toBe(true);
    expect(await store.restore(h)).toBe(false);
    await store.quarantine(h, '2026-01-04');
    await store.purgeQuarantined(h, '2026-01-04');
    await store.purgeQuarantined(h, '2026-01-04'); // already gone is fine
    expect(await quarantined()).toEqual([]);
    expect(await store.restore(h)).toBe(false);
    await expect(store.read(h)).rejects.toBeInstanceOf(BlobNotFoundError);
    await expect(store.quarantine(h, '../x')).rejects.toThrow(/invalid quarantine day/);
  });

  test('capabilities: each store names what it offers beyond the common interface', () => {
    const offered = Object.keys(store.capabilities).filter(
      (k) => store.capabilities[k as keyof typeof store.capabilities],
    );
    expect(offered.sort()).toEqual(backend.name === 's3' ? ['presign'] : ['hashedWrites', 'localFiles', 'space']);
  });

  test('localFiles: where the store keeps blobs on local disk, the path of a stored blob; BlobNotFoundError for a missing one', async () => {
    const data = random(20_000);
    const h = hex(data);
    const local = store.capabilities.localFiles;
    if (!local) {
      expect(backend.name).toBe('s3'); // read through `read` only
      return;
    }
    await expect(local.localPath(h)).rejects.toBeInstanceOf(BlobNotFoundError);
    await store.commit(await store.writeTemp(chunks(data)), h);
    expect(fs.readFileSync(await local.localPath(h)).equals(data)).toBe(true);
    await store.quarantine(h, DAY);
    // Only in the quarantine: not found, and left there (as for `read`).
    await expect(local.localPath(h)).rejects.toBeInstanceOf(BlobNotFoundError);
    expect(await store.restore(h)).toBe(true);
    await store.quarantine(h, DAY);
    await store.purgeQuarantined(h, DAY);
    await expect(local.localPath(h)).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  test('a multipart-sized blob round-trips, also across part boundaries', async () => {
    const data = random(12 * MiB + 12345);
    const h = hex(data);
    await store.commit(await store.writeTemp(chunks(data, 1 << 20)), h);
    expect((await collect(await store.read(h))).equals(data)).toBe(true);
    const range = { start: 5 * MiB - 10, end: 10 * MiB + 10 };
    expect((await collect(await store.read(h, range))).equals(data.subarray(range.start, range.end + 1))).toBe(true);
    await store.quarantine(h, DAY);
  });

  test('a zero-byte blob', async () => {
    const h = hex(Buffer.alloc(0));
    const temp = await store.writeTemp(chunks(Buffer.alloc(0)));
    expect(temp.size).toBe(0);
    await store.commit(temp, h);
    expect(await store.exists(h)).toBe(true);
    expect((await collect(await store.read(h))).length).toBe(0);
    await store.quarantine(h, DAY);
  });

  test('commit is idempotent: the same content twice ends as one blob and no temporaries', async () => {
    const data = random(50_000);
    const h = hex(data);
    const [a, b] = await Promise.all([store.writeTemp(chunks(data)), store.writeTemp(chunks(data))]);
    await store.commit(a, h);
    await store.commit(b, h);
    await store.commit(b, h); // a temp already gone is fine too
    expect((await collect(await store.read(h))).equals(data)).toBe(true);
    const listed: string[] = [];
    for await (const x of store.listBlobs(ALL)) listed.push(x);
    expect(listed).toEqual([h]);
    await store.quarantine(h, DAY);
  });

  test('commit with keepTemp leaves the temporary until it is discarded', async () => {
    const data = random(10_000);
    const h = hex(data);
    const temp = await store.writeTemp(chunks(data));
    await store.commit(temp, h, { keepTemp: true });
    await store.commit(temp, h, { keepTemp: true });
    expect(await store.exists(h)).toBe(true);
    expect(await store.sweepTemps(3600_000)).toBe(0); // young temporaries are left alone
    await store.discard(temp);
    await store.discard(temp);
    expect((await collect(await store.read(h))).equals(data)).toBe(true);
    await store.quarantine(h, DAY);
  });

  test('discard removes a temporary', async () => {
    const temp = await store.writeTemp(chunks(random(1000)));
    await store.discard(temp);
  });

  test.each([
    ['small', 100_000],
    ['multipart', 11 * MiB],
  ])('a failure mid-stream (%s) rejects with the source error and leaves nothing', async (_what, bytes) => {
    const data = random(bytes + 10);
    await expect(store.writeTemp(failingAfter(data, bytes))).rejects.toThrow('client went away');
    expect(await store.sweepTemps(ALL)).toBe(0);
  });

  test('sweepTemps removes only what is older than the cut-off', async () => {
    await store.writeTemp(chunks(random(1000)));
    const partial = await store.openPartial('sweep-me');
    await partial.append(chunks(random(1000)));
    expect(await store.sweepTemps(3600_000)).toBe(0);
    expect(await store.sweepTemps(ALL)).toBe(2);
  });

  test('partials: append, fail, resume from what survived (also from another instance), commit', async () => {
    const seg = backend.segment;
    const data = random(2.5 * seg + 777);
    const mid = Math.round(1.9 * seg) + 1;
    const h = hex(data);
    let partial = await store.openPartial('dl-1');
    expect(partial.size).toBe(0);
    await expect(partial.append(failingAfter(data, 1.6 * seg))).rejects.toThrow('client went away');

    // Another instance picks it up: it sees a prefix of what was sent (whole write blocks on disk, whole segments on
    // S3), never more and never other bytes.
    const other = reopen();
    partial = await other.openPartial('dl-1');
    expect(partial.size).toBeGreaterThan(0);
    expect(partial.size).toBeLessThanOrEqual(1.6 * seg);
    expect((await collect(partial.readExisting())).equals(data.subarray(0, partial.size))).toBe(true);

    // Two more attempts: one that ends early but cleanly (short last segment), then the rest.
    let temp: TempBlob = await partial.append(chunks(data.subarray(partial.size, mid)));
    expect(temp.size).toBe(mid);
    partial = await other.openPartial('dl-1');
    expect(partial.size).toBe(mid);
    temp = await partial.append(chunks(data.subarray(partial.size)));
    expect(temp.size).toBe(data.length);
    expect((await collect((await store.openPartial('dl-1')).readExisting())).equals(data)).toBe(true);

    await store.commit(temp, h);
    expect((await collect(await store.read(h))).equals(data)).toBe(true);
    expect((await store.openPartial('dl-1')).size).toBe(0);
    await store.quarantine(h, DAY);
  });

  test('partials: truncate starts over; discard removes', async () => {
    const partial = await store.openPartial('dl-2');
    await partial.append(chunks(random(300_000)));
    const again = await store.openPartial('dl-2');
    expect(again.size).toBe(300_000);
    const data = random(1000);
    const temp = await again.append(chunks(data), { truncate: true });
    expect(temp.size).toBe(1000);
    expect((await collect((await store.openPartial('dl-2')).readExisting())).equals(data)).toBe(true);
    await again.discard();
    expect((await store.openPartial('dl-2')).size).toBe(0);
  });

  test('partials: truncate(size) cuts back to a byte, across segments, durably; appends continue from there', async () => {
    const data = random(Math.round(2.7 * backend.segment));
    const partial = await store.openPartial('up-1');
    await partial.append(chunks(data));
    const cut = Math.round(1.2 * backend.segment) + 123;
    await partial.truncate(cut);
    const reopened = await reopen().openPartial!('up-1');
    expect(reopened.size).toBe(cut);
    expect((await collect(reopened.readExisting())).equals(data.subarray(0, cut))).toBe(true);
    await reopened.append(chunks(data.subarray(cut)));
    const whole = await store.openPartial('up-1');
    expect(whole.size).toBe(data.length);
    expect((await collect(whole.readExisting())).equals(data)).toBe(true);
    await whole.discard();
  });

  test('named objects: written whole, read (also a range), sized, deleted; a failed write leaves nothing', async () => {
    const data = random(600_000);
    expect(await store.writeObject('exports/a.zip', chunks(data))).toBe(data.length);
    expect(await store.objectSize('exports/a.zip')).toBe(data.length);
    expect((await collect(await store.readObject('exports/a.zip'))).equals(data)).toBe(true);
    expect(
      (await collect(await store.readObject('exports/a.zip', { start: 10, end: 19 }))).equals(data.subarray(10, 20)),
    ).toBe(true);
    await expect(store.writeObject('exports/b.zip', failingAfter(data, 200_000))).rejects.toThrow();
    expect(await store.objectSize('exports/b.zip')).toBeUndefined();
    await store.deleteObject('exports/a.zip');
    await store.deleteObject('exports/a.zip');
    expect(await store.objectSize('exports/a.zip')).toBeUndefined();
    await expect(store.writeObject('../escape', chunks(data))).rejects.toThrow(/invalid object name/);
  });

  test('ping', async () => {
    await store.ping();
  });
});

describe('s3 only', () => {
  let s3: TestS3Server;
  let store: S3BlobStore;
  beforeAll(async () => {
    s3 = await startS3Server();
    store = new S3BlobStore({
      backend: 's3',
      bucket: s3.bucket,
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      prefix: '',
      presignedDownloads: true,
    });
  });
  afterAll(async () => {
    await store?.close();
    await s3?.stop();
  });

  test('content keys are <prefix>/ab/cd/<hex>, and a presigned URL serves the bytes with the given name and type', async () => {
    const data = Buffer.from('presigned hello');
    const h = hex(data);
    await store.commit(await store.writeTemp(chunks(data)), h);
    expect(store.contentKey(h)).toBe(`${h.slice(0, 2)}/${h.slice(2, 4)}/${h}`);
    expect(await s3.objectKeys()).toContain(`${h.slice(0, 2)}/${h.slice(2, 4)}/${h}`);
    const url = await store.presignedUrl(h, {
      fileName: 'grüße "x".txt',
      contentType: 'text/plain',
      expiresInSeconds: 60,
      disposition: 'inline',
    });
    expect(url).toContain('X-Amz-Signature=');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('presigned hello');
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(res.headers.get('content-disposition')).toBe(
      `inline; filename="gr__e _x_.txt"; filename*=UTF-8''gr%C3%BC%C3%9Fe%20%22x%22.txt`,
    );
  });

  test('ping fails for a missing bucket', async () => {
    const other = new S3BlobStore({
      backend: 's3',
      bucket: 'no-such-bucket',
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      prefix: '',
      presignedDownloads: false,
    });
    await expect(other.ping()).rejects.toBeDefined();
    await other.close();
  });
});
