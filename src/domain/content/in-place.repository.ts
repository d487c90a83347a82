import { Prisma } from '../../generated/prisma/client';
import { contentLockKey, prismaOf, type Db, type Transaction, type Transactions } from '../../infra/prisma';
import { MISSING_TAG } from '../assets/validation';
import type { ContentRecord } from './content.repository';

/** Where an in-place content's file is, and what it was when it was hashed (contract 6.4). */
export interface InPlaceLocation {
  /** The IMPORT_ROOTS name of its root (`models`). */
  root: string;
  /** The file's path inside the root, POSIX separators, no link in it (the walk resolved them). */
  relPath: string;
  size: bigint;
  mtimeNs: bigint;
  /** `<dev>:<ino>`, as import_file keeps it. */
  inode: string;
}

type LocationRow = { blake3: string; root: string; rel_path: string; size: bigint; mtime_ns: bigint; inode: string };
const toLocation = (r: LocationRow): InPlaceLocation & { blake3: string } => ({
  blake3: r.blake3.trim(),
  root: r.root,
  relPath: r.rel_path,
  size: BigInt(r.size),
  mtimeNs: BigInt(r.mtime_ns),
  inode: r.inode,
});

/**
 * The rows of in-place contents (`content.in_place`, `content_location`) and the `missing` system tag their assets
 * carry while the file is gone or changed. The tag is the service's own write: no client route can set or clear it.
 */
export class InPlaceRepository {
  constructor(
    private readonly db: Db,
    private readonly transactions: Transactions,
  ) {}

  /** The location of a content that has no blob (in_place), else undefined. */
  async location(blake3: string): Promise<InPlaceLocation | undefined> {
    const [row] = await this.db.$queryRaw<LocationRow[]>`
      SELECT l.blake3, l.root, l.rel_path, l.size, l.mtime_ns, l.inode
        FROM content_location l JOIN content c ON c.blake3 = l.blake3
       WHERE l.blake3 = ${blake3} AND c.in_place`;
    return row ? toLocation(row) : undefined;
  }

  /** Every in-place location under `root` (a seed's drift check). */
  async locationsUnder(root: string): Promise<(InPlaceLocation & { blake3: string })[]> {
    const rows = await this.db.$queryRaw<LocationRow[]>`
      SELECT l.blake3, l.root, l.rel_path, l.size, l.mtime_ns, l.inode
        FROM content_location l JOIN content c ON c.blake3 = l.blake3
       WHERE l.root = ${root} AND c.in_place`;
    return rows.map(toLocation);
  }

  /**
   * A freshly hashed in-place file: its content row (in_place, no blob) and location, unless the content exists
   * already (stored, or in place elsewhere: a seed's drift check moves a stale location to a file seen). A new row is
   * born orphaned, so GC removes it when the asset that should name it is never made; the asset's create clears it.
   */
  async insertInPlace(rec: ContentRecord, loc: InPlaceLocation): Promise<void> {
    await this.transactions.run(async (transaction) => {
      const tx = prismaOf(transaction);
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(${contentLockKey(rec.blake3)})`;
      const made = await tx.$executeRaw`
        INSERT INTO content (blake3, sha256, size, mime_type, first_name, metadata, in_place, orphaned_at)
        VALUES (${rec.blake3}, ${rec.sha256}, ${BigInt(rec.size)}, ${rec.mimeType}, ${rec.firstName},
                ${rec.metadata === null ? null : JSON.stringify(rec.metadata)}::jsonb, true, now())
        ON CONFLICT DO NOTHING`;
      if (made === 0) return;
      await tx.$executeRaw`
        INSERT INTO content_location (blake3, root, rel_path, size, mtime_ns, inode)
        VALUES (${rec.blake3}, ${loc.root}, ${loc.relPath}, ${loc.size}, ${loc.mtimeNs}, ${loc.inode})`;
    });
  }

  /**
   * Inside a transaction that made these in-place contents' rows (an import's batch, holding their locks): their
   * locations.
   */
  async insertLocations(items: readonly { blake3: string; loc: InPlaceLocation }[], tx: Transaction): Promise<void> {
    if (items.length === 0) return;
    await prismaOf(tx).contentLocation.createMany({
      data: items.map(({ blake3, loc }) => ({
        blake3,
        root: loc.root,
        relPath: loc.relPath,
        size: loc.size,
        mtimeNs: loc.mtimeNs,
        inode: loc.inode,
      })),
      skipDuplicates: true,
    });
  }

  /** Points an in-place content at another file of the same bytes (its old one is gone or changed). */
  async relocate(blake3: string, loc: InPlaceLocation): Promise<void> {
    await this.db.$executeRaw`
      UPDATE content_location
         SET root = ${loc.root}, rel_path = ${loc.relPath}, size = ${loc.size}, mtime_ns = ${loc.mtimeNs},
             inode = ${loc.inode}, checked_at = now()
       WHERE blake3 = ${blake3}`;
  }

  /**
   * Gives (`missing` true) or takes away the `missing` tag of every asset of these contents, of any owner (they all
   * depend on the one file). Returns how many assets changed.
   */
  async setMissing(blake3s: readonly string[], missing: boolean): Promise<number> {
    if (blake3s.length === 0) return 0;
    const list = [...blake3s];
    return missing
      ? this.db.$executeRaw`
          UPDATE asset SET tags = array_append(tags, ${MISSING_TAG}), updated_at = now()
           WHERE content_hash = ANY(${list}::text[]) AND NOT (${MISSING_TAG} = ANY(tags))`
      : this.db.$executeRaw`
          UPDATE asset SET tags = array_remove(tags, ${MISSING_TAG}), updated_at = now()
           WHERE content_hash = ANY(${list}::text[]) AND ${MISSING_TAG} = ANY(tags)`;
  }

  /**
   * Inside a transaction holding the content lock, once the content's blob is stored: the content no longer depends
   * on its file (in_place cleared, location deleted, `missing` taken off its assets).
   */
  async makeStored(blake3: string, tx: Transaction): Promise<void> {
    const q = prismaOf(tx);
    await q.$executeRaw`UPDATE content SET in_place = false WHERE blake3 = ${blake3} AND in_place`;
    await q.$executeRaw`DELETE FROM content_location WHERE blake3 = ${blake3}`;
    await q.$executeRaw`
      UPDATE asset SET tags = array_remove(tags, ${MISSING_TAG}), updated_at = now()
       WHERE content_hash = ${blake3} AND ${MISSING_TAG} = ANY(tags)`;
  }

  /** This owner's assets tagged `missing` whose content is in place (no blob): what prune deletes. */
  async missingAssets(ownerId: string): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ id: string }[]>(Prisma.sql`
      SELECT a.id FROM asset a JOIN content c ON c.blake3 = a.content_hash
       WHERE a.owner_id = ${ownerId} AND ${MISSING_TAG} = ANY(a.tags) AND c.in_place`);
    return rows.map((r) => r.id);
  }
}
