import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { blobOrphanSweepJob } from '../../src/domain/content/blob-orphan-sweep.job';
import { ContentRepository } from '../../src/domain/content/content.repository';
import { ContentService } from '../../src/domain/content/content.service';
import { blobPath } from '../../src/infra/blob-store/blob-path';
import { blake3Of, json, startTestService, uploadForm, waitFor, type TestService } from '../helpers/harness';

/**
 * Conventions rule 25 on the disk store: blobs no row names (the orphan sweep, garbage collection) are moved into
 * DATA_DIR/blobs/.orphans/<day>/ rather than deleted, come back when a row names them again (a read, the sweep), and
 * are removed for good only once ORPHAN_RETENTION_DAYS are over.
 */
const DAY = 24 * 3600 * 1000;
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ CONTENT_GC_GRACE_SECONDS: '0', ORPHAN_RETENTION_DAYS: '3' });
});
afterAll(async () => {
  await svc?.stop();
});

const hexOf = (b: Buffer) => blake3Of(b).slice('blake3:'.length);
const unique = (label: string) => Buffer.from(`${label}-${crypto.randomUUID()}`);
const root = () => path.join(svc.dataDir, 'blobs');
const live = (hex: string) => fs.existsSync(path.join(root(), blobPath(hex)));
const today = (shiftMs = 0) => new Date(Date.now() + shiftMs).toISOString().slice(0, 10);
/** The days under which the quarantine holds `hex`. */
const quarantinedOn = (hex: string) =>
  (fs.existsSync(path.join(root(), '.orphans')) ? fs.readdirSync(path.join(root(), '.orphans')) : []).filter((day) =>
    fs.existsSync(path.join(root(), '.orphans', day, blobPath(hex))),
  );

/** The service's content service with its clock `shiftMs` ahead (the sweeps' notion of now). */
function contentAt(shiftMs: number): ContentService {
  const { database, blobStore, logger, config } = svc.container;
  return new ContentService(
    new ContentRepository(database.prisma, database.pool, database.transactions),
    blobStore,
    logger,
    {
      maxUploadBytes: config.maxUploadBytes,
      gcGraceSeconds: config.contentGcGraceSeconds,
      orphanRetentionDays: config.orphanRetentionDays,
      now: () => Date.now() + shiftMs,
    },
  );
}
/** The daily orphan sweep's handler, run with the clock `shiftMs` ahead. */
const sweepAt = (shiftMs: number) =>
  blobOrphanSweepJob.define({ content: contentAt(shiftMs), logger: svc.container.logger }).handler(
    {},
    {
      id: 'test',
      retryCount: 0,
      signal: new AbortController().signal,
    },
  );

async function strayBlob(label: string): Promise<string> {
  const bytes = unique(label);
  const { blobStore } = svc.container;
  await blobStore.commit(
    await blobStore.writeTemp(
      (async function* () {
        yield bytes;
      })(),
    ),
    hexOf(bytes),
  );
  return hexOf(bytes);
}
async function upload(bytes: Buffer): Promise<string> {
  const res = await svc.fetch('/api/assets', { method: 'POST', body: uploadForm(bytes) });
  expect(res.status).toBe(201);
  return (await json(res)).id;
}

test('the daily sweep moves a blob no row names aside once it is a day old, and leaves named ones', async () => {
  const stray = await strayBlob('stray');
  const kept = unique('kept');
  await upload(kept);
  await sweepAt(0);
  expect(live(stray)).toBe(true); // younger than a day: maybe an upload between its copy and its commit
  await sweepAt(2 * DAY);
  expect(live(stray)).toBe(false);
  expect(quarantinedOn(stray)).toEqual([today(2 * DAY)]);
  expect(live(hexOf(kept))).toBe(true);
});

test('garbage collection moves the blob of content no asset refers to aside', async () => {
  const bytes = unique('collected');
  const id = await upload(bytes);
  expect((await svc.fetch(`/api/assets/${id}`, { method: 'DELETE' })).status).toBe(204);
  await waitFor(async () => (quarantinedOn(hexOf(bytes)).length > 0 ? true : undefined), {
    what: 'GC to move the blob aside',
  });
  expect(live(hexOf(bytes))).toBe(false);
  expect(quarantinedOn(hexOf(bytes))).toEqual([today()]);
});

test('reading content whose blob is only in the quarantine puts it back', async () => {
  const bytes = unique('named-again');
  const id = await upload(bytes);
  // What restoring a database that names a swept blob amounts to: the row is there, the blob moved aside.
  await svc.container.blobStore.quarantine(hexOf(bytes), today());
  expect(live(hexOf(bytes))).toBe(false);
  const res = await svc.fetch(`/api/assets/${id}/content`);
  expect(res.status).toBe(200);
  expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
  expect(live(hexOf(bytes))).toBe(true);
  expect(quarantinedOn(hexOf(bytes))).toEqual([]);
});

test('a read that comes after the collection of its content leaves the blob in the quarantine', async () => {
  // A job that found the row before GC took it (the metadata backfill, a thumbnail) reads afterwards: putting the blob
  // back then would leave a blob no row names, which nothing but the next day's sweep moves aside (CI's
  // crash-consistency run found one after a restart).
  const bytes = unique('read-after-gc');
  const hex = hexOf(bytes);
  const id = await upload(bytes);
  const rec = await svc.container.content.find({ algorithm: 'blake3', hex });
  expect(rec).toBeDefined();
  expect((await svc.fetch(`/api/assets/${id}`, { method: 'DELETE' })).status).toBe(204);
  await waitFor(async () => (quarantinedOn(hex).length > 0 ? true : undefined), { what: 'GC to move the blob aside' });
  await expect(svc.container.content.backfillMetadata(rec!)).rejects.toThrow(/not found/i);
  await expect(svc.container.content.read(hex)).rejects.toThrow(/not found/i);
  expect(live(hex)).toBe(false);
  expect(quarantinedOn(hex)).toEqual([today()]);
});

test('the sweep moves named blobs back, and removes the others only after ORPHAN_RETENTION_DAYS', async () => {
  const named = unique('named');
  await upload(named);
  await svc.container.blobStore.quarantine(hexOf(named), today());
  const stray = await strayBlob('stray-retention');
  await sweepAt(2 * DAY); // moved aside on today(+2 days)
  expect(live(hexOf(named))).toBe(true);
  expect(quarantinedOn(stray)).toEqual([today(2 * DAY)]);
  await sweepAt(5 * DAY); // 3 days after it was moved aside, within its day: not 3 whole days yet
  expect(quarantinedOn(stray)).toEqual([today(2 * DAY)]);
  await sweepAt(6 * DAY);
  expect(quarantinedOn(stray)).toEqual([]);
  expect(live(stray)).toBe(false);
  expect(live(hexOf(named))).toBe(true);
});
