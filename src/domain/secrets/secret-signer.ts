import crypto from 'node:crypto';
import type { ServerSecretRepository } from './server-secret.repository';

/**
 * HMAC-SHA-256 signatures (base64url) with one named server secret, shared by every instance: signed export URLs,
 * thumbnail access grants. The secret is read once per process, and again after a failed read.
 */
export class SecretSigner {
  private secret: Promise<string> | undefined;

  constructor(
    private readonly secrets: ServerSecretRepository,
    private readonly name: string,
  ) {}

  async sign(text: string): Promise<string> {
    this.secret ??= this.secrets.secret(this.name);
    const key = await this.secret.catch((err: unknown) => {
      this.secret = undefined;
      throw err;
    });
    return crypto.createHmac('sha256', key).update(text).digest('base64url');
  }
}
