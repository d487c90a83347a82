import crypto from 'node:crypto';
import { lruByCount } from '../../infra/lru';
import { DomainError } from '../errors';
import { SecretSigner } from './secret-signer';
import type { ServerSecretRepository } from './server-secret.repository';

/** Grants live one to two windows of this many seconds: at least an hour after the answer that carries one. */
export const GRANT_WINDOW_SECONDS = 3600;
/** The grants' HMAC key (its name predates media grants: the asset browser's thumbnail grants were the first). */
const GRANT_SECRET = 'thumbnail_access_hmac';
/** Verified grants remembered per instance (their HMAC checked once; the expiry still on every request). */
const KNOWN_GRANTS = 1024;
/** Owners whose current grant is kept minted per instance. */
const MINTED_OWNERS = 4096;

export interface ReadGrant {
  token: string;
  expiresAt: Date;
}

/**
 * Read grants (`?access=<token>` on a media URL): what lets a browser's `<img src>`, `<video>` or `<a download>` on
 * any origin load an asset's content or thumbnail, as it cannot send the key header and the key must never be in a
 * URL. A token names an owner and an expiry, HMAC-signed with a secret the service keeps in its database (shared by
 * every instance); it carries no key, so it keeps working after the key that asked for it is revoked, until it
 * expires. It authorises GET and HEAD of that owner's content and thumbnails only (the routes of
 * `http/rest/granted.router.ts`); every other route ignores it and asks for the key.
 *
 * The expiry is the end of the window after the current one: every grant of a window is the same token, so media
 * URLs (and a browser's cache of them, and the service's cached list pages) stay the same for an hour, and each
 * lives one to two hours. A page cached with one window's token is made again in the next (the token is in its key).
 */
export class ReadGrants {
  private readonly signer: SecretSigner;
  private readonly known = lruByCount<string, { ownerId: string; expires: number }>(KNOWN_GRANTS);
  /** This window's grant per owner (every authenticated request reads it). */
  private readonly minted = lruByCount<string, { window: number; grant: ReadGrant }>(MINTED_OWNERS);

  constructor(secrets: ServerSecretRepository) {
    this.signer = new SecretSigner(secrets, GRANT_SECRET);
  }

  /** Reads the secret: called at start, so minting on the request path never waits for the database. */
  async load(): Promise<void> {
    await this.signer.load();
  }

  /** This owner's grant of the current window (the same token all window long). */
  mint(ownerId: string, now = Date.now()): ReadGrant {
    const window = Math.floor(now / 1000 / GRANT_WINDOW_SECONDS);
    const kept = this.minted.get(ownerId);
    if (kept && kept.window === window) return kept.grant;
    const grant = this.sign(ownerId, (window + 2) * GRANT_WINDOW_SECONDS);
    this.minted.set(ownerId, { window, grant });
    return grant;
  }

  /** A grant of this owner ending at `expires` (seconds since the epoch): `mint`'s, and tests' expired ones. */
  sign(ownerId: string, expires: number): ReadGrant {
    const owner = Buffer.from(ownerId).toString('base64url');
    return {
      token: `${expires}.${owner}.${this.signer.signNow(`${owner}\n${expires}`)}`,
      expiresAt: new Date(expires * 1000),
    };
  }

  /**
   * The owner a grant names; UNAUTHORIZED (a bad credential, as a bad key is: contract 3.7) when it is malformed, not
   * signed by us (a rotated secret's included), or expired. A grant's signature is checked once per instance (a page
   * of thumbnails all carry the same grant); its expiry every time.
   */
  async ownerOf(token: string): Promise<string> {
    let grant = this.known.get(token);
    if (!grant) {
      const m = /^(\d{1,12})\.([\w-]{1,1024})\.([\w-]{43})$/.exec(token);
      const expected = m ? this.signer.signNow(`${m[2]}\n${m[1]}`, await this.signer.load()) : '';
      if (!m || !crypto.timingSafeEqual(Buffer.from(m[3]!), Buffer.from(expected)))
        throw new DomainError('UNAUTHORIZED', 'this access grant is not valid');
      grant = { ownerId: Buffer.from(m[2]!, 'base64url').toString(), expires: Number(m[1]) * 1000 };
      this.known.set(token, grant);
    }
    if (grant.expires <= Date.now())
      throw new DomainError('UNAUTHORIZED', 'this access grant has expired; read the asset again for fresh URLs');
    return grant.ownerId;
  }
}
