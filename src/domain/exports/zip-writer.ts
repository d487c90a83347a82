import { crc32 } from 'node:zlib';

/** One stored member: its bytes are `data`, which must yield exactly `size` bytes. */
export interface ZipEntry {
  /** A relative path with `/` separators (see archive-names.ts), written UTF-8 (general purpose bit 11). */
  name: string;
  size: number;
  mtime: Date;
  data: AsyncIterable<Buffer>;
}

/**
 * Streams a ZIP archive of stored (not deflated) members, ZIP64 where sizes or offsets need it (APPNOTE 6.3.10).
 * The CRC-32 of a member is known only once its bytes went by, so each member has a data descriptor (bit 3) after
 * its data; sizes are known up front, so the ZIP64 form of each member is decided before its header is written.
 * Memory: one central directory record (~100 bytes) per member, plus whatever chunks the consumer holds; the
 * consumer pulls, so a slow store slows the reading of the blobs (backpressure), and nothing is read ahead.
 *
 * Written instead of yazl (the kept library before) because yazl computes the CRC in JavaScript (buffer-crc32) behind
 * five piped streams per member, several times slower than zlib.crc32 (`npm run bench -- zip-writer`).
 */
export async function* zipArchive(
  entries: AsyncIterable<ZipEntry> | Iterable<ZipEntry>,
  opts: { forceZip64?: boolean } = {},
): AsyncGenerator<Buffer> {
  const force = opts.forceZip64 === true;
  const central: Buffer[] = [];
  let offset = 0;
  let count = 0;
  for await (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    if (name.length === 0 || name.length > 0xffff) throw new Error(`member name of ${name.length} bytes`);
    if (!Number.isSafeInteger(entry.size) || entry.size < 0)
      throw new Error(`member ${entry.name}: invalid size ${entry.size}`);
    const zip64 = force || entry.size >= MAX32 || offset >= MAX32;
    const { time, date } = dosDateTime(entry.mtime);
    const header = localHeader(name, zip64, time, date);
    const at = offset;
    offset += header.length;
    yield header;
    let crc = 0;
    let seen = 0;
    for await (const chunk of entry.data) {
      if (chunk.length === 0) continue;
      crc = crc32(chunk, crc);
      seen += chunk.length;
      if (seen > entry.size) break;
      yield chunk;
    }
    if (seen !== entry.size)
      throw new Error(
        `member ${entry.name} has ${seen > entry.size ? 'more than' : 'only'} ${seen} of its ${entry.size} bytes`,
      );
    offset += seen;
    const descriptor = dataDescriptor(crc, entry.size, zip64);
    offset += descriptor.length;
    yield descriptor;
    central.push(centralRecord(name, zip64, time, date, crc, entry.size, at, entry.mtime));
    count++;
  }
  const cdOffset = offset;
  let cdSize = 0;
  // The central directory leaves in blocks of about 1 MiB rather than one buffer per member.
  for (let i = 0; i < central.length;) {
    let n = 0;
    const start = i;
    while (i < central.length && n < 1 << 20) n += central[i++]!.length;
    cdSize += n;
    yield Buffer.concat(central.slice(start, i), n);
  }
  central.length = 0;
  yield endRecords(count, cdSize, cdOffset, force);
}

const MAX16 = 0xffff;
const MAX32 = 0xffffffff;
const BIT_DATA_DESCRIPTOR = 1 << 3;
const BIT_UTF8 = 1 << 11;
const VERSION_NEEDED = 20;
const VERSION_NEEDED_ZIP64 = 45;
/** Unix (3), APPNOTE 6.3. */
const VERSION_MADE_BY = (3 << 8) | 63;
/** A regular file, rw-r--r--, in the high half (Info-ZIP's Unix convention). */
const EXTERNAL_ATTRIBUTES = (0o100644 << 16) >>> 0;

function localHeader(name: Buffer, zip64: boolean, time: number, date: number): Buffer {
  // Bit 3: CRC and sizes are zero here and follow the data. A ZIP64 member says so with its extra field (both sizes,
  // zero, and 0xFFFFFFFF in the fixed fields), which also tells readers its data descriptor has 8-byte sizes.
  const extra = zip64 ? 20 : 0;
  const b = Buffer.alloc(30 + name.length + extra);
  b.writeUInt32LE(0x04034b50, 0);
  b.writeUInt16LE(zip64 ? VERSION_NEEDED_ZIP64 : VERSION_NEEDED, 4);
  b.writeUInt16LE(BIT_DATA_DESCRIPTOR | BIT_UTF8, 6);
  b.writeUInt16LE(0, 8); // stored
  b.writeUInt16LE(time, 10);
  b.writeUInt16LE(date, 12);
  b.writeUInt32LE(0, 14);
  b.writeUInt32LE(zip64 ? MAX32 : 0, 18);
  b.writeUInt32LE(zip64 ? MAX32 : 0, 22);
  b.writeUInt16LE(name.length, 26);
  b.writeUInt16LE(extra, 28);
  name.copy(b, 30);
  if (zip64) {
    b.writeUInt16LE(0x0001, 30 + name.length);
    b.writeUInt16LE(16, 32 + name.length);
    // Both 8-byte sizes stay zero (bit 3).
  }
  return b;
}

