import { DomainError } from '../errors';
import type { AssetSort } from './asset.types';

/** The sorts that mint cursors: last_access_time changes on every read, so a cursor on it could skip or repeat rows. */
export const CURSOR_SORTS: readonly AssetSort[] = ['name', 'created_at', 'updated_at', 'size'];

/** The boundary row of a page: its sort value (ISO time, byte count or name) and id. */
export interface CursorPosition {
  value: string | number;
  id: string;
}

/**
 * The longest `after` taken (REST and GraphQL), as openapi.yaml states it: every cursor encodeCursor can mint fits.
 * The longest is a name of 512 UTF-16 units (LIMITS.nameLength), each at most 6 bytes of JSON (a control character,
 * escaped), with the sort, order and id around it, in base64url: 4,196 characters.
 */
export const MAX_CURSOR_LENGTH = 4200;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Opaque to clients: base64url of `{s: sort, o: order, v: value, id}`. */
export function encodeCursor(sort: AssetSort, order: 'asc' | 'desc', pos: CursorPosition): string {
  return Buffer.from(JSON.stringify({ s: sort, o: order, v: pos.value, id: pos.id })).toString('base64url');
}

/** The position of a cursor minted for this sort and order; INVALID_CURSOR for anything else. */
export function decodeCursor(cursor: string, sort: AssetSort, order: 'asc' | 'desc'): CursorPosition {
  const bad = (why: string) => new DomainError('INVALID_CURSOR', `after: ${why}`, { parameter: 'after' });
  if (cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw bad('not a cursor of this API');
  let c: { s?: unknown; o?: unknown; v?: unknown; id?: unknown };
  try {
    c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as typeof c;
  } catch {
    throw bad('not a cursor of this API');
  }
  if (c === null || typeof c !== 'object' || typeof c.id !== 'string' || !UUID.test(c.id))
    throw bad('not a cursor of this API');
  if (c.s !== sort || c.o !== order)
    throw bad(`minted for sort=${String(c.s)}&order=${String(c.o)}, not sort=${sort}&order=${order}`);
  if (!CURSOR_SORTS.includes(sort)) throw bad(`${sort} does not page by cursor`);
  const v = c.v;
  const valid =
    sort === 'size'
      ? typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
      : sort === 'name'
        ? typeof v === 'string' && v.length <= 1024 && !v.includes('\u0000')
        : typeof v === 'string' &&
          /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(v) &&
          !Number.isNaN(Date.parse(v));
  if (!valid) throw bad('not a cursor of this API');
  return { value: v as string | number, id: c.id };
}
