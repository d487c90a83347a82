import fs from 'node:fs';
import path from 'node:path';
import type { IngestWorkers } from '../../infra/blob-store/ingest-pool';
import type { AssetService } from '../assets/asset.service';
import { comfyPlacement } from '../assets/comfy-folders';
import type { ContentService } from '../content/content.service';
import { METADATA_HEAD_BYTES } from '../content/derived-metadata';
import type { ContentDigest } from '../content/hashing';
import { sameFile, type InPlaceContent } from '../content/in-place';
import type { InPlaceLocation, InPlaceRepository } from '../content/in-place.repository';
import type { InPlaceFile } from './import-batch';
import { checkCopied, ImportReadError, openFound, readFailure } from './import-read';
import { WHOLE_FILE_MAX, type SavedFile } from './import-reader';
import type { FoundFile } from './import-walk';
import type { ImportedFile } from './import.repository';
import type { ImportProgress } from './import.types';

export interface InPlaceDeps {
  repo: InPlaceRepository;
  files: InPlaceContent;
  /** The ingest worker threads, which hash a file off the event loop (absent: hashed on this thread). */
  hashers?: IngestWorkers;
}

/** How often a large file's read looks at whether the seed was stopped. */
const CANCEL_POLL_MS = 200;

/** A read in-place file waiting for its batch, and what import_file is to remember of it. */
export type InPlacePending = InPlaceFile & { saved: SavedFile };

/** The in-place files one seed saw, by content: where a stale location of the same bytes may move. */
export type SeenFiles = Map<string, InPlaceLocation>;

/**
 * The import of an in-place root (contract 6.4, `IMPORT_ROOTS=models=/path:in-place`): each file is hashed where it
 * is (BLAKE3 and SHA-256 on the ingest workers) and recorded as its content's location; not a byte is written to the
 * store, and nothing under the root is ever written, renamed or deleted. A file whose size and mtime match the last
 * import is not read again. After the walk, `reconcile` checks every location of the root: assets of a file that is
 * gone or changed get the `missing` tag, and lose it once an identical file is back.
 */
export class InPlaceImporter {
  private readonly roots = new Map<string, Promise<string>>();

  constructor(private readonly d: { content: ContentService; assets: AssetService; inPlace: InPlaceDeps }) {}

  /**
   * One file of root `root`: an unchanged file's asset (whether it made a new one), or a read file waiting for its
   * batch (`ImportBatches.commitInPlace`, or `commitOne` when the batch fails), with what import_file is to remember.
   */
  async readOne(
    ownerId: string,
    root: string,
    f: FoundFile,
    before: ImportedFile | undefined,
    mine: Set<string>,
    progress: ImportProgress,
    stopped: () => boolean,
    seen: SeenFiles,
  ): Promise<{ created: boolean } | { pending: InPlacePending }> {
    const place = comfyPlacement(f.treePath);
    if (!place)
      throw new ImportReadError('NOT_A_FILE', 'not inside a model folder (models/<folder>/), input/ or output/');
    const file = { name: place.name, tags: place.tags, path: f.treePath, fileName: path.posix.basename(f.treePath) };
    const inode = `${f.dev}:${f.ino}`;
    const relPath = path
      .relative(await this.realRoot(root), f.abs)
      .split(path.sep)
      .join('/');
    const loc: InPlaceLocation = { root, relPath, size: f.size, mtimeNs: f.mtimeNs, inode };
    if (before !== undefined && sameFile(f, before)) {
      const known = await this.d.content.find({ algorithm: 'blake3', hex: before.contentHash });
      if (known) {
        seen.set(known.blake3, loc);
        return { created: await this.assetOf(ownerId, known.blake3, file, mine) };
      }
    }
    const read = await this.read(f, progress, stopped);
    const { size, mtimeNs } = read.stat;
    const at = { ...loc, size, mtimeNs };
    seen.set(read.digest.blake3, at);
    const saved = { path: f.treePath, size, mtimeNs, inode, contentHash: read.digest.blake3 };
    return { pending: { digest: read.digest, head: read.head, loc: at, file, saved } };
  }

  /** A read file's content and asset on their own (its batch failed): whether it made a new asset. */
  async commitOne(ownerId: string, p: InPlacePending, mine: Set<string>): Promise<boolean> {
    await this.d.content.recordInPlace(p.digest, p.head, { name: p.file.name, fileName: p.file.fileName }, p.loc);
    return this.assetOf(ownerId, p.digest.blake3, p.file, mine);
  }

