import type { Request } from 'express';
import busboy from 'busboy';
import type { ContentService, IngestedContent } from '../../domain/content/content.service';
import type { ContentDigest, ParsedHash } from '../../domain/content/hashing';
import { parseHash } from '../../domain/content/hashing';
import { DomainError } from '../../domain/errors';

export interface ParsedUpload {
  /** Text fields; repeated names keep every value in order. */
  fields: Map<string, string[]>;
  fileName?: string;
  /** The file part's own Content-Type header. */
  fileContentType?: string;
  /** Bytes written to a temporary blob (the usual case). */
  ingested?: IngestedContent;
  /** Hash-only read of a file whose content the `hash` field said is already stored (fast path). */
  discardedDigest?: ContentDigest;
  /** The `hash` field, when it came before the file. */
  declaredHash?: ParsedHash;
}

const FIELD_LIMIT = 1024 * 1024;

/**
 * Streams a multipart upload: the `file` part goes straight into the content ingest (hashed and written as it
 * arrives), other parts are collected as text. When a `hash` field naming stored content precedes the file, the file
 * is only hashed (to check it), never written. On any failure every temporary is removed before this rejects.
 */
export function parseMultipartUpload(
  req: Request,
  content: ContentService,
  opts: { maxBytes: number; contentExists: (h: ParsedHash) => Promise<boolean> },
): Promise<ParsedUpload> {
  return new Promise((resolve, reject) => {
    const result: ParsedUpload = { fields: new Map() };
    let bb: busboy.Busboy;
    try {
      bb = busboy({
        headers: req.headers,
        limits: { fieldSize: FIELD_LIMIT, fields: 200, files: 1, parts: 300, headerPairs: 100 },
        preservePath: false,
        defParamCharset: 'utf8',
      });
    } catch (err) {
      reject(new DomainError('INVALID_BODY', `malformed multipart request: ${(err as Error).message}`));
      return;
    }
    let filePromise: Promise<void> | undefined;
    let fileStream: NodeJS.ReadableStream & { destroy(err?: Error): void } | undefined;
    let failed: DomainError | undefined;
    let done = false;

    const fail = (err: unknown) => {
      if (done) return;
      done = true;
      failed = err instanceof DomainError ? err : new DomainError('INVALID_BODY', `malformed multipart request: ${(err as Error).message}`);
      req.unpipe(bb);
      // A file still streaming would wait forever for bytes that will not come: end it with the error.
      fileStream?.destroy(failed);
      // Wait for the file ingest to clean up its temporary before answering.
      void Promise.resolve(filePromise)
        .catch(() => undefined)
        .then(async () => {
          if (result.ingested) await content.discard(result.ingested);
          reject(failed);
        });
    };

    bb.on('field', (name, value, info) => {
      if (done) return;
      if (info.valueTruncated) {
        fail(new DomainError('PAYLOAD_TOO_LARGE', `the field ${name} is larger than ${FIELD_LIMIT} bytes`));
        return;
      }
      if (name === 'hash' && !filePromise) result.declaredHash = parseHash(value.trim()) ?? result.declaredHash;
      const list = result.fields.get(name) ?? [];
      list.push(value);
      result.fields.set(name, list);
    });

    bb.on('file', (name, stream, info) => {
      // Errors reach the ingest through its async iterator; this listener only keeps a late one from being unhandled.
      stream.on('error', () => undefined);
      if (done || name !== 'file' || filePromise) {
        stream.resume();
        if (name === 'file') fail(new DomainError('INVALID_BODY', 'send exactly one file part'));
        return;
      }
      fileStream = stream;
      result.fileName = info.filename ? sanitizeFileName(info.filename) : undefined;
      result.fileContentType = info.mimeType;
      filePromise = (async () => {
        const hash = result.declaredHash;
        if (hash && (await opts.contentExists(hash))) {
          result.discardedDigest = await content.digestOnly(stream, { maxBytes: opts.maxBytes });
        } else {
          result.ingested = await content.ingest(stream, { maxBytes: opts.maxBytes });
        }
      })();
      filePromise.catch((err) => {
        stream.resume();
        fail(err);
      });
    });

    bb.on('filesLimit', () => fail(new DomainError('INVALID_BODY', 'send exactly one file part')));
    bb.on('partsLimit', () => fail(new DomainError('INVALID_BODY', 'too many parts')));
    bb.on('fieldsLimit', () => fail(new DomainError('INVALID_BODY', 'too many fields')));
    bb.on('error', (err) => fail(err));
    bb.on('close', () => {
      if (done) return;
      void Promise.resolve(filePromise).then(
        () => {
          if (done) {
            if (result.ingested) void content.discard(result.ingested);
            return;
          }
          done = true;
          resolve(result);
        },
        (err) => fail(err),
      );
    });
    req.on('close', () => {
      if (!req.complete) fail(new DomainError('INVALID_BODY', 'the client aborted the upload'));
    });
    req.on('error', (err) => fail(err));
    req.pipe(bb);
  });
}

/** The last path segment of a client file name, without control characters. */
export function sanitizeFileName(name: string): string | undefined {
  const base = name.split(/[\\/]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
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
