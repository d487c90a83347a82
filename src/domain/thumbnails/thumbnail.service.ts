import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { LRUCache } from 'lru-cache';
import type { KnownThumbnails } from './known-thumbnails';
import type sharpType from 'sharp';
import type { BlobStore } from '../../infra/blob-store/blob-store';
import type { Logger } from '../../infra/logger';
import type { Transaction } from '../../infra/prisma';
import { DomainError } from '../errors';
import { JOB, type Queue } from '../job-map';
import type { ThumbnailRepository } from './thumbnail.repository';

/** Longest side of a thumbnail, in pixels. */
export const THUMBNAIL_SIZE = 512;

/**
 * Thumbnail bytes kept in memory per instance, by content hash (a content's thumbnail never changes): a grid of 100
 * tiles is 100 reads of a few kilobytes each, which through the file system (open, stat, read, close on the thread
 * pool) cost the route a fifth of its CPU (bench/figures/grid-thumbs.cjs). 32 MiB is some thousands of thumbnails.
 */
const MEMORY_BYTES = 32 * 1024 * 1024;
const MEMORY_MAX_ENTRY_BYTES = 1024 * 1024;

/** Contents the backfill reads, and queues jobs for, at a time. */
const BACKFILL_PAGE = 500;

/** Image formats sharp decodes here (its prebuilt libvips). */
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'image/avif', 'image/tiff'] as const;
/** Video formats ffmpeg reads a frame from, when it is on the PATH. */
export const VIDEO_TYPES = [
  'video/mp4',
  'video/webm',
  'video/quicktime',
  'video/x-matroska',
  'video/x-msvideo',
] as const;

export interface ThumbnailOptions {
  /** Images with more pixels than this are refused before decoding (decompression bombs). */
  maxPixels: number;
  /** The ffmpeg executable, or undefined when videos get no thumbnail. */
  ffmpeg: string | undefined;
  /** The route's asset → content lookups kept while deletes are heard (known-thumbnails.ts); none: every one read. */
  known?: KnownThumbnails;
}

/** The first `ffmpeg` on the PATH that runs, else undefined. */
export function findFfmpeg(): string | undefined {
  const r = spawnSync('ffmpeg', ['-version'], { stdio: 'ignore', timeout: 5_000 });
  return r.status === 0 ? 'ffmpeg' : undefined;
}

// The thumbnail of a content never changes: the content hash identifies it.
const thumbnailEtag = (contentHash: string) => `"thumbnail-blake3:${contentHash}"`;

/**
 * Thumbnails (`thumbnail_url`): one small WebP per content, made in the background after ingest and
 * stored beside the content's blob. A failure never reaches the upload that caused it.
 */
export class ThumbnailService {
  private sharp: typeof sharpType | undefined;
  private readonly kept = new LRUCache<string, Buffer>({
    maxSize: MEMORY_BYTES,
    maxEntrySize: MEMORY_MAX_ENTRY_BYTES,
    sizeCalculation: (b) => b.length,
  });

  constructor(
    private readonly repo: ThumbnailRepository,
    private readonly blobs: BlobStore,
    private readonly queue: Queue,
    private readonly logger: Logger,
    private readonly opts: ThumbnailOptions,
  ) {}

  /** Whether content of this MIME type gets a thumbnail. */
  supports(mimeType: string): boolean {
    const base = mimeType.split(';')[0]!.trim().toLowerCase();
    return (
      (IMAGE_TYPES as readonly string[]).includes(base) ||
      (this.opts.ffmpeg !== undefined && (VIDEO_TYPES as readonly string[]).includes(base))
    );
  }

  /** Inside the transaction that inserts new content rows: a job exists if and only if its content does. */
  async enqueue(tx: Transaction, contents: readonly { blake3: string; mimeType: string }[]): Promise<void> {
    const wanted = contents.filter((c) => this.supports(c.mimeType));
    if (wanted.length === 1) {
      await this.queue.send(JOB.thumbnail, { blake3: wanted[0]!.blake3 }, { tx, singletonKey: wanted[0]!.blake3 });
    } else if (wanted.length > 1) {
      const jobs = wanted.map((c) => ({ data: { blake3: c.blake3 }, singletonKey: c.blake3 }));
      await this.queue.sendMany(JOB.thumbnail, jobs, { tx });
    }
  }

  /** Wakes this process's thumbnail worker after the enqueuing transaction committed. */
  wake(): void {
    this.queue.wake(JOB.thumbnail);
  }

