import type { Request } from 'express';
import type { ReceivedFile } from '../../domain/assets/asset.service';
import { DomainError } from '../../domain/errors';
import { assertStorableText } from '../../domain/input';
import { boundaryOf, MultipartError, MultipartParser, type PartInfo } from './multipart-parser';

export interface ParsedUpload {
  /** Text fields; repeated names keep every value in order. */
  fields: Map<string, string[]>;
  /** The file part's `filename`, as sent. */
  fileName?: string;
  /** The file part, as the domain received it (AssetService.receiveFile). */
  file?: ReceivedFile;
}

/** Where the file part's bytes go: AssetService's receiveFile and discardFile. */
export interface FileReceiver {
  receiveFile(bytes: AsyncIterable<Buffer>, declaredHash: string | undefined): Promise<ReceivedFile>;
  discardFile(file: ReceivedFile | undefined): Promise<void>;
}

const FIELD_LIMIT = 1024 * 1024;
const LIMITS = { parts: 300, fields: 200 };
/** File bytes received but not yet taken by the ingest before the socket is paused (resumed below half of it). */
const FILE_BUFFER = 2 * 1024 * 1024;

/**
 * Streams a multipart upload: the `file` part goes straight to the domain as it arrives (`receiveFile`, with the
 * `hash` field if one came before it: the domain decides whether the bytes are stored or only hashed), the socket
 * paused while it is behind; other parts are collected as text. Exactly one file part is accepted; a first file part
 * with another name is skipped. On any failure every temporary is removed before this rejects.
 */
export function parseMultipartUpload(req: Request, receiver: FileReceiver): Promise<ParsedUpload> {
  return new Promise((resolve, reject) => {
    const result: ParsedUpload = { fields: new Map() };
    let boundary: string;
    try {
      boundary = boundaryOf(req.headers['content-type']);
    } catch (err) {
      reject(new DomainError('INVALID_BODY', `malformed multipart request: ${(err as Error).message}`));
      return;
    }
    let filePromise: Promise<void> | undefined;
    let declaredHash: string | undefined;
    let fileQueue: ChunkQueue | undefined;
    let done = false;
    let parts = 0;
    let fields = 0;
    let files = 0;
    let current:
      { kind: 'field'; name: string; chunks: Buffer[]; size: number } | { kind: 'file' | 'skip' } | undefined;

    const fail = (err: unknown) => {
      if (done) return;
      done = true;
      const failed = asUploadError(err);
      req.off('data', onData);
      req.pause();
      // A file still streaming would wait forever for bytes that will not come: end it with the error.
      fileQueue?.destroy(failed);
      // Wait for the file ingest to clean up its temporary before answering.
      void Promise.resolve(filePromise)
        .catch(() => undefined)
        .then(async () => {
          await receiver.discardFile(result.file);
          reject(failed);
        });
    };

    const startFile = (part: PartInfo) => {
      const queue = new ChunkQueue(
        FILE_BUFFER,
        () => req.pause(),
        () => done || req.resume(),
      );
      fileQueue = queue;
      result.fileName = part.filename || undefined;
      filePromise = (async () => {
        result.file = await receiver.receiveFile(queue, declaredHash);
      })();
      filePromise.catch(fail);
    };

    const parser = new MultipartParser(boundary, {
      partBegin: (part) => {
        if (++parts > LIMITS.parts) throw new DomainError('INVALID_BODY', 'too many parts');
        // The part named `file` is the file with or without `filename=` (RFC 7578 makes it optional).
        if (part.filename === undefined && part.name !== 'file') {
          if (++fields > LIMITS.fields) throw new DomainError('INVALID_BODY', 'too many fields');
          current = { kind: 'field', name: part.name, chunks: [], size: 0 };
        } else if (++files > 1) {
          throw new DomainError('INVALID_BODY', 'send exactly one file part');
        } else if (part.name === 'file') {
          current = { kind: 'file' };
          startFile(part);
        } else {
          current = { kind: 'skip' };
        }
      },
      partData: (data) => {
        if (current?.kind === 'file') {
          fileQueue!.push(data);
        } else if (current?.kind === 'field') {
          current.size += data.length;
          if (current.size > FIELD_LIMIT) {
            throw new DomainError('PAYLOAD_TOO_LARGE', `the field ${current.name} is larger than ${FIELD_LIMIT} bytes`);
          }
          // A copy: the file's chunks are moved to the ingest worker (detached), and a field may share one with it.
          current.chunks.push(Buffer.from(data));
        }
      },
      partEnd: () => {
        if (current?.kind === 'file') fileQueue!.end();
        else if (current?.kind === 'field') addField(current.name, Buffer.concat(current.chunks).toString('utf8'));
        current = undefined;
      },
    });

    const addField = (name: string, value: string) => {
      // Refused here, before the file is stored: every text field obeys the contract's text rules.
      assertStorableText(name, 'a multipart field name');
      assertStorableText(value, name);
      // Only a hash before the file can spare storing it; a hash after it is checked against the bytes.
      if (name === 'hash' && !filePromise && value.trim() !== '') declaredHash = value.trim();
      const list = result.fields.get(name) ?? [];
      list.push(value);
      result.fields.set(name, list);
    };

    function onData(chunk: Buffer) {
      if (done) return;
      try {
        parser.write(chunk);
      } catch (err) {
        fail(err);
      }
    }

    req.on('data', onData);
    req.on('end', () => {
      if (done) return;
      try {
        parser.end();
      } catch (err) {
        fail(err);
        return;
      }
      void Promise.resolve(filePromise).then(() => {
        if (done) return;
        done = true;
        resolve(result);
      }, fail);
    });
    req.on('close', () => {
      if (!req.complete) fail(new DomainError('INVALID_BODY', 'the client aborted the upload'));
    });
    req.on('error', (err) => fail(new DomainError('INVALID_BODY', `the upload failed: ${err.message}`)));
  });
}

