/**
 * Thumbnails (`thumbnail_url`; GET /api/assets/{id}/thumbnail): made in the background once per content,
 * for every image format sharp decodes, bounded by a pixel limit, served with immutable caching, and removed with
 * their content by the garbage collector.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { Client } from 'pg';
import sharp from 'sharp';
import { JOB } from '../../src/domain/job-map';
import { gql } from '../helpers/graphql';
import { json, KEYS, startTestService, uploadForm, waitFor, type TestService, granted } from '../helpers/harness';
import { startS3Server } from '../helpers/rgw';

let svc: TestService;
let db: Client;

beforeAll(async () => {
  svc = await startTestService({ CONTENT_GC_GRACE_SECONDS: '0' }, { validateResponses: true });
  db = new Client({ connectionString: svc.databaseUrl });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await svc?.stop();
});

/** A gradient image (so each one is different content), in the given format. */
async function image(
  width: number,
  height: number,
  format: 'png' | 'jpeg' | 'webp' | 'gif' | 'avif' | 'tiff',
  seed = 0,
): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    raw[i * 3] = (i * 7 + seed) & 0xff;
    raw[i * 3 + 1] = ((i / width) * 3 + seed * 13) & 0xff;
    raw[i * 3 + 2] = seed & 0xff;
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .toFormat(format)
    .toBuffer();
}

async function upload(
  data: Buffer,
  name: string,
  key: string = KEYS.alice,
): Promise<{ id: string; status: number; body: Record<string, unknown> }> {
  const res = await svc.fetch('/api/assets', { method: 'POST', key, body: uploadForm(data, { tags: 'output' }, name) });
  const body = await json(res);
  return { id: body.id, status: res.status, body };
}

const getAsset = async (id: string, key: string = KEYS.alice) => json(await svc.fetch(`/api/assets/${id}`, { key }));

/** Waits until the asset shows its thumbnail_url, and returns the thumbnail response. */
async function thumbnailOf(id: string, key: string = KEYS.alice): Promise<Response> {
  const url = await waitFor(async () => (await getAsset(id, key)).thumbnail_url as string | undefined, {
    what: `thumbnail of ${id}`,
    timeoutMs: 30_000,
  });
  expect(url).toMatch(new RegExp(`/api/assets/${id}/thumbnail\\?access=[\\w.-]+$`));
  return svc.fetch(`/api/assets/${id}/thumbnail`, { key });
}

const thumbnailRow = async (blake3: string) =>
  (await db.query('SELECT status, width, height, error FROM thumbnail WHERE content_hash = $1', [blake3])).rows[0] as
    { status: string; width: number; height: number; error: string | null } | undefined;

test('a PNG gets a 512 px WebP thumbnail with immutable caching; If-None-Match answers 304', async () => {
  const { id, status, body } = await upload(await image(1024, 768, 'png'), 'big.png');
  expect(status).toBe(201);
  expect(body).not.toHaveProperty('thumbnail_url'); // not made yet at create time: omitted, never null
  const res = await thumbnailOf(id);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('image/webp');
  expect(res.headers.get('cache-control')).toBe('private, max-age=31536000, immutable');
  const etag = res.headers.get('etag')!;
  expect(etag).toBe(`"thumbnail-${body.asset_hash}"`);
  const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
  expect([meta.format, meta.width, meta.height]).toEqual(['webp', 512, 384]);

  const again = await svc.fetch(`/api/assets/${id}/thumbnail`, { headers: { 'if-none-match': etag } });
  expect(again.status).toBe(304);
  const head = await svc.fetch(`/api/assets/${id}/thumbnail`, { method: 'HEAD' });
  expect([head.status, head.headers.get('etag')]).toEqual([200, etag]);
});

test.each(['jpeg', 'webp', 'gif', 'avif', 'tiff'] as const)(
  'a %s image gets a thumbnail; a tall one keeps its aspect',
  async (format) => {
    const { id } = await upload(await image(300, 900, format, format.length), `tall.${format}`);
    const res = await thumbnailOf(id);
    expect(res.status).toBe(200);
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 171, 512]);
  },
);

