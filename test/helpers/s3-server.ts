import fs from 'node:fs';
import fsp from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';

/** s3rver's built-in credentials. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export interface TestS3Server {
  endpoint: string;
  bucket: string;
  /** s3rver's storage directory (objects live under `dir/bucket`). */
  dir: string;
  /** Settings for the service (and the AWS credentials its SDK reads from the environment). */
  env: Record<string, string>;
  /** Keys of the stored objects, read from s3rver's directory (no request, no side effects). */
  objectKeys(): string[];
  /** Multipart uploads begun and neither completed nor aborted. */
  pendingUploads(): number;
  stop(): Promise<void>;
}

/**
 * An S3 protocol server (s3rver) on 127.0.0.1 with one bucket, in a temp directory. Also sets the AWS credential
 * variables of this process (the service's SDK reads them from the standard chain).
 *
 * s3rver 3.7 does not implement three operations the S3 store uses; a small middleware in front of its router adds
 * them over s3rver's own filesystem layout: ListMultipartUploads (sweeper), AbortMultipartUpload (cleanup after a
 * failed upload) and UploadPartCopy (commit of objects over the single-copy limit, and of segmented partials).
 */
export async function startS3Server(opts: { bucket?: string } = {}): Promise<TestS3Server> {
  const S3rver = require('s3rver');
  const bucket = opts.bucket ?? 'assets-test';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory: dir, silent: true, configureBuckets: [{ name: bucket }] });
  server.middleware.unshift(missingOperations(server.store, dir));
  const addr: AddressInfo = await server.run();
  process.env.AWS_ACCESS_KEY_ID = S3RVER_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = S3RVER_CREDENTIALS.secretAccessKey;
  const endpoint = `http://127.0.0.1:${addr.port}`;
  return {
    endpoint,
    bucket,
    dir,
    env: {
      STORAGE_BACKEND: 's3',
      S3_BUCKET: bucket,
      S3_ENDPOINT: endpoint,
      S3_REGION: 'us-east-1',
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    },
    objectKeys: () => walkObjects(path.join(dir, bucket), ''),
    pendingUploads: () => (fs.existsSync(path.join(dir, bucket, '._S3rver_uploads')) ? fs.readdirSync(path.join(dir, bucket, '._S3rver_uploads')).length : 0),
    stop: async () => {
      await server.close();
      await fsp.rm(dir, { recursive: true, force: true });
    },
  };
}

function walkObjects(dir: string, prefix: string): string[] {
  const out: string[] = [];
  for (const e of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
    if (e.isDirectory() && !e.name.endsWith('._S3rver_uploads')) out.push(...walkObjects(path.join(dir, e.name), `${prefix}${e.name}/`));
    else if (e.isFile() && e.name.endsWith('._S3rver_object')) out.push(prefix + e.name.slice(0, -'._S3rver_object'.length));
  }
  return out.sort();
}

interface KoaContext {
  method: string;
  path: string;
  query: Record<string, string | undefined>;
  headers: Record<string, string | undefined>;
  status: number;
  body: unknown;
  type: string;
  set(name: string, value: string): void;
}

interface S3rverStore {
  getObject(bucket: string, key: string, range?: { start?: number; end?: number }): Promise<{ content: Readable | null } | null>;
  putPart(bucket: string, uploadId: string, partNumber: string, content: Readable): Promise<{ md5: string }>;
}

function missingOperations(store: S3rverStore, root: string) {
  const uploadsDir = (bucket: string) => path.join(root, bucket, '._S3rver_uploads');
  const xml = (ctx: KoaContext, body: string) => {
    ctx.status = 200;
    ctx.type = 'application/xml';
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
  };
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const noSuchUpload = (ctx: KoaContext) => {
    ctx.status = 404;
    ctx.type = 'application/xml';
    ctx.body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchUpload</Code><Message>no such upload</Message></Error>';
  };

  return async (ctx: KoaContext, next: () => Promise<void>) => {
    const [bucket, ...keyParts] = ctx.path.replace(/^\//, '').split('/').map(decodeURIComponent);
    const key = keyParts.join('/');
    if (!bucket) return next();

    if (ctx.method === 'GET' && !key && 'uploads' in ctx.query) {
      const prefix = ctx.query.prefix ?? '';
      const entries = await fsp.readdir(uploadsDir(bucket)).catch(() => [] as string[]);
      let items = '';
      for (const id of entries) {
        const d = path.join(uploadsDir(bucket), id);
        const k = await fsp.readFile(path.join(d, 'key'), 'utf8').catch(() => undefined);
        const st = await fsp.stat(d).catch(() => undefined);
        if (k === undefined || !st || !k.startsWith(prefix)) continue;
        items += `<Upload><Key>${esc(k)}</Key><UploadId>${id}</UploadId><Initiated>${st.birthtime.getTime() > 0 ? st.birthtime.toISOString() : st.mtime.toISOString()}</Initiated></Upload>`;
      }
      xml(ctx, `<ListMultipartUploadsResult><Bucket>${esc(bucket)}</Bucket><IsTruncated>false</IsTruncated>${items}</ListMultipartUploadsResult>`);
      return;
    }

    const uploadId = ctx.query.uploadId;
    if (ctx.method === 'DELETE' && key && uploadId) {
      const d = path.join(uploadsDir(bucket), path.basename(uploadId));
      if (!fs.existsSync(d)) return noSuchUpload(ctx);
      await fsp.rm(d, { recursive: true, force: true });
      ctx.status = 204;
      ctx.body = null;
      return;
    }

    const copySource = ctx.headers['x-amz-copy-source'];
    if (ctx.method === 'PUT' && key && uploadId && ctx.query.partNumber && copySource) {
      if (!fs.existsSync(path.join(uploadsDir(bucket), path.basename(uploadId)))) return noSuchUpload(ctx);
      const src = decodeURIComponent(copySource.split('?')[0]!).replace(/^\//, '');
      const i = src.indexOf('/');
      const m = /^bytes=(\d+)-(\d+)$/.exec(ctx.headers['x-amz-copy-source-range'] ?? '');
      const object = await store.getObject(src.slice(0, i), src.slice(i + 1), m ? { start: Number(m[1]), end: Number(m[2]) } : undefined);
      if (!object?.content) {
        ctx.status = 404;
        ctx.type = 'application/xml';
        ctx.body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchKey</Code><Message>no such key</Message></Error>';
        return;
      }
      const { md5 } = await store.putPart(bucket, path.basename(uploadId), ctx.query.partNumber, object.content);
      xml(ctx, `<CopyPartResult><ETag>"${md5}"</ETag><LastModified>${new Date().toISOString()}</LastModified></CopyPartResult>`);
      return;
    }
    return next();
  };
}
