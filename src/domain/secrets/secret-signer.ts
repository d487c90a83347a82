import crypto from 'node:crypto';
import type { ServerSecretRepository } from './server-secret.repository';

/**
 * HMAC-SHA-256 signatures (base64url) with one named server secret, shared by every instance: signed export URLs,
 * media read grants. The secret is read once per process, and again after a failed read.
 */
export class SecretSigner {
  private secret: Promise<string> | undefined;
  private loaded: string | undefined;

  constructor(
    private readonly secrets: ServerSecretRepository,
    private readonly name: string,
  ) {}

  async sign(text: string): Promise<string> {
    return this.signNow(text, await this.load());
  }

  /** Reads the secret (once); after it, `signNow` signs without waiting. */
  async load(): Promise<string> {
    if (this.loaded !== undefined) return this.loaded;
    this.secret ??= this.secrets.secret(this.name);
    this.loaded = await this.secret.catch((err: unknown) => {
      this.secret = undefined;
      throw err;
    });
    return this.loaded;
  }

  /** The signature, once `load` has read the secret (signing paths that run on every request cannot wait). */
  signNow(text: string, key = this.loaded): string {
    if (key === undefined) throw new Error(`the secret ${this.name} is not loaded`);
    return crypto.createHmac('sha256', key).update(text).digest('base64url');
  }
}
