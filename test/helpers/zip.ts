import crypto from 'node:crypto';
import yauzl from 'yauzl';

export interface ZipMember {
  name: string;
  size: number;
  compressionMethod: number;
  blake3: string;
  sha256: string;
}

/** Every member of the ZIP file at `file` (read with yauzl, CRCs checked), with the hashes of its bytes. */
export async function readZip(file: string): Promise<ZipMember[]> {
  const { Blake3Hasher } = require('@napi-rs/blake-hash') as typeof import('@napi-rs/blake-hash');
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(file, { lazyEntries: true, strictFileNames: true, validateEntrySizes: true }, (err, z) =>
      err ? reject(err) : resolve(z!),
    ),
  );
  const out: ZipMember[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (err, stream) => {
          if (err) return reject(err);
          const b3 = new Blake3Hasher();
          const sha = crypto.createHash('sha256');
          stream!.on('data', (c: Buffer) => {
            b3.update(c);
            sha.update(c);
          });
          stream!.on('error', reject);
          stream!.on('end', () => {
            out.push({
              name: entry.fileName,
              size: entry.uncompressedSize,
              compressionMethod: entry.compressionMethod,
              blake3: 'blake3:' + b3.digest('hex'),
              sha256: 'sha256:' + sha.digest('hex'),
            });
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  return out;
}
