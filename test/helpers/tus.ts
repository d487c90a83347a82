import net from 'node:net';
import http from 'node:http';
import * as tus from 'tus-js-client';
import { KEYS } from './harness';

/**
 * A TCP proxy in front of the service that cuts the first `cuts` connections carrying more than `afterBytes` bytes
 * from the client (both sockets destroyed mid-request): a dropped connection.
 */
export async function startCuttingProxy(
  target: string,
  opts: { afterBytes: number; cuts?: number },
): Promise<{ url: string; cutsDone(): number; stop(): Promise<void> }> {
  const t = new URL(target);
  let cutsLeft = opts.cuts ?? 1;
  let cutsDone = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(t.port), t.hostname);
    sockets.add(client).add(upstream);
    let sent = 0;
    let cut = false;
    client.on('data', (d: Buffer) => {
      if (cut) return;
      sent += d.length;
      if (cutsLeft > 0 && sent > opts.afterBytes) {
        cut = true;
        cutsLeft--;
        cutsDone++;
        // Forward what fits under the limit, then drop both sides.
        upstream.write(d.subarray(0, d.length - (sent - opts.afterBytes)), () => {
          client.destroy();
          upstream.destroy();
        });
        return;
      }
      upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => client.write(d));
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    cutsDone: () => cutsDone,
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface TusResult {
  url: string;
}

/** Uploads `data` with tus-js-client; resolves with the upload URL once the last byte was acknowledged. */
export function tusUpload(
  endpoint: string,
  data: Buffer,
  opts: {
    key?: string;
    metadata?: Record<string, string>;
    chunkSize?: number;
    uploadUrl?: string;
    retryDelays?: number[];
    overridePatchMethod?: boolean;
    onUrl?: (url: string) => void;
    onChunkComplete?: (accepted: number) => void;
  } = {},
): Promise<TusResult> {
  return new Promise((resolve, reject) => {
    const upload = new tus.Upload(data, {
      endpoint: `${endpoint}/api/uploads`,
      uploadUrl: opts.uploadUrl,
      headers: { 'X-API-Key': opts.key ?? KEYS.alice },
      metadata: opts.metadata ?? {},
      chunkSize: opts.chunkSize ?? Infinity,
      retryDelays: opts.retryDelays ?? [0, 200, 500],
      storeFingerprintForResuming: false,
      overridePatchMethod: opts.overridePatchMethod ?? false,
      onUploadUrlAvailable: () => opts.onUrl?.(upload.url!),
      onChunkComplete: (_size, accepted) => opts.onChunkComplete?.(accepted),
      onError: reject,
      onSuccess: () => resolve({ url: upload.url! }),
    });
    upload.start();
  });
}

/**
 * Uploads `data` in 1 MiB chunks without retries and calls `kill` (SIGKILL of the serving process) once `killAt`
 * bytes are acknowledged; the upload then fails. Resolves with the upload's URL and the last acknowledged offset.
 */
export async function tusUploadUntilKilled(
  endpoint: string,
  data: Buffer,
  killAt: number,
  kill: () => Promise<void>,
): Promise<{ url: string; acknowledged: number }> {
  let url = '';
  let acknowledged = 0;
  let killed: Promise<void> | undefined;
  const upload = tusUpload(endpoint, data, {
    chunkSize: 1024 * 1024,
    retryDelays: [],
    onUrl: (u) => (url = u),
    onChunkComplete: (accepted) => {
      acknowledged = accepted;
      if (accepted >= killAt && !killed) killed = kill();
    },
  });
  await upload.then(
    () => {
      throw new Error('the upload finished before the process was killed');
    },
    () => undefined,
  );
  await killed;
  return { url, acknowledged };
}

/** The base64 Upload-Metadata header of `meta`. */
export const tusMetadata = (meta: Record<string, string>): string =>
  Object.entries(meta)
    .map(([k, v]) => `${k} ${Buffer.from(v).toString('base64')}`)
    .join(',');

export const TUS = { 'Tus-Resumable': '1.0.0' } as const;

/**
 * A PATCH sent by hand: its head announces `length` bytes from `offset`, and the caller writes the body with `req`
 * (part of it, then stalls, ends or cuts it): a client that stops or is cut mid-body. `answer` is the service's.
 */
export function handPatch(
  baseUrl: string,
  id: string,
  opts: { offset: number; length: number; key?: string },
): { req: http.ClientRequest; answer: Promise<{ status: number; headers: http.IncomingHttpHeaders }> } {
  const req = http.request(`${baseUrl}/api/uploads/${id}`, {
    method: 'PATCH',
    headers: {
      ...TUS,
      'x-api-key': opts.key ?? KEYS.alice,
      'Upload-Offset': String(opts.offset),
      'Content-Type': 'application/offset+octet-stream',
      'Content-Length': String(opts.length),
    },
  });
  const answer = new Promise<{ status: number; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode!, headers: res.headers });
    });
    req.on('error', reject);
  });
  answer.catch(() => undefined); // awaited by the test; not an unhandled rejection meanwhile
  return { req, answer };
}
