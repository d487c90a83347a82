import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { ImportRootName, ImportRootsConfig } from '../../config';
import type { InPlaceFiles } from '../../infra/blob-store/content-reads';
import { fileBody, ReadBufferPool } from '../../infra/blob-store/file-body';
import type { Logger } from '../../infra/logger';
import { DomainError } from '../errors';
import type { InPlaceLocation, InPlaceRepository } from './in-place.repository';

const inside = (real: string, root: string): boolean => real.startsWith(root + path.sep);

/** What a file is now, against what it was when its content was hashed: only size and mtime count (contract 6.4). */
export const sameFile = (st: { size: bigint; mtimeNs: bigint }, loc: { size: bigint; mtimeNs: bigint }): boolean =>
  st.size === loc.size && st.mtimeNs === loc.mtimeNs;

/**
 * The files of in-place import roots as the bytes of their contents (contract 6.4): the blob store's reads fall back
 * here for a content without a blob (infra/blob-store/content-reads.ts), so the content route, thumbnails, exports
 * and the metadata backfill all read them through the one seam. A file is only ever opened read-only, without
 * following a link, and only when it is still inside its root with the size and mtime it was hashed with; a file gone
 * or changed is not served (409 CONTENT_CHANGED) and its assets get the `missing` tag. An instance that does not have
 * the root (another machine) answers 503 CONTENT_UNAVAILABLE.
 */
export class InPlaceContent implements InPlaceFiles {
  /** As many idle read buffers as the store keeps (4 had a 1 GiB serve allocate and collect buffers mid-stream). */
  private readonly buffers = new ReadBufferPool();

  constructor(
    private readonly repo: InPlaceRepository,
    private readonly config: ImportRootsConfig,
    private readonly logger: Logger,
  ) {}

  async open(blake3: string, range?: { start: number; end: number }): Promise<Readable | undefined> {
    const found = await this.verified(blake3);
    if (!found) return undefined;
    return fileBody(found.fh, range, this.buffers);
  }

  async localPath(blake3: string): Promise<string | undefined> {
    const found = await this.verified(blake3);
    if (!found) return undefined;
    await found.fh.close();
    return found.abs;
  }

  /** The folder of root `name` on this instance when it is an in-place root here. */
  rootDir(name: string): string | undefined {
    const root = name as ImportRootName;
    return this.config.inPlace.has(root) ? this.config.roots[root] : undefined;
  }

  /**
   * The content's file, opened and checked, or undefined when the content is not in place (no location: the blob
   * is simply missing). CONTENT_UNAVAILABLE when this instance cannot see the root; CONTENT_CHANGED (and `missing`
   * on its assets) when the file is gone, replaced by something else, or has another size or mtime.
   */
  private async verified(blake3: string): Promise<{ abs: string; fh: fs.promises.FileHandle } | undefined> {
    const loc = await this.repo.location(blake3);
    if (!loc) return undefined;
    const dir = this.rootDir(loc.root);
    if (dir === undefined) throw unavailable(loc.root, 'is not an in-place import root of this instance');
    let root: string;
    try {
      root = await fs.promises.realpath(dir);
    } catch (err) {
      throw unavailable(loc.root, `cannot be read here (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const abs = path.join(root, ...loc.relPath.split('/'));
    if (!inside(abs, root)) return this.changed(blake3, loc);
    let fh: fs.promises.FileHandle;
    try {
      fh = await fs.promises.open(abs, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return this.changed(blake3, loc);
      throw unavailable(loc.root, `its file cannot be opened here (${code ?? 'error'})`);
    }
    try {
      const st = await fh.stat({ bigint: true });
      // A folder on the way swapped for a link would lead elsewhere: the real path must still be inside the root.
      const real = await fs.promises.realpath(abs);
      if (!st.isFile() || !sameFile(st, loc) || !inside(real, root)) {
        await fh.close();
        return this.changed(blake3, loc);
      }
      return { abs, fh };
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
  }

  private async changed(blake3: string, loc: InPlaceLocation): Promise<never> {
    await this.repo
      .setMissing([blake3], true)
      .catch((err: unknown) => this.logger.warn('could not tag the assets of a missing file', { blake3, err }));
    throw new DomainError(
      'CONTENT_CHANGED',
      `the file of this content (${loc.root}/${loc.relPath}) is gone or changed since it was indexed; a seed indexes it again`,
      { path: `${loc.root}/${loc.relPath}` },
    );
  }
}

const unavailable = (root: string, why: string) =>
  new DomainError('CONTENT_UNAVAILABLE', `this content is a file of the in-place import root ${root}, which ${why}`, {
    root,
  });