function dataDescriptor(crc: number, size: number, zip64: boolean): Buffer {
  const b = Buffer.alloc(zip64 ? 24 : 16);
  b.writeUInt32LE(0x08074b50, 0);
  b.writeUInt32LE(crc, 4);
  if (zip64) {
    b.writeBigUInt64LE(BigInt(size), 8);
    b.writeBigUInt64LE(BigInt(size), 16);
  } else {
    b.writeUInt32LE(size, 8);
    b.writeUInt32LE(size, 12);
  }
  return b;
}

function centralRecord(
  name: Buffer,
  zip64: boolean,
  time: number,
  date: number,
  crc: number,
  size: number,
  offset: number,
  mtime: Date,
): Buffer {
  // Extra fields: Info-ZIP's universal timestamp (the exact mtime, UTC), then ZIP64 sizes and offset.
  const ut = 9;
  const z64 = zip64 ? 28 : 0;
  const b = Buffer.alloc(46 + name.length + ut + z64);
  b.writeUInt32LE(0x02014b50, 0);
  b.writeUInt16LE(VERSION_MADE_BY, 4);
  b.writeUInt16LE(zip64 ? VERSION_NEEDED_ZIP64 : VERSION_NEEDED, 6);
  b.writeUInt16LE(BIT_DATA_DESCRIPTOR | BIT_UTF8, 8);
  b.writeUInt16LE(0, 10);
  b.writeUInt16LE(time, 12);
  b.writeUInt16LE(date, 14);
  b.writeUInt32LE(crc, 16);
  b.writeUInt32LE(zip64 ? MAX32 : size, 20);
  b.writeUInt32LE(zip64 ? MAX32 : size, 24);
  b.writeUInt16LE(name.length, 28);
  b.writeUInt16LE(ut + z64, 30);
  // comment length, disk number start, internal attributes: 0
  b.writeUInt32LE(EXTERNAL_ATTRIBUTES, 38);
  b.writeUInt32LE(zip64 ? MAX32 : offset, 42);
  let p = 46;
  name.copy(b, p);
  p += name.length;
  b.writeUInt16LE(0x5455, p);
  b.writeUInt16LE(5, p + 2);
  b.writeUInt8(1, p + 4); // mtime present
  b.writeInt32LE(Math.max(-0x80000000, Math.min(0x7fffffff, Math.floor(mtime.getTime() / 1000))), p + 5);
  p += ut;
  if (zip64) {
    b.writeUInt16LE(0x0001, p);
    b.writeUInt16LE(24, p + 2);
    b.writeBigUInt64LE(BigInt(size), p + 4);
    b.writeBigUInt64LE(BigInt(size), p + 12);
    b.writeBigUInt64LE(BigInt(offset), p + 20);
  }
  return b;
}

/** The end of central directory record, after the ZIP64 one and its locator when any field overflows (or `force`). */
function endRecords(count: number, cdSize: number, cdOffset: number, force: boolean): Buffer {
  const zip64 = force || count >= MAX16 || cdSize >= MAX32 || cdOffset >= MAX32;
  const parts: Buffer[] = [];
  if (zip64) {
    const rec = Buffer.alloc(56);
    rec.writeUInt32LE(0x06064b50, 0);
    rec.writeBigUInt64LE(44n, 4); // size of the rest of this record
    rec.writeUInt16LE(VERSION_MADE_BY, 12);
    rec.writeUInt16LE(VERSION_NEEDED_ZIP64, 14);
    // this disk, the central directory's disk: 0
    rec.writeBigUInt64LE(BigInt(count), 24);
    rec.writeBigUInt64LE(BigInt(count), 32);
    rec.writeBigUInt64LE(BigInt(cdSize), 40);
    rec.writeBigUInt64LE(BigInt(cdOffset), 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(0x07064b50, 0);
    locator.writeBigUInt64LE(BigInt(cdOffset + cdSize), 8);
    locator.writeUInt32LE(1, 16); // total number of disks
    parts.push(rec, locator);
  }
  // In the ZIP64 form every field is -1, so readers take the values from the ZIP64 record.
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(zip64 ? MAX16 : count, 8);
  eocd.writeUInt16LE(zip64 ? MAX16 : count, 10);
  eocd.writeUInt32LE(zip64 ? MAX32 : cdSize, 12);
  eocd.writeUInt32LE(zip64 ? MAX32 : cdOffset, 16);
  parts.push(eocd);
  return Buffer.concat(parts);
}

/** MS-DOS date and time (local time, two-second steps), clamped to the years 1980–2107 the format can hold. */
function dosDateTime(d: Date): { time: number; date: number } {
  const min = new Date(1980, 0, 1);
  const max = new Date(2107, 11, 31, 23, 59, 58);
  const t = d < min ? min : d > max ? max : d;
  return {
    time: (t.getHours() << 11) | (t.getMinutes() << 5) | Math.floor(t.getSeconds() / 2),
    date: ((t.getFullYear() - 1980) << 9) | ((t.getMonth() + 1) << 5) | t.getDate(),
  };
}
