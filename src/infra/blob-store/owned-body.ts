import { Readable } from 'node:stream';
import type { ByteSink } from './file-body';
import { releaseChunk } from './owned-chunks';

/**
 * A store's body whose chunks belong to it alone (an S3 GetObject body: Node's HTTP parser copies every piece of a
 * response body into a buffer of its own). As a `Readable` it passes the chunks on unchanged. `sendTo` is the way to
 * send it to a socket: each chunk's memory is freed once the socket has taken its bytes (owned-chunks), instead of
 * waiting as external memory for V8's next full mark-compact of the whole heap, dozens of which a GiB used to cost.
 */
export class OwnedBody extends Readable {
  private flowing = false;
  private sending = false;

  constructor(private readonly source: Readable) {
    super({ highWaterMark: 0 });
  }

  override _read(): void {
    if (!this.flowing) {
      this.flowing = true;
      this.source.on('data', (chunk: Buffer) => {
        if (!this.push(chunk)) this.source.pause();
      });
      this.source.once('end', () => this.push(null));
      this.source.once('error', (err) => this.destroy(err));
    }
    this.source.resume();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.source.destroy();
    callback(err);
  }

  /**
   * Writes the body to `out` and ends it; `onChunk` is told each chunk's size as it is written. Rejects when `out`
   * closes first (the client went away) or the source fails; the source is destroyed either way.
   */
  async sendTo(out: ByteSink, onChunk: (bytes: number) => void): Promise<void> {
    if (this.sending || this.flowing) throw new Error('OwnedBody.sendTo: the body is already being read');
    this.sending = true;
    const src = this.source;
    try {
      await new Promise<void>((resolve, reject) => {
        let waiting = false;
        const onDrain = () => {
          waiting = false;
          src.resume();
        };
        const onClose = () => finish(new Error('the response was closed'));
        const finish = (err?: Error) => {
          src.off('data', onData);
          src.off('end', onEnd);
          src.off('error', finish);
          out.off('drain', onDrain);
          out.off('close', onClose);
          if (err) reject(err);
          else resolve();
        };
        const onData = (chunk: Buffer) => {
          onChunk(chunk.length);
          // Freed only once written: a failed write may leave its bytes pending on a socket being torn down.
          const more = out.write(chunk, (err) => {
            if (!err) releaseChunk(chunk);
          });
          if (!more && !waiting) {
            waiting = true;
            src.pause();
            out.once('drain', onDrain);
          }
        };
        const onEnd = () => {
          out.end();
          finish();
        };
        if (out.destroyed) {
          finish(new Error('the response was closed'));
          return;
        }
        src.on('data', onData);
        src.once('end', onEnd);
        src.once('error', finish);
        out.once('close', onClose);
      });
    } finally {
      this.destroy();
    }
  }
}