function asUploadError(err: unknown): Error {
  if (err instanceof DomainError) return err;
  if (err instanceof MultipartError)
    return new DomainError('INVALID_BODY', `malformed multipart request: ${err.message}`);
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * The file part's bytes on their way from the socket to the ingest: an async iterable that pauses its producer
 * when `high` bytes wait and resumes it below half of that. Its chunks are the parser's views, not copies.
 */
export class ChunkQueue implements AsyncIterableIterator<Buffer> {
  private chunks: Buffer[] = [];
  private head = 0;
  private bytes = 0;
  private paused = false;
  private ended = false;
  private error: Error | undefined;
  private waiter: { resolve: (r: IteratorResult<Buffer>) => void; reject: (e: Error) => void } | undefined;

  constructor(
    private readonly high: number,
    private readonly pause: () => void,
    private readonly resume: () => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.ended || this.error) return;
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w.resolve({ value: chunk, done: false });
      return;
    }
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    if (!this.paused && this.bytes >= this.high) {
      this.paused = true;
      this.pause();
    }
  }

  end(): void {
    this.ended = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.resolve({ value: undefined, done: true });
  }

  destroy(err: Error): void {
    this.error ??= err;
    this.chunks = [];
    const w = this.waiter;
    this.waiter = undefined;
    w?.reject(err);
  }

  next(): Promise<IteratorResult<Buffer>> {
    if (this.error) return Promise.reject(this.error);
    if (this.head < this.chunks.length) {
      const value = this.chunks[this.head]!;
      this.chunks[this.head++] = EMPTY;
      if (this.head === this.chunks.length) {
        this.chunks = [];
        this.head = 0;
      }
      this.bytes -= value.length;
      if (this.paused && this.bytes <= this.high / 2) {
        this.paused = false;
        this.resume();
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  /** The consumer stopped early (it failed): drop what is queued; the upload's failure path takes over. */
  return(): Promise<IteratorResult<Buffer>> {
    this.ended = true;
    this.chunks = [];
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

const EMPTY = Buffer.alloc(0);