test("a thumbnail access grant reads this owner's thumbnails without the key (<img src>), nothing else, until it expires", async () => {
  const { id, body } = await upload(await image(640, 480, 'png', 77), 'granted.png');
  const keyed = await thumbnailOf(id);
  const bytes = Buffer.from(await keyed.arrayBuffer());

  const grantRes = await svc.fetch('/api/thumbnail-access');
  expect([grantRes.status, grantRes.headers.get('cache-control')]).toEqual([200, 'no-store']);
  const grant = await json(grantRes);
  const left = Date.parse(grant.expires_at) - Date.now();
  expect(left).toBeGreaterThan(59 * 60_000);
  expect(left).toBeLessThanOrEqual(120 * 60_000);
  expect(grant.access).not.toContain(KEYS.alice);
  // Every grant in the same window is the same token: the URLs (and the browser's cache of them) stay the same.
  expect((await json(await svc.fetch('/api/thumbnail-access'))).access).toBe(grant.access);
  expect((await svc.fetch('/api/thumbnail-access', { key: null })).status).toBe(401);

  const signed = `/api/assets/${id}/thumbnail?access=${encodeURIComponent(grant.access)}`;
  const res = await svc.fetch(signed, { key: null });
  expect([res.status, res.headers.get('content-type'), res.headers.get('etag')]).toEqual([
    200,
    'image/webp',
    `"thumbnail-${body.asset_hash}"`,
  ]);
  expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
  expect((await svc.fetch(signed, { key: null, headers: { 'if-none-match': res.headers.get('etag')! } })).status).toBe(
    304,
  );
  expect((await svc.fetch(signed, { key: null, method: 'HEAD' })).status).toBe(200);

  // Only media (thumbnails, content), only this owner's: bob's grant does not find alice's asset; metadata needs a key.
  const bobs = (await json(await svc.fetch('/api/thumbnail-access', { key: KEYS.bob }))).access;
  const other = await svc.fetch(`/api/assets/${id}/thumbnail?access=${encodeURIComponent(bobs)}`, { key: null });
  expect([other.status, (await json(other)).code]).toEqual([404, 'ASSET_NOT_FOUND']);
  expect(
    (await svc.fetch(`/api/assets/${id}/content?access=${encodeURIComponent(grant.access)}`, { key: null })).status,
  ).toBe(200);
  expect((await svc.fetch(`/api/assets/${id}?access=${encodeURIComponent(grant.access)}`, { key: null })).status).toBe(
    401,
  );

  // Tampered with (another owner named under alice's signature), malformed, or expired: 401 UNAUTHORIZED.
  const [exp, , sig] = grant.access.split('.');
  const expired = svc.container.grants.sign('alice', Math.floor(Date.now() / 1000) - 60).token;
  for (const bad of [
    `${exp}.${Buffer.from('bob').toString('base64url')}.${sig}`,
    'nonsense',
    `${grant.access}x`,
    expired,
  ]) {
    const r = await svc.fetch(`/api/assets/${id}/thumbnail?access=${encodeURIComponent(bad)}`, { key: null });
    expect([r.status, (await json(r)).code]).toEqual([401, 'UNAUTHORIZED']);
  }

  // A grant's signature is checked once per instance, its expiry on every request: the grant served above is refused
  // two hours on.
  const later = Date.now() + 2 * 3600_000;
  const clock = jest.spyOn(Date, 'now').mockReturnValue(later);
  try {
    const r = await svc.fetch(signed, { key: null });
    expect([r.status, (await json(r)).code]).toEqual([401, 'UNAUTHORIZED']);
  } finally {
    clock.mockRestore();
  }

  // The bytes are kept in memory after the first read, the asset is looked up on every request: once it is deleted,
  // its thumbnail URL answers 404 like any missing asset's.
  expect((await svc.fetch(`/api/assets/${id}`, { method: 'DELETE' })).status).toBe(204);
  for (const r of [await svc.fetch(signed, { key: null }), await svc.fetch(`/api/assets/${id}/thumbnail`)]) {
    expect([r.status, (await json(r)).code]).toEqual([404, 'ASSET_NOT_FOUND']);
  }
});

test('a small image is not enlarged', async () => {
  const { id } = await upload(await image(64, 40, 'png', 99), 'small.png');
  const meta = await sharp(Buffer.from(await (await thumbnailOf(id)).arrayBuffer())).metadata();
  expect([meta.width, meta.height]).toEqual([64, 40]);
});

/**
 * A valid PNG header claiming width × height, with a tiny IDAT: a decompression bomb's signature, a few hundred bytes.
 */
