'use strict';
// The benchmarks' S3 server: a throwaway Ceph RGW (scripts/ceph-rgw.cjs; its daemons are processes of their own, so
// their CPU is not the benchmark's) with one bucket, removed on exit. Memstore keeps objects in memory: benchmarks
// delete what they upload.
const { S3Client, CreateBucketCommand } = require('@aws-sdk/client-s3');
const { startCluster } = require('../../scripts/ceph-rgw.cjs');
const { onCleanup, log } = require('./common.cjs');

async function startRgw(bucket = 'bench') {
  const cluster = await startCluster();
  const forget = onCleanup(() => cluster.stop());
  log(`  Ceph RGW up in ${cluster.startMs} ms at ${cluster.endpoint}`);
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: cluster.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: cluster.accessKey, secretAccessKey: cluster.secretKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  const env = {
    STORAGE_BACKEND: 's3',
    S3_BUCKET: bucket,
    S3_ENDPOINT: cluster.endpoint,
    S3_FORCE_PATH_STYLE: 'true',
    S3_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: cluster.accessKey,
    AWS_SECRET_ACCESS_KEY: cluster.secretKey,
  };
  return {
    url: cluster.endpoint,
    bucket,
    client,
    env,
    cluster,
    stop: async () => {
      forget();
      client.destroy();
      await cluster.stop();
    },
  };
}

module.exports = { startRgw };
