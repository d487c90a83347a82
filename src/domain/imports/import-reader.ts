import path from 'node:path';
import type { AssetService } from '../assets/asset.service';
import { comfyPlacement } from '../assets/comfy-folders';
import type { ContentService, IngestedContent } from '../content/content.service';
import type { ReadFile } from './import-batch';
import { checkCopied, ImportReadError, openFound, readFailure } from './import-read';
import type { FoundFile } from './import-walk';
import type { ImportedFile } from './import.repository';
import type { ImportProgress } from './import.types';

/** What `import_file` remembers of a stored file: its tree path, and the size, mtime, inode and hash it had. */
export type SavedFile = { path: string } & ImportedFile;

/** A read file waiting for its batch, and what `import_file` will remember of it. */
export type Pending = ReadFile & { saved: SavedFile };

/** Files up to this size are read in one piece on a worker thread; larger ones are streamed (cancellable mid-file). */
export const WHOLE_FILE_MAX = 16n << 20n;

/** The import's reading of one file (ImportService runs several at a time). */
export class ImportReader {
  constructor(private readonly d: { content: ContentService; assets: AssetService }) {}

  /**
   * One file: placed by the ComfyUI mapping, skipped when unchanged since it was stored and still an asset of this
   * owner, made from stored content when its bytes are stored already and it is unchanged (true when a new asset was
   * made), else read once (hashed while it is written to the store) and put under its content address, for the
   * batch that makes its asset.
   */
  async readOne(
    ownerId: string,
    f: FoundFile,
    before: ImportedFile | undefined,
    mine: Set<string>,
    progress: ImportProgress,
    stopped: () => boolean,
  ): Promise<boolean | Pending> {
    const place = comfyPlacement(f.treePath);
    if (!place)
      throw new ImportReadError('NOT_A_FILE', 'not inside a model folder (models/<folder>/), input/ or output/');
    const file = { name: place.name, tags: place.tags, path: f.treePath, fileName: path.posix.basename(f.treePath) };
    const inode = `${f.dev}:${f.ino}`;
    const unchanged =
      before !== undefined && before.size === f.size && before.mtimeNs === f.mtimeNs && before.inode === inode;
    if (unchanged && mine.has(before.contentHash)) return false;
    if (unchanged && (await this.d.content.find({ algorithm: 'blake3', hex: before.contentHash }))) {
      const made = await this.d.assets.importFile(ownerId, { blake3: before.contentHash }, file);
      mine.add(before.contentHash);
      return made.created;
    }
    const whole = f.size <= WHOLE_FILE_MAX ? await this.readWhole(f, progress) : undefined;
    if (whole) return { ingested: whole.ingested, file, saved: { ...whole.saved, inode } };
    const opened = await openFound(f);
    let ingested: IngestedContent | undefined;
    try {
      let bytes = 0;
      const counted = async function* (src: AsyncIterable<Buffer>) {
        for await (const c of src) {
          bytes += c.length;
          yield c;
        }
      };
      progress.filesRead++;
      ingested = await this.d.content.ingest(counted(opened.read(stopped)), { maxBytes: Number.MAX_SAFE_INTEGER });
      progress.bytesRead += bytes;
      await opened.check(bytes);
      await this.d.content.precommit(ingested);
    } catch (err) {
      if (ingested) await this.d.content.discard(ingested);
      throw err;
    } finally {
      await opened.close();
    }
    const { size, mtimeNs } = opened.stat;
    return { ingested, file, saved: { path: f.treePath, size, mtimeNs, inode, contentHash: ingested.digest.blake3 } };
  }

  /**
   * A file read, hashed and written in one piece on the ingest worker (where the store can: undefined where not),
   * judged unchanged, and put under its content address. Files up to WHOLE_FILE_MAX: a larger one is streamed, so a
   * cancel stops it between chunks.
   */
  private async readWhole(
    f: FoundFile,
    progress: ImportProgress,
  ): Promise<{ ingested: IngestedContent; saved: Omit<SavedFile, 'inode'> } | undefined> {
    const copied = await this.d.content.ingestLocalFile(f.abs).catch((err: unknown) => {
      throw readFailure(err);
    });
    if (!copied) return undefined;
    const { ingested, before, after } = copied;
    try {
      progress.filesRead++;
      progress.bytesRead += ingested.digest.size;
      checkCopied(f, before, after, ingested.digest.size);
      if (!copied.precommitted) await this.d.content.precommit(ingested);
    } catch (err) {
      await this.d.content.discard(ingested);
      // The worker may have put it under its address already: removed unless a row has it.
      if (copied.precommitted) await this.d.content.abandon(ingested.digest.blake3);
      throw err;
    }
    const saved = { path: f.treePath, size: before.size, mtimeNs: before.mtimeNs, contentHash: ingested.digest.blake3 };
    return { ingested, saved };
  }
}
