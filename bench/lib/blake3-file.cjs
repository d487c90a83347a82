'use strict';
// The native BLAKE3 (the addon the CLI and the service use) of one file, read in steps of `buf` (the baselines of the
// CLI benchmarks: "b3sum-speed" hashing). Run as a script, `node bench/lib/blake3-file.cjs FILE` prints the hash,
// reading 4 MiB at a time into a buffer off the page boundary (the fastest way to read with it here:
// src/cli/assets/off-page.ts, bench/profiles/cli-hash.cjs), in a process that loads nothing else.
const fs = require('node:fs');
const { Blake3Hasher } = require('@napi-rs/blake-hash');

/** A 4 MiB read buffer 64 bytes past a fresh allocation. */
const offPageBuffer = () => Buffer.allocUnsafeSlow((4 << 20) + 64).subarray(64);

/** The hex BLAKE3 of `file`, read into `buf`. */
function blake3File(file, buf = offPageBuffer()) {
  const h = new Blake3Hasher();
  const fd = fs.openSync(file, 'r');
  try {
    for (let n; (n = fs.readSync(fd, buf, 0, buf.length, null)) > 0;) h.update(buf.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return h.digest('hex');
}

module.exports = { blake3File, offPageBuffer };

if (require.main === module) console.log(blake3File(process.argv[2]));