  /**
   * The drift check of root `root` after its walk: each in-place location whose file still has its size and mtime
   * is present; one whose file is gone or changed moves to a file of the same bytes this seed saw, else its
   * content's assets get `missing`. Returns how many contents are missing.
   */
  async reconcile(root: string, seen: SeenFiles): Promise<number> {
    const real = await this.realRoot(root);
    const present: string[] = [];
    const gone: string[] = [];
    for (const loc of await this.d.inPlace.repo.locationsUnder(root)) {
      const st = await fs.promises
        .lstat(path.join(real, ...loc.relPath.split('/')), { bigint: true })
        .catch(() => undefined);
      if (st?.isFile() && sameFile(st, loc)) present.push(loc.blake3);
      else {
        const other = seen.get(loc.blake3);
        if (other) {
          await this.d.inPlace.repo.relocate(loc.blake3, other);
          present.push(loc.blake3);
        } else gone.push(loc.blake3);
      }
    }
    await this.d.inPlace.repo.setMissing(present, false);
    await this.d.inPlace.repo.setMissing(gone, true);
    return gone.length;
  }

  private async assetOf(
    ownerId: string,
    blake3: string,
    file: { name: string; tags: string[]; path: string; fileName: string },
    mine: Set<string>,
  ): Promise<boolean> {
    if (mine.has(blake3)) return false;
    const made = await this.d.assets.importFile(ownerId, { blake3 }, file);
    mine.add(blake3);
    return made.created;
  }

  private realRoot(root: string): Promise<string> {
    let real = this.roots.get(root);
    if (!real) {
      const dir = this.d.inPlace.files.rootDir(root);
      real =
        dir === undefined ? Promise.reject(new Error(`${root} is not an in-place root`)) : fs.promises.realpath(dir);
      this.roots.set(root, real);
    }
    return real;
  }

  /**
   * The file's digests, first bytes and fstat, judged unchanged while read. The file is read and hashed on an ingest
   * worker in one request (one message each way: streamed through this thread, 10,000 images were imported at half
   * the copy mode's pace, and four 1 GiB models took 7.1 s); a cancel of the seed stops the read between its chunks
   * (the worker checks a shared flag this thread sets).
   */
  private async read(
    f: FoundFile,
    progress: ImportProgress,
    stopped: () => boolean,
  ): Promise<{ digest: ContentDigest; head: Buffer; stat: { size: bigint; mtimeNs: bigint } }> {
    const hashers = this.d.inPlace.hashers;
    if (hashers) {
      // Small files need no watch: one is read in a few milliseconds.
      const cancel = f.size > WHOLE_FILE_MAX ? new Int32Array(new SharedArrayBuffer(4)) : undefined;
      const watch = cancel && setInterval(() => stopped() && Atomics.store(cancel, 0, 1), CANCEL_POLL_MS);
      const c = await hashers
        .copyHashed(f.abs, undefined, METADATA_HEAD_BYTES, undefined, cancel)
        .catch((err: unknown) => {
          throw readFailure(err);
        })
        .finally(() => clearInterval(watch));
      progress.filesRead++;
      progress.bytesRead += c.size;
      checkCopied(f, c.before, c.after, c.size);
      return { digest: { blake3: c.blake3, sha256: c.sha256, size: c.size }, head: c.head, stat: c.before };
    }
    const opened = await openFound(f);
    try {
      progress.filesRead++;
      const read = await this.hash(opened.read(stopped));
      progress.bytesRead += read.bytes;
      await opened.check(read.bytes);
      return { digest: read.digest, head: read.head, stat: opened.stat };
    } finally {
      await opened.close();
    }
  }

  /** BLAKE3 + SHA-256 of the bytes on this thread (no ingest workers), and their first bytes. */
  private async hash(src: AsyncIterable<Buffer>): Promise<{ digest: ContentDigest; head: Buffer; bytes: number }> {
    const head: Buffer[] = [];
    let headBytes = 0;
    let bytes = 0;
    const tapped = async function* (): AsyncGenerator<Buffer> {
      for await (const c of src) {
        bytes += c.length;
        if (headBytes < METADATA_HEAD_BYTES) {
          // A copy: the chunk is the reader's.
          const part = Buffer.from(c.subarray(0, METADATA_HEAD_BYTES - headBytes));
          head.push(part);
          headBytes += part.length;
        }
        yield c;
      }
    };
    const digest = await this.d.content.digestOnly(tapped(), { maxBytes: Number.MAX_SAFE_INTEGER });
    return { digest, head: Buffer.concat(head), bytes };
  }
}