function bombPng(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const rows = zlib.deflateSync(Buffer.alloc((width * 3 + 1) * 4)); // four rows of zeros; the rest is missing
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', rows),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

test('a decompression bomb (50,000 × 50,000 PNG) is refused by the pixel limit, not decoded; the upload is unaffected', async () => {
  const bomb = bombPng(50_000, 50_000);
  expect(bomb.length).toBeLessThan(4096);
  const rssBefore = process.memoryUsage().rss;
  const { id, status, body } = await upload(bomb, 'bomb.png');
  expect(status).toBe(201);
  expect(body.mime_type).toBe('image/png');
  const blake3 = String(body.asset_hash).slice('blake3:'.length);
  const row = await waitFor(async () => thumbnailRow(blake3), {
    what: 'the bomb thumbnail outcome',
    timeoutMs: 30_000,
  });
  expect(row.status).toBe('failed');
  expect(row.error).toMatch(/pixel limit/i);
  expect(process.memoryUsage().rss - rssBefore).toBeLessThan(500 * 1024 * 1024);
  const res = await svc.fetch(`/api/assets/${id}/thumbnail`);
  expect(res.status).toBe(404);
  expect((await json(res)).code).toBe('THUMBNAIL_NOT_FOUND');
  expect(await getAsset(id)).not.toHaveProperty('thumbnail_url');
});

test('images whose bytes libvips refuses (a truncated PNG, a PNG with damaged pixel data) are recorded as failed at once, not retried', async () => {
  const png = await image(300, 200, 'png', 3);
  const damaged = Buffer.from(png);
  for (let i = Math.floor(png.length * 0.3); i < Math.floor(png.length * 0.3) + 200; i++) damaged[i] ^= 0x5a;
  for (const [bytes, name] of [
    [png.subarray(0, png.length >> 1), 'cut.png'],
    [damaged, 'damaged.png'],
  ] as const) {
    const { body } = await upload(bytes, name);
    const blake3 = String(body.asset_hash).slice('blake3:'.length);
    // Retries wait 10 s: a failure recorded within 8 s is the first attempt's.
    const row = await waitFor(async () => thumbnailRow(blake3), {
      what: `the ${name} thumbnail outcome`,
      timeoutMs: 8_000,
    });
    expect([name, row.status, row.error]).toEqual([name, 'failed', expect.stringMatching(/libpng/)]);
    const job = await db.query(`SELECT retry_count FROM pgboss.job WHERE name = $1 AND data->>'blake3' = $2`, [
      JOB.thumbnail,
      blake3,
    ]);
    expect(job.rows.map((r: { retry_count: number }) => r.retry_count)).toEqual([0]);
  }
});

test('non-images get no thumbnail job and answer 404 THUMBNAIL_NOT_FOUND; other owners and bad ids as for content', async () => {
  const { id, body } = await upload(Buffer.from('not an image at all'), 'notes.txt');
  const blake3 = String(body.asset_hash).slice('blake3:'.length);
  const jobs = await db.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'blake3' = $2`, [
    JOB.thumbnail,
    blake3,
  ]);
  expect(jobs.rows[0].n).toBe(0);
  const res = await svc.fetch(`/api/assets/${id}/thumbnail`);
  expect([res.status, (await json(res)).code]).toEqual([404, 'THUMBNAIL_NOT_FOUND']);

  const png = await upload(await image(50, 50, 'png', 7), 'mine.png');
  await thumbnailOf(png.id);
  const other = await svc.fetch(`/api/assets/${png.id}/thumbnail`, { key: KEYS.bob });
  expect([other.status, (await json(other)).code]).toEqual([404, 'ASSET_NOT_FOUND']);
  const bad = await svc.fetch('/api/assets/not-a-uuid/thumbnail');
  expect([bad.status, (await json(bad)).code]).toEqual([400, 'INVALID_ID']);
  expect((await svc.fetch(`/api/assets/${png.id}/thumbnail`, { key: null })).status).toBe(401);
});

test('one thumbnail per content: assets of other owners and later assets of the same content show it at once', async () => {
  const data = await image(640, 480, 'jpeg', 42);
  const first = await upload(data, 'shared.jpg');
  const firstThumb = await thumbnailOf(first.id);
  const blake3 = String(first.body.asset_hash).slice('blake3:'.length);

  // Bob's asset of the same content is made after the thumbnail exists: it has it from its first answer.
  const second = await upload(data, 'bobs-copy.jpg', KEYS.bob);
  expect(second.status).toBe(201);
  expect(second.body.thumbnail_url).toBe(granted(svc, `${svc.url}/api/assets/${second.id}/thumbnail`, 'bob'));
  const secondThumb = await svc.fetch(`/api/assets/${second.id}/thumbnail`, { key: KEYS.bob });
  expect(Buffer.from(await secondThumb.arrayBuffer()).equals(Buffer.from(await firstThumb.arrayBuffer()))).toBe(true);
  expect((await db.query('SELECT count(*)::int AS n FROM thumbnail WHERE content_hash = $1', [blake3])).rows[0].n).toBe(
    1,
  );
  const made = await db.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'blake3' = $2`, [
    JOB.thumbnail,
    blake3,
  ]);
  expect(made.rows[0].n).toBe(1);

  // GraphQL shows the same URL.
  const q = await gql(svc, `query($id: ID!) { asset(id: $id) { thumbnailUrl } }`, { id: first.id });
  expect(q.data.asset.thumbnailUrl).toBe(granted(svc, `${svc.url}/api/assets/${first.id}/thumbnail`));
});

