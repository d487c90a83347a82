import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';

/** Bytes per socket read, as Node's own default. */
const READ_BYTES = 64 * 1024;

/**
 * The S3 client's agent for plain-HTTP endpoints (an in-cluster Ceph RGW or MinIO): each socket reads into one
 * buffer of its own, reused from read to read (net's documented `onread`), instead of a new 64 KiB ArrayBuffer per
 * read. Serving a GiB from the store otherwise left 16,384 of them as external memory on the request thread, which
 * V8 frees only with full mark-compacts of the whole heap (about 18 per GiB served, `npm run bench -- s3`).
 *
 * Node's HTTP client takes a socket's bytes from its `data` event and parses them at once, copying a body's bytes
 * into buffers of their own (those OwnedBody frees), so the read buffer is free again when `emit` returns; `onread`
 * hands the bytes to a callback instead of that event, which therefore emits them. Only an upgraded connection would
 * keep the bytes (the client's `upgrade` event), and S3 never upgrades. TLS endpoints keep Node's default agent.
 */
export class ReusedReadAgent extends http.Agent {
  override createConnection(
    options: http.ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex {
    const buffer = Buffer.allocUnsafeSlow(READ_BYTES);
    const onread: net.OnReadOpts = {
      buffer,
      callback: (n) => {
        socket.emit('data', buffer.subarray(0, n));
        return true;
      },
    };
    const socket = net.createConnection({ ...(options as net.TcpNetConnectOpts), onread }, callback as () => void);
    return socket;
  }
}
