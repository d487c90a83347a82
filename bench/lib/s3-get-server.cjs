'use strict';
// The baseline of the S3 content benchmark: a bare node:http server that answers every request with one object,
// fetched by the AWS SDK's GetObject and piped into the response; no framework, no database, no auth.
// Usage: S3_ENDPOINT=… S3_BUCKET=… S3_KEY=… AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… node s3-get-server.cjs
const http = require('node:http');
const { S3Client, GetObjectCommand } = require('@aws-sdk/client-s3');

const client = new S3Client({
  region: 'us-east-1',
  endpoint: process.env.S3_ENDPOINT,
  forcePathStyle: true,
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
});

const server = http.createServer(async (req, res) => {
  try {
    const obj = await client.send(new GetObjectCommand({ Bucket: process.env.S3_BUCKET, Key: process.env.S3_KEY }));
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(obj.ContentLength) });
    obj.Body.pipe(res);
  } catch (err) {
    res.writeHead(500).end(String(err));
  }
});

server.listen(0, '127.0.0.1', () => process.stdout.write(`ready ${server.address().port}\n`));
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
