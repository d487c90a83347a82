import type { Readable } from 'node:stream';
import { DataStore, Upload } from '@tus/server';
import type { Principal } from '../../domain/assets/asset.types';
import { DomainError } from '../../domain/errors';
import type { UploadService } from '../../domain/uploads/upload.service';
import { requestBody, requestContext } from './request-context';

const noop = (): void => undefined;

/** The tus data store: the protocol's storage calls, answered by UploadService (PostgreSQL + the blob store). */
export class UploadDataStore extends DataStore {
  /** The owner of an upload being created, set by onUploadCreate (it sees the request; `create` does not). */
  readonly owners = new WeakMap<Upload, Principal>();

  constructor(private readonly uploads: UploadService) {
    super();
    this.extensions = ['creation', 'creation-with-upload', 'termination', 'expiration'];
  }

  override async create(upload: Upload): Promise<Upload> {
    const principal = this.owners.get(upload);
    if (!principal) throw new Error('upload created without an owner');
    const rec = await this.uploads.create(principal, upload.id, upload.size!, upload.metadata ?? {});
    const ctx = requestContext.getStore();
    if (ctx) ctx.created = upload.id;
    upload.creation_date = rec.createdAt.toISOString();
    return upload;
  }

  override async getUpload(id: string): Promise<Upload> {
    const ctx = requestContext.getStore();
    const held = ctx?.lease?.record.id === id ? ctx.lease.record : undefined;
    const rec = held ?? (await this.uploads.find(ctx?.principal, id));
    if (!rec) throw new DomainError('NOT_FOUND', `upload ${id} not found`);
    // No metadata: no Upload-Metadata header on HEAD (tus would answer an empty one, which is not valid tus metadata).
    const metadata = Object.keys(rec.metadata).length > 0 ? rec.metadata : undefined;
    return new Upload({
      id,
      size: rec.length,
      offset: rec.offset,
      metadata,
      creation_date: rec.createdAt.toISOString(),
    });
  }

  override async write(stream: Readable, id: string, offset: number): Promise<number> {
    // `stream` is empty when the router kept the body for us (see DirectBody).
    const ctx = requestContext.getStore();
    const written = this.uploads.append(id, offset, ctx?.body ? requestBody(ctx.body) : stream, ctx?.lease);
    if (ctx) ctx.writing = written.then(noop, noop);
    return written;
  }

  override async remove(id: string): Promise<void> {
    await this.uploads.remove(undefined, id);
  }

  override getExpiration(): number {
    return this.uploads.expiryMs;
  }

  override async deleteExpired(): Promise<number> {
    return this.uploads.sweepExpired();
  }
}
