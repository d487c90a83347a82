import type { Request } from 'express';
import type { ContentService, IngestedContent } from '../../domain/content/content.service';
import type { ContentDigest, ParsedHash } from '../../domain/content/hashing';
import { parseHash } from '../../domain/content/hashing';
import { DomainError } from '../../domain/errors';
import { assertStorableText } from '../../domain/input';
import { boundaryOf, MultipartError, MultipartParser, type PartInfo } from './multipart-parser';

export interface ParsedUpload {
  /** Text fields; repeated names keep every value in order. */
  fields: Map<string, string[]>;
  fileName?: string;
  /** Bytes written to a temporary blob (the usual case). */
  ingested?: IngestedContent;
  /** Hash-only read of a file whose content the `hash` field said is already stored (fast path). */
  discardedDigest?: ContentDigest;
  /** The `hash` field, when it came before the file. */
  declaredHash?: ParsedHash;
}

const FIELD_LIMIT = 1024 * 1024;
const LIMITS = { parts: 300, fields: 200 };
/** File bytes received but not yet taken by the ingest before the socket is paused (resumed below half of it). */
const FILE_BUFFER = 2 * 1024 * 1024;

/**
 * Streams a multipart upload: the `file` part goes straight into the content ingest (hashed and written as it
 * arrives, the socket paused while the ingest is behind), other parts are collected as text. When a `hash` field
 * naming stored content precedes the file, the file is only hashed (to check it), never written. Exactly one file
 * part is accepted; a first file part with another name is skipped. On any failure every temporary is removed
 * before this rejects.
 */
export function parseMultipartUpload(
  req: Request,
  content: ContentService,
  opts: { maxBytes: number; contentExists: (h: ParsedHash) => Promise<boolean> },
): Promise<ParsedUpload> {
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
    let fileQueue: ChunkQueue | undefined;
    let done = false;
    let parts = 0;
    let fields = 0;
    let files = 0;
    let current: { kind: 'field'; name: string; chunks: Buffer[]; size: number } | { kind: 'file' | 'skip' } | undefined;

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
          if (result.ingested) await content.discard(result.ingested);
          reject(failed);
        });
    };

    const startFile = (part: PartInfo) => {
      const queue = new ChunkQueue(FILE_BUFFER, () => req.pause(), () => done || req.resume());
      fileQueue = queue;
      result.fileName = part.filename ? sanitizeFileName(part.filename) : undefined;
      filePromise = (async () => {
        const hash = result.declaredHash;
        if (hash && (await opts.contentExists(hash))) {
          result.discardedDigest = await content.digestOnly(queue, { maxBytes: opts.maxBytes });
        } else {
          result.ingested = await content.ingest(queue, { maxBytes: opts.maxBytes, ownsChunks: true });
        }
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
      if (name === 'hash' && !filePromise) result.declaredHash = parseHash(value.trim()) ?? result.declaredHash;
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
  if (err instanceof MultipartError) return new DomainError('INVALID_BODY', `malformed multipart request: ${err.message}`);
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

/** The last path segment of a client file name, without control characters. */
export function sanitizeFileName(name: string): string | undefined {
  const base = name.split(/[\\/]/).pop() ?? '';
  const clean = base.replace(/[\u0000-\u001f\u007f]/g, '').trim().slice(0, 512);
  return clean === '' || clean === '.' || clean === '..' ? undefined : clean;
}

/** `tags` as a JSON array text, comma-separated text, or repeated fields. */
export function parseTagsField(values: string[] | undefined): unknown {
  if (!values || values.length === 0) return undefined;
  const out: unknown[] = [];
  for (const v of values) {
    const t = v.trim();
    if (t.startsWith('[')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(t);
      } catch {
        throw new DomainError('INVALID_BODY', 'tags is not a valid JSON array', { field: 'tags' });
      }
      if (!Array.isArray(parsed)) throw new DomainError('INVALID_BODY', 'tags must be a list of strings', { field: 'tags' });
      out.push(...parsed);
    } else {
      out.push(...t.split(','));
    }
  }
  return out;
}

export function parseJsonField(values: string[] | undefined, field: string): unknown {
  const v = values?.[values.length - 1];
  if (v === undefined || v.trim() === '') return undefined;
  try {
    return JSON.parse(v);
  } catch {
    throw new DomainError('INVALID_BODY', `${field} is not valid JSON`, { field });
  }
}
