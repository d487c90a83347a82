'use strict';
// The baseline of the content benchmark: a bare node:http server sending one file from disk with
// fs.createReadStream (256 KiB reads, as the service's disk store) piped into the response; no framework, no
// database, no auth. Usage: FILE=<path> node blob-server.cjs; prints `ready <port>`.
const fs = require('node:fs');
const http = require('node:http');

const file = process.env.FILE;
const size = fs.statSync(file).size;

const server = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) });
  fs.createReadStream(file, { highWaterMark: 256 * 1024 }).pipe(res);
});

server.listen(0, '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
