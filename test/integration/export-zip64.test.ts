import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Client } from 'pg';
import { ExportRepository } from '../../src/domain/exports/export.repository';
import { ServerSecretRepository } from '../../src/domain/secrets/server-secret.repository';
import { ExportService } from '../../src/domain/exports/export.service';
import { TaskRepository } from '../../src/domain/tasks/task.repository';
import { blobPath } from '../../src/infra/blob-store/blob-store';
import { json, startTestService, type TestService } from '../helpers/harness';
import { readZip } from '../helpers/zip';

/**
 * ZIP64 export archives. By default the format is forced at a small size (every member and the archive written with
 * ZIP64 records) so the run stays short; EXPORT_ZIP64_BYTES=4294967296 (or more) exports a real member of that size
 * instead, from a sparse blob file: ZIP64 because it must be. The big run writes the archive twice to disk (the
 * store, then the downloaded copy) and reads it back.
 */
const BIG = Number(process.env.EXPORT_ZIP64_BYTES ?? 0);
jest.setTimeout(BIG > 0 ? 1_800_000 : 120_000);
const MiB = 1024 * 1024;

let svc: TestService;
let db: Client;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-zip64-'));
beforeAll(async () => {
  // No job workers: the test runs the exporter itself (with forceZip64 in the small case).
  svc = await startTestService({ ROLE: 'api', MAX_UPLOAD_BYTES: String(Math.max(BIG, MiB) * 2) });
  db = new Client({ connectionString: svc.databaseUrl });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await svc?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A content of `size` zero bytes stored as a sparse blob file, and an asset of it. */
async function sparseAsset(size: number, name: string): Promise<{ id: string; hash: string }> {
  const { Blake3Hasher } = require('@napi-rs/blake-hash') as typeof import('@napi-rs/blake-hash');
  const b3 = new Blake3Hasher();
  const sha = crypto.createHash('sha256');
  const block = Buffer.alloc(8 * MiB);
  for (let left = size; left > 0; left -= block.length) {
    const part = left >= block.length ? block : block.subarray(0, left);
    b3.update(part);
    sha.update(part);
  }
  const blake3 = b3.digest('hex');
  const file = path.join(svc.dataDir, 'blobs', blobPath(blake3));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.closeSync(fs.openSync(file, 'w'));
  fs.truncateSync(file, size);
  await db.query(
    `INSERT INTO content (blake3, sha256, size, mime_type, first_name) VALUES ($1, $2, $3, 'application/octet-stream', $4) ON CONFLICT DO NOTHING`,
    [blake3, sha.digest('hex'), size, name],
  );
  const res = await svc.fetch('/api/assets/from-hash', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ hash: `blake3:${blake3}`, name, tags: ['zip64'] }),
  });
  expect(res.status).toBe(201);
  return { id: (await json(res)).id, hash: `blake3:${blake3}` };
}

test(
  BIG > 0
    ? `a member of ${BIG} bytes: ZIP64 archive read back member by member`
    : 'ZIP64 records (forced at a small size) read back member by member',
  async () => {
    const members =
      BIG > 0
        ? [await sparseAsset(BIG, 'big.bin'), await sparseAsset(1000, 'small.bin')]
        : [await sparseAsset(3 * MiB, 'a.bin'), await sparseAsset(5, 'b.bin')];
    const started = await json(
      await svc.fetch('/api/assets/export', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ asset_ids: members.map((m) => m.id) }),
      }),
    );
    const c = svc.container;
    const exporter = new ExportService({
      transactions: c.database.transactions,
      repo: new ExportRepository(c.database.prisma),
      secrets: new ServerSecretRepository(c.database.prisma),
      tasks: new TaskRepository(c.database.prisma, c.database.transactions),
      blobs: c.blobStore,
      queue: c.queue,
      logger: c.logger,
      ttlSeconds: 3600,
      forceZip64: BIG === 0,
    });
    await exporter.run(started.task_id);
    const task = await json(await svc.fetch(`/api/tasks/${started.task_id}`));
    expect(task.status).toBe('completed');
    const { url } = await json(await svc.fetch(`/api/assets/exports/${task.result.export_name}`));
    const file = path.join(tmp, 'archive.zip');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    await pipeline(res.body as unknown as NodeJS.ReadableStream, fs.createWriteStream(file));
    expect(fs.statSync(file).size).toBe(task.result.bytes_total);

    // The ZIP64 end of central directory record and its locator are there.
    const fd = fs.openSync(file, 'r');
    const tailLen = Math.min(fs.statSync(file).size, 64 * 1024);
    const tail = Buffer.alloc(tailLen);
    fs.readSync(fd, tail, 0, tailLen, fs.statSync(file).size - tailLen);
    fs.closeSync(fd);
    expect(tail.includes(Buffer.from([0x50, 0x4b, 0x06, 0x06]))).toBe(true);
    expect(tail.includes(Buffer.from([0x50, 0x4b, 0x06, 0x07]))).toBe(true);

    const read = await readZip(file);
    expect(read.map((m) => m.name)).toEqual(BIG > 0 ? ['big.bin', 'small.bin'] : ['a.bin', 'b.bin']);
    read.forEach((m, i) => expect(m.blake3).toBe(members[i]!.hash));
    // yauzl does not check CRC-32s; Info-ZIP's unzip does, where it is installed.
    try {
      execFileSync('unzip', ['-tqq', file]);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  },
);