test('the garbage collector removes the thumbnail with its content', async () => {
  const { id, body } = await upload(await image(200, 200, 'png', 123), 'doomed.png');
  await thumbnailOf(id);
  const blake3 = String(body.asset_hash).slice('blake3:'.length);
  const blobFile = path.join(svc.dataDir, 'blobs', blake3.slice(0, 2), blake3.slice(2, 4), blake3);
  expect(fs.existsSync(`${blobFile}.thumbnail.webp`)).toBe(true);
  expect((await svc.fetch(`/api/assets/${id}`, { method: 'DELETE' })).status).toBe(204);
  await waitFor(async () => (fs.existsSync(blobFile) ? undefined : true), {
    what: 'content collected',
    timeoutMs: 30_000,
  });
  expect(fs.existsSync(`${blobFile}.thumbnail.webp`)).toBe(false);
  expect(await thumbnailRow(blake3)).toBeUndefined();
});

test('a restart backfills thumbnails of images stored before thumbnails existed', async () => {
  const { id, body } = await upload(await image(800, 600, 'webp', 5), 'old.webp');
  await thumbnailOf(id);
  const blake3 = String(body.asset_hash).slice('blake3:'.length);
  // Make it look like content from before the migration: no row, no file, no flag.
  await db.query('DELETE FROM thumbnail WHERE content_hash = $1', [blake3]);
  await db.query('UPDATE asset SET has_thumbnail = false WHERE content_hash = $1', [blake3]);
  fs.rmSync(path.join(svc.dataDir, 'blobs', blake3.slice(0, 2), blake3.slice(2, 4), `${blake3}.thumbnail.webp`));
  await db.query(`DELETE FROM pgboss.job WHERE name = $1`, [JOB.thumbnail]);
  expect(await getAsset(id)).not.toHaveProperty('thumbnail_url');

  const { databaseUrl, dataDir } = svc;
  await svc.container.close();
  await new Promise<void>((resolve) => svc.server!.close(() => resolve()));
  svc = await startTestService({ CONTENT_GC_GRACE_SECONDS: '0' }, { databaseUrl, dataDir });
  const res = await thumbnailOf(id);
  expect(res.status).toBe(200);
  expect((await sharp(Buffer.from(await res.arrayBuffer())).metadata()).width).toBe(512);
});

test('on the S3 store (no local file to hand libvips) the image is read as a stream: the same thumbnail', async () => {
  const s3 = await startS3Server();
  const s3svc = await startTestService({ ...s3.env, CONTENT_GC_GRACE_SECONDS: '0' });
  try {
    const res = await s3svc.fetch('/api/assets', {
      method: 'POST',
      key: KEYS.alice,
      body: uploadForm(await image(1024, 768, 'png', 42), { tags: 'output' }, 's3.png'),
    });
    const { id } = await json(res);
    await waitFor(
      async () =>
        (await json(await s3svc.fetch(`/api/assets/${id}`, { key: KEYS.alice }))).thumbnail_url as string | undefined,
      {
        what: 'thumbnail on S3',
        timeoutMs: 30_000,
      },
    );
    const thumb = await s3svc.fetch(`/api/assets/${id}/thumbnail`, { key: KEYS.alice });
    const meta = await sharp(Buffer.from(await thumb.arrayBuffer())).metadata();
    expect([thumb.status, meta.format, meta.width, meta.height]).toEqual([200, 'webp', 512, 384]);
  } finally {
    await s3svc.stop();
    await s3.stop();
  }
});