  /**
   * The job, for a batch of contents: makes and stores each one's thumbnail (nothing for a content that has one or is
   * gone). Images are decoded one at a time (one libvips thread); the store of one thumbnail (its file, fsync and
   * database rows) runs while the next image is decoded, so the image work is what bounds the rate. An undecodable
   * image is recorded as failed; any other error is thrown once the rest of the batch is done, so pg-boss retries the
   * batch (the contents already done are skipped then).
   */
  async make(hashes: readonly string[]): Promise<void> {
    const pending = await this.repo.pending(hashes);
    const errors: unknown[] = [];
    const keep = (blake3: string) => (err: unknown) => {
      this.logger.warn('thumbnail not made, to be retried', {
        blake3,
        err: err instanceof Error ? err.message : String(err),
      });
      errors.push(err);
    };
    let storing: Promise<void> = Promise.resolve();
    for (const blake3 of hashes) {
      const mimeType = pending.get(blake3);
      if (!mimeType || !this.supports(mimeType)) continue;
      const started = Date.now();
      const made = await this.render(blake3, mimeType).catch((err: unknown) => void keep(blake3)(err));
      await storing;
      if (made) storing = this.store(blake3, mimeType, made, started).catch(keep(blake3));
    }
    await storing;
    if (errors.length > 0) throw errors[0];
  }

  private async render(blake3: string, mimeType: string): Promise<Rendered> {
    try {
      if (mimeType.startsWith('video/')) return await this.fromVideo(blake3);
      // On the disk store libvips reads the file in place: a stream would bring every image's megabytes through the
      // JavaScript heap, and collecting them costs the main thread time per image (`npm run bench -- thumbnails`).
      const local = this.blobs.capabilities.localFiles;
      return await this.fromImage(local ? await local.localPath(blake3) : await this.blobs.read(blake3));
    } catch (err) {
      if (!isUndecodable(err)) throw err; // I/O and the like: pg-boss retries
      return { failed: err instanceof Error ? err.message : String(err) };
    }
  }

  private async store(blake3: string, mimeType: string, made: Rendered, started: number): Promise<void> {
    if ('failed' in made) {
      // Not decodable, or over the pixel limit: remembered as failed so neither retries nor the backfill try again.
      this.logger.warn('no thumbnail for content', { blake3, mime_type: mimeType, reason: made.failed });
      await this.repo.record(
        { contentHash: blake3, status: 'failed', width: 0, height: 0, size: 0, error: made.failed.slice(0, 500) },
        async () => undefined,
      );
      return;
    }
    const kept = await this.repo.record(
      { contentHash: blake3, status: 'ready', width: made.width, height: made.height, size: made.data.length },
      () => this.blobs.putDerived(blake3, 'thumbnail.webp', made.data),
    );
    if (kept)
      this.logger.info('thumbnail made', {
        blake3,
        width: made.width,
        height: made.height,
        bytes: made.data.length,
        ms: Date.now() - started,
      });
  }

  /** Enqueues a thumbnail job for every stored image (and video) without one: existing content after an upgrade. */
  async backfill(): Promise<number> {
    const types = [...IMAGE_TYPES, ...(this.opts.ffmpeg ? VIDEO_TYPES : [])];
    let after = '';
    let queued = 0;
    for (;;) {
      const batch = await this.repo.withoutThumbnail(types, after, BACKFILL_PAGE);
      // One insert per page; the worker starts on it while the next page is read.
      await this.queue.sendMany(
        JOB.thumbnail,
        batch.map((blake3) => ({ data: { blake3 }, singletonKey: blake3 })),
      );
      if (batch.length > 0) this.wake();
      queued += batch.length;
      if (batch.length < BACKFILL_PAGE) break;
      after = batch[batch.length - 1]!;
    }
    if (queued > 0) this.logger.info('thumbnail backfill queued', { count: queued });
    return queued;
  }

  /**
   * The thumbnail of this owner's asset: ASSET_NOT_FOUND for another owner's or a missing asset, THUMBNAIL_NOT_FOUND
   * until it is made. One primary-key read, none for an asset this instance has looked up before (`opts.known`); the
   * bytes from memory after their first read.
   */
  async open(ownerId: string, assetId: string): Promise<{ data: Buffer; etag: string }> {
    const known = this.opts.known;
    const hash = known?.get(ownerId, assetId);
    if (hash !== undefined) {
      const data = await this.bytesOf(hash);
      if (data) return { data, etag: thumbnailEtag(hash) };
    }
    const mark = known?.begin() ?? 0;
    const of = await this.repo.ofAsset(ownerId, assetId);
    if (!of) throw new DomainError('ASSET_NOT_FOUND', `asset ${assetId} not found`);
    const data = of.ready ? await this.bytesOf(of.contentHash) : undefined;
    if (!data) throw new DomainError('THUMBNAIL_NOT_FOUND', `asset ${assetId} has no thumbnail (yet)`);
    known?.keep(mark, ownerId, assetId, of.contentHash);
    return { data, etag: thumbnailEtag(of.contentHash) };
  }

