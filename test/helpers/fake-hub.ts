import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeHub {
  url: string;
  /** Source URL of a file served by the hub. */
  fileUrl(name: string): string;
  /**
   * Sets a file: `linked` makes HEAD state its SHA-256 (X-Linked-Etag) like Hugging Face does for LFS files;
   * `getStatus` makes its GET (not its HEAD) answer that status instead (a download that fails after its probe).
   */
  set(name: string, body: Buffer, opts?: { linked?: boolean; getStatus?: number }): void;
  /** A file whose GET sends its first bytes and then waits until `release()` or close. */
  hold(name: string, size: number): void;
  release(): void;
  close(): Promise<void>;
}

/** A minimal Hugging Face stand-in on 127.0.0.1 (HF_ENDPOINT) serving `/org/repo/resolve/main/<name>`. */
export async function startFakeHub(): Promise<FakeHub> {
  const files = new Map<string, { body: Buffer; linked: boolean; getStatus?: number }>();
  const held = new Map<string, number>();
  const waiting = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const name = /^\/org\/repo\/resolve\/main\/(.+)$/.exec(new URL(req.url!, 'http://x').pathname)?.[1];
    const holdSize = name ? held.get(name) : undefined;
    if (name && holdSize !== undefined) {
      res.writeHead(200, { 'content-length': String(holdSize), 'content-type': 'application/octet-stream' });
      if (req.method === 'HEAD') return void res.end();
      res.write(Buffer.alloc(Math.min(1024, holdSize)));
      waiting.add(res);
      return;
    }
    const f = name ? files.get(name) : undefined;
    if (!f) return void res.writeHead(404).end('not found');
    if (f.getStatus && req.method !== 'HEAD') return void res.writeHead(f.getStatus).end('refused');
    const headers: Record<string, string> = {
      'content-length': String(f.body.length),
      'content-type': 'application/octet-stream',
    };
    if (f.linked) {
      headers['x-linked-etag'] = `"${crypto.createHash('sha256').update(f.body).digest('hex')}"`;
      headers['x-linked-size'] = String(f.body.length);
    }
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : f.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const release = () => {
    for (const res of waiting) res.destroy();
    waiting.clear();
  };
  return {
    url,
    fileUrl: (name) => `${url}/org/repo/resolve/main/${name}`,
    set: (name, body, opts = {}) => void files.set(name, { body, linked: !!opts.linked, getStatus: opts.getStatus }),
    hold: (name, size) => void held.set(name, size),
    release,
    close: async () => {
      release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
