import type { StorageConfig } from '../../config';

/** Placeholder until the S3 backend lands (scale-out issue). */
export class S3BlobStore {
  constructor(config: Extract<StorageConfig, { backend: 's3' }>) {
    void config;
    throw new Error('STORAGE_BACKEND=s3 is not available in this build yet');
  }
}
