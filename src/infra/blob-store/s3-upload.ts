import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';

/** S3's limit of parts in one multipart upload. */
const MAX_PARTS = 10_000;

export interface StreamUploadOptions {
  partSize: number;
  /** Parts uploaded in parallel. */
  queueSize: number;
}

/**
 * One object written from a stream: a PutObject when the bytes fit in one part, else a multipart upload with
 * `queueSize` parts in flight. The bytes are copied into part buffers of `partSize`, at most `queueSize + 1` of them,
 * reused from one part to the next: lib-storage's `Upload` joined the received chunks into a new buffer per part, a
 * GiB of garbage per GiB uploaded on top of the chunks themselves, which V8 frees only by marking the whole heap.
 *
 * On failure `run` rejects once no part is in flight any more; the caller aborts the upload (`uploadId`).
 */
export class StreamUpload {
  uploadId: string | undefined;
  /** Bytes read from the source so far. */
  size = 0;
  private readonly free: Buffer[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly etags: string[] = [];
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly key: string,
    private readonly o: StreamUploadOptions,
  ) {}

  async run(source: AsyncIterable<Buffer>): Promise<void> {
    const { partSize } = this.o;
    let part = this.take();
    let filled = 0;
    let parts = 0;
    try {
      for await (const chunk of source) {
        let at = 0;
        while (at < chunk.length) {
          if (filled === partSize) {
            // A full part goes only once more bytes follow: a body of one part or less is one PutObject.
            await this.send(++parts, part, partSize);
            part = this.take();
            filled = 0;
          }
          const n = Math.min(chunk.length - at, partSize - filled);
          chunk.copy(part, filled, at, at + n);
          filled += n;
          at += n;
        }
        this.size += chunk.length;
      }
      if (parts === 0) {
        await this.client.send(
          new PutObjectCommand({ Bucket: this.bucket, Key: this.key, Body: part.subarray(0, filled) }),
        );
        this.free.push(part);
        return;
      }
      await this.send(++parts, part, filled);
      await this.settled();
      this.throwIfFailed();
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: this.key,
          UploadId: this.uploadId,
          MultipartUpload: { Parts: this.etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        }),
      );
    } catch (err) {
      await this.settled();
      throw err;
    }
  }

  /** A buffer for the next part: one whose part was stored, else a new one. */
  private take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.o.partSize);
  }

  /** Starts uploading part `n` once fewer than `queueSize` are in flight; throws when an earlier part failed. */
  private async send(n: number, buf: Buffer, length: number): Promise<void> {
    if (n > MAX_PARTS) throw new Error(`more than ${MAX_PARTS} parts in a multipart upload to ${this.key}`);
    this.throwIfFailed();
    if (this.uploadId === undefined) {
      const res = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: this.key }));
      this.uploadId = res.UploadId;
    }
    while (this.inFlight.size >= this.o.queueSize) {
      await Promise.race(this.inFlight);
      this.throwIfFailed();
    }
    const p = this.client
      .send(
        new UploadPartCommand({
          Bucket: this.bucket,
          Key: this.key,
          UploadId: this.uploadId,
          PartNumber: n,
          Body: length === buf.length ? buf : buf.subarray(0, length),
        }),
      )
      .then(
        (res) => {
          this.etags[n - 1] = res.ETag!;
          // Reused only after the store answered it: the socket has taken every byte by then.
          this.free.push(buf);
        },
        (error: unknown) => {
          // A failed part's buffer is not reused: a write of it may still be pending on a socket being torn down.
          this.failure ??= { error };
        },
      )
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }

  private async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.race(this.inFlight);
  }
}
