import type { Readable } from 'node:stream';
import { Busboy, type BusboyHeaders, type BusboyInstance } from '@fastify/busboy';
import type { Request } from 'express';
import type { ReceivedFile } from '../../domain/assets/asset.service';
import { DomainError } from '../../domain/errors';
import { assertStorableText } from '../../domain/input';
import { chunksOf, FILE_PART_BUFFER } from '../shared/body-stream';

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
/** Parts and text fields a request may have, and the header block of one part (lines, bytes). */
const LIMITS = { parts: 300, fields: 200, headerPairs: 100, headerSize: 16 * 1024 };

/**
 * Streams a multipart upload through @fastify/busboy: the `file` part goes straight to the domain as it arrives
 * (`receiveFile`, with the `hash` field if one came before it: the domain decides whether the bytes are stored or
 * only hashed), the socket paused by the pipe's backpressure while the ingest is behind; other parts are collected as
 * text. Exactly one file part is accepted; a first file part with another name is skipped. On any failure every
 * temporary is removed before this rejects.
 *
 * busboy replaced a parser of our own: in the same run of `npm run bench -- hashing` the two ingest 1 GiB at the same
 * speed (1.014 single stream, 0.988 with four) for the same CPU (BENCHMARKS.md, "multipart parser").
 */
export function parseMultipartUpload(req: Request, receiver: FileReceiver): Promise<ParsedUpload> {
  return new Promise((resolve, reject) => {
    const result: ParsedUpload = { fields: new Map() };
    let parser: BusboyInstance;
    try {
      parser = new Busboy({
        headers: req.headers as BusboyHeaders,
        // The name as the client sent it (busboy would keep only its last path segment); the domain checks it.
        preservePath: true,
        // What busboy buffers before it stops reading the socket, beside what the queue below holds.
        fileHwm: FILE_PART_BUFFER,
        limits: {
          fieldSize: FIELD_LIMIT,
          parts: LIMITS.parts,
          fields: LIMITS.fields,
          headerPairs: LIMITS.headerPairs,
          headerSize: LIMITS.headerSize,
        },
        // The part named `file` is the file with or without `filename=` (RFC 7578 makes it optional).
        isPartAFile: (name, _type, filename) => filename !== undefined || name === 'file',
      });
    } catch (err) {
      reject(new DomainError('INVALID_BODY', `malformed multipart request: ${(err as Error).message}`));
      return;
    }
    let filePromise: Promise<void> | undefined;
    let fileStream: Readable | undefined;
    let declaredHash: string | undefined;
    let done = false;
    let files = 0;
    // What busboy reports on the file's stream (a body that ends inside the part) comes back through the ingest.
    const parseErrors = new WeakSet<Error>();

    const fail = (err: unknown) => {
      if (done) return;
      done = true;
      const failed = err instanceof Error && parseErrors.has(err) ? malformed(err) : err;
      req.unpipe(parser);
      req.pause();
      // A file still streaming would wait forever for bytes that will not come: end it with the error.
      fileStream?.destroy(failed as Error);
      // Wait for the file ingest to clean up its temporary before answering.
      void Promise.resolve(filePromise)
        .catch(() => undefined)
        .then(async () => {
          await receiver.discardFile(result.file);
          reject(failed);
        });
    };

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

    parser.on('field', (name: string, value: string, _nameTruncated: boolean, valueTruncated: boolean) => {
      if (done) return;
      try {
        if (valueTruncated)
          throw new DomainError('PAYLOAD_TOO_LARGE', `the field ${name} is larger than ${FIELD_LIMIT} bytes`);
        addField(name, value);
      } catch (err) {
        fail(err);
      }
    });
    parser.on('file', (name: string, stream: Readable, filename: string | undefined) => {
      if (done || ++files > 1 || name !== 'file') {
        stream.resume();
        if (files > 1) fail(new DomainError('INVALID_BODY', 'send exactly one file part'));
        return;
      }
      fileStream = stream;
      result.fileName = filename || undefined;
      stream.on('error', (err) => parseErrors.add(err));
      const queue = chunksOf(stream, FILE_PART_BUFFER);
      filePromise = (async () => {
        result.file = await receiver.receiveFile(queue, declaredHash);
      })();
      filePromise.catch(fail);
    });
    parser.on('partsLimit', () => fail(new DomainError('INVALID_BODY', 'too many parts')));
    parser.on('fieldsLimit', () => fail(new DomainError('INVALID_BODY', 'too many fields')));
    parser.on('error', (err: Error) => fail(malformed(err)));
    parser.on('finish', () => {
      if (done) return;
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
    req.pipe(parser);
  });
}

const malformed = (err: Error) => new DomainError('INVALID_BODY', `malformed multipart request: ${err.message}`);
