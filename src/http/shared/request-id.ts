import crypto from 'node:crypto';

/** The request id: the client's `X-Request-Id` when it is a sane token, else a new UUID. */
export function requestIdFrom(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && /^[\w.-]{1,128}$/.test(incoming) ? incoming : crypto.randomUUID();
}