// Videos need ffmpeg on the PATH. CI installs it (.ci/run), so there a missing ffmpeg fails these tests instead of
// skipping them; elsewhere they are skipped when it is missing.
const hasFfmpeg = spawnSync('ffmpeg', ['-version'], { stdio: 'ignore' }).status === 0;
const videoTest = hasFfmpeg || process.env.CI ? test : test.skip;

/** An MP4 made by ffmpeg: `colors` one after another, each for `seconds`, 10 frames a second. */
function video(width: number, height: number, colors: string[], seconds: number): Buffer {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'thumb-video-'));
  try {
    const out = path.join(dir, 'clip.mp4');
    const inputs = colors.flatMap((c) => ['-f', 'lavfi', '-i', `color=c=${c}:s=${width}x${height}:r=10:d=${seconds}`]);
    const concat = `${colors.map((_, i) => `[${i}:v]`).join('')}concat=n=${colors.length}:v=1:a=0[v]`;
    const r = spawnSync(
      'ffmpeg',
      [
        '-v',
        'error',
        ...inputs,
        '-filter_complex',
        concat,
        '-map',
        '[v]',
        '-c:v',
        'mpeg4',
        '-q:v',
        '3',
        '-pix_fmt',
        'yuv420p',
        out,
      ],
      {
        encoding: 'utf8',
      },
    );
    if (r.status !== 0) throw new Error(`ffmpeg could not make the test video: ${r.stderr || r.error}`);
    return fs.readFileSync(out);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The colour at the middle of a thumbnail, as [r, g, b]. */
async function middle(webp: Buffer): Promise<number[]> {
  const { data, info } = await sharp(webp).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const at = (Math.floor(info.height / 2) * info.width + Math.floor(info.width / 2)) * 3;
  return [data[at]!, data[at + 1]!, data[at + 2]!];
}

videoTest('a video gets a 512 px WebP of its frame at 1 s (ffmpeg)', async () => {
  // Red for the first second, blue after: the frame at 1 s is blue.
  const { id, status, body } = await upload(video(640, 360, ['red', 'blue'], 1), 'clip.mp4');
  expect([status, body.mime_type]).toEqual([201, 'video/mp4']);
  const res = await thumbnailOf(id);
  expect([res.status, res.headers.get('content-type')]).toEqual([200, 'image/webp']);
  const webp = Buffer.from(await res.arrayBuffer());
  const meta = await sharp(webp).metadata();
  expect([meta.format, meta.width, meta.height]).toEqual(['webp', 512, 288]);
  const [r, g, b] = await middle(webp);
  expect(b).toBeGreaterThan(200);
  expect(r + g).toBeLessThan(80);
});

videoTest(
  'a clip shorter than a second gets its first frame; a file that is no video is recorded as failed',
  async () => {
    const { id } = await upload(video(300, 400, ['lime'], 0.5), 'short.mp4');
    const webp = Buffer.from(await (await thumbnailOf(id)).arrayBuffer());
    const meta = await sharp(webp).metadata();
    expect([meta.width, meta.height]).toEqual([300, 400]);
    const [r, g, b] = await middle(webp);
    expect([r < 60, g > 200, b < 60]).toEqual([true, true, true]);

    // An MP4 by its header (`ftyp`) with nothing decodable after it: no thumbnail, the failure kept, the upload fine.
    const junk = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(2048, 0x5a)]);
    const bad = await upload(junk, 'broken.mp4');
    expect([bad.status, bad.body.mime_type]).toEqual([201, 'video/mp4']);
    const blake3 = String(bad.body.asset_hash).slice('blake3:'.length);
    const row = await waitFor(async () => thumbnailRow(blake3), {
      what: 'the broken video outcome',
      timeoutMs: 30_000,
    });
    expect(row.status).toBe('failed');
    expect(row.error).toMatch(/ffmpeg/);
    expect(await getAsset(bad.id)).not.toHaveProperty('thumbnail_url');
  },
);