  /** A made thumbnail's bytes, from memory after their first read. */
  private async bytesOf(contentHash: string): Promise<Buffer | undefined> {
    let data = this.kept.get(contentHash);
    if (!data) {
      data = await this.blobs.readDerived(contentHash, 'thumbnail.webp');
      if (data) this.kept.set(contentHash, data);
    }
    return data;
  }

  /** From a file path (read by libvips itself) or a stream of the image's bytes. */
  private async fromImage(source: string | Readable): Promise<Made> {
    this.sharp ??= configureSharp(require('sharp') as typeof sharpType);
    if (typeof source === 'string') {
      const out = await thumbnailPipeline(this.sharp(source, sharpInputOptions(this.opts.maxPixels))).toBuffer({
        resolveWithObject: true,
      });
      return { data: out.data, width: out.info.width, height: out.info.height };
    }
    const transform = thumbnailPipeline(this.sharp(sharpInputOptions(this.opts.maxPixels)));
    let sourceError: unknown;
    source.once('error', (err) => {
      sourceError = err;
      transform.destroy(err);
    });
    source.pipe(transform);
    const out = await transform.toBuffer({ resolveWithObject: true }).catch((err: unknown) => {
      throw sourceError ?? err;
    });
    return { data: out.data, width: out.info.width, height: out.info.height };
  }

  /** A frame at 1 s (or the first, for shorter clips) through ffmpeg, from a temporary copy (MP4 needs seeking). */
  private async fromVideo(blake3: string): Promise<Made> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-thumb-'));
    try {
      const input = path.join(dir, 'input');
      await pipeline(await this.blobs.read(blake3), fs.createWriteStream(input));
      let frame = await this.ffmpegFrame(input, 1);
      if (frame.length === 0) frame = await this.ffmpegFrame(input, 0);
      if (frame.length === 0) throw new UndecodableError('ffmpeg found no video frame');
      return await this.fromImage(Readable.from([frame]));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  private ffmpegFrame(input: string, atSeconds: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const args = [
        '-v',
        'error',
        '-ss',
        String(atSeconds),
        '-i',
        input,
        '-frames:v',
        '1',
        '-f',
        'image2pipe',
        '-c:v',
        'png',
        'pipe:1',
      ];
      const p = spawn(this.opts.ffmpeg!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      let err = '';
      p.stdout.on('data', (b: Buffer) => out.push(b));
      p.stderr.on('data', (b: Buffer) => (err += b.toString()).length > 4096 && (err = err.slice(-4096)));
      const timer = setTimeout(() => p.kill('SIGKILL'), 60_000);
      p.on('error', reject);
      p.on('close', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve(Buffer.concat(out));
        else reject(new UndecodableError(`ffmpeg failed: ${err.trim().split('\n').pop() ?? code}`));
      });
    });
  }
}

class UndecodableError extends Error {}

interface Made {
  data: Buffer;
  width: number;
  height: number;
}
/** A thumbnail, or why the content has none (undecodable, over the pixel limit). */
type Rendered = Made | { failed: string };

/**
 * The libvips settings of the service, exported so the benchmark's `sharp`-alone baseline uses the very same ones:
 * one libvips thread (jobs must not take every core from requests) and no operation cache (every image is new).
 */
export function configureSharp(sharp: typeof sharpType): typeof sharpType {
  sharp.concurrency(1);
  sharp.cache(false);
  return sharp;
}

/** limitInputPixels is checked against the header before any pixel is decoded. */
export const sharpInputOptions = (maxPixels: number): sharpType.SharpOptions => ({
  limitInputPixels: maxPixels,
  sequentialRead: true,
  failOn: 'error',
});

/** Upright, longest side 512 px (never enlarged), WebP. */
export const thumbnailPipeline = (input: sharpType.Sharp): sharpType.Sharp =>
  input
    .rotate()
    .resize({ width: THUMBNAIL_SIZE, height: THUMBNAIL_SIZE, fit: 'inside', withoutEnlargement: true })
    .webp({ quality: 80, effort: 2 });

/**
 * libvips' refusals of the bytes themselves (as sharp words them: `vipspng: libpng read error`, `tiff2vips: Invalid
 * JPEG file structure`, `gifload_buffer: Invalid frame data` ...). An error with a system `code` (ENOENT, EIO ...) is
 * the store's, never the image's: that one is retried.
 */
const isSharpError = (err: unknown): boolean =>
  err instanceof Error &&
  typeof (err as NodeJS.ErrnoException).code !== 'string' &&
  /Input (buffer|file|image)|pixel limit|unsupported image format|VipsJpeg|vipspng|libpng|spng|pngload|gifload|webpload|webp:|heifload|tiffload|tiff2vips|jpegload|corrupt|premature end|invalid/i.test(
    err.message,
  );

const isUndecodable = (err: unknown): boolean => err instanceof UndecodableError || isSharpError(err);
