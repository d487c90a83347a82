import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';

const ceph = require('../../scripts/ceph-rgw.cjs') as {
  checkInstalled(): void;
  startGateway(info: ClusterInfo, name: string): Promise<Gateway>;
};

const execFileP = promisify(execFile);
const SCRIPT = path.join(__dirname, '../../scripts/ceph-rgw.cjs');
const START_TIMEOUT_MS = 120_000;

interface ClusterInfo {
  pid: number;
  endpoint: string;
  accessKey: string;
  secretKey: string;
  conf: string;
  dir: string;
  startMs: number;
  phases: Record<string, number>;
}

/** A radosgw of one's own against the shared cluster, to kill, freeze and restart. */
export interface Gateway {
  endpoint: string;
  port: number;
  start(): Promise<void>;
  /** SIGKILL, waiting for the exit. */
  kill(): Promise<void>;
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

export interface Rgw {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  /** The cluster's ceph.conf, for `ceph` and `radosgw-admin`. */
  conf: string;
  /** A new, empty bucket of this file's own (several test files share the cluster). */
  newBucket(): Promise<TestS3Server>;
  /** A gateway of this file's own (see Gateway). */
  startGateway(): Promise<Gateway>;
  /** `radosgw-admin <args>` against the cluster (quotas), its output. */
  admin(...args: string[]): Promise<string>;
}

export interface TestS3Server {
  endpoint: string;
  bucket: string;
  /** Settings for the service (and the AWS credentials its SDK reads from the environment). */
  env: Record<string, string>;
  client: S3Client;
  /** Keys of the stored objects (ListObjectsV2), sorted. */
  objectKeys(prefix?: string): Promise<string[]>;
  /** Multipart uploads begun and neither completed nor aborted (ListMultipartUploads). */
  pendingUploads(): Promise<number>;
  /** Empties and removes the bucket. */
  stop(): Promise<void>;
}

let shared: Promise<ClusterInfo> | undefined;

/**
 * The run's Ceph RGW (scripts/ceph-rgw.cjs), started by the first test file that asks and shared by all of them
 * (jest workers are processes: a lock file in the run's directory elects the one that starts it; the others wait for
 * its info file). The cluster lives until the run's global teardown, or its watchdog sees jest's process end.
 * Also sets the AWS credential variables of this process, as the service's SDK reads them from the standard chain.
 */
export async function startRgw(): Promise<Rgw> {
  const info = await (shared ??= connect());
  process.env.AWS_ACCESS_KEY_ID = info.accessKey;
  process.env.AWS_SECRET_ACCESS_KEY = info.secretKey;
  const client = new S3Client({
    endpoint: info.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: info.accessKey, secretAccessKey: info.secretKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    endpoint: info.endpoint,
    accessKey: info.accessKey,
    secretKey: info.secretKey,
    conf: info.conf,
    newBucket: () => newBucket(info, client),
    startGateway: () => ceph.startGateway(info, `rgw.${process.pid}.${crypto.randomBytes(3).toString('hex')}`),
    admin: (...args) => execFileP('radosgw-admin', ['-c', info.conf, ...args]).then((r) => r.stdout),
  };
}

/** One bucket of the shared RGW (the shape every S3 test uses). */
export async function startS3Server(): Promise<TestS3Server> {
  return (await startRgw()).newBucket();
}

async function newBucket(info: ClusterInfo, admin: S3Client): Promise<TestS3Server> {
  const bucket = `t-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  const objectKeys = async (prefix?: string): Promise<string[]> => {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const res = await admin.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
      );
      out.push(...(res.Contents ?? []).flatMap((o) => (o.Key ? [o.Key] : [])));
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
    return out.sort();
  };
  return {
    endpoint: info.endpoint,
    bucket,
    client: admin,
    env: {
      STORAGE_BACKEND: 's3',
      S3_BUCKET: bucket,
      S3_ENDPOINT: info.endpoint,
      S3_REGION: 'us-east-1',
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: info.accessKey,
      AWS_SECRET_ACCESS_KEY: info.secretKey,
    },
    objectKeys,
    pendingUploads: async () =>
      (await admin.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads?.length ?? 0,
    // Memstore keeps objects in memory: a file's bucket goes when the file is done with it.
    stop: async () => {
      for (const key of await objectKeys().catch(() => [])) {
        await admin.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })).catch(() => undefined);
      }
      await admin.send(new DeleteBucketCommand({ Bucket: bucket })).catch(() => undefined);
    },
  };
}

async function connect(): Promise<ClusterInfo> {
  ceph.checkInstalled();
  const runDir = process.env.TEST_RUN_DIR;
  if (!runDir) throw new Error('TEST_RUN_DIR is not set: the S3 tests run under jest (test/helpers/global-setup.ts)');
  const infoFile = path.join(runDir, 'rgw.json');
  let elected = false;
  try {
    fs.writeFileSync(path.join(runDir, 'rgw.lock'), String(process.pid), { flag: 'wx' });
    elected = true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  if (elected) {
    const log = fs.openSync(path.join(runDir, 'rgw.log'), 'a');
    const child = spawn(
      process.execPath,
      [SCRIPT, '--info', infoFile, '--watch-pid', process.env.TEST_RUN_PID ?? String(process.ppid)],
      {
        detached: true,
        stdio: ['ignore', log, log],
      },
    );
    fs.closeSync(log);
    child.unref();
  }
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!fs.existsSync(infoFile)) {
    if (Date.now() > deadline)
      throw new Error(`Ceph RGW did not start within ${START_TIMEOUT_MS} ms (see ${runDir}/rgw.log)`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const info = JSON.parse(fs.readFileSync(infoFile, 'utf8')) as ClusterInfo | { error: string };
  if ('error' in info) throw new Error(`Ceph RGW did not start: ${info.error}`);
  return info;
}

/** Global teardown: stops the run's cluster if a test file started one. */
export async function stopSharedRgw(runDir: string): Promise<void> {
  const infoFile = path.join(runDir, 'rgw.json');
  if (!fs.existsSync(infoFile)) return;
  const info = JSON.parse(fs.readFileSync(infoFile, 'utf8')) as Partial<ClusterInfo>;
  if (!info.pid) return;
  process.stderr.write(`Ceph RGW of this run: started in ${info.startMs} ms (${JSON.stringify(info.phases)})\n`);
  try {
    process.kill(info.pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && alive(info.pid)) await new Promise((r) => setTimeout(r, 50));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
