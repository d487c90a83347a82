'use strict';
// An S3 protocol server (s3rver) for benchmarks, in its own process so its CPU is not the benchmark's:
// `node bench/lib/s3rver-server.cjs <dir> <bucket>` prints `ready <port>` once it listens on 127.0.0.1.
const S3rver = require('s3rver');

async function main() {
  const [dir, bucket = 'bench'] = process.argv.slice(2);
  if (!dir) throw new Error('usage: s3rver-server.cjs <dir> [bucket]');
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory: dir, silent: true, configureBuckets: [{ name: bucket }] });
  const addr = await server.run();
  process.stdout.write(`ready ${addr.port}\n`);
  const stop = () => server.close().finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err) => {
  process.stderr.write(`s3rver-server: ${err.stack || err}\n`);
  process.exit(1);
});
