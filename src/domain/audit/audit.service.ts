import crypto from 'node:crypto';
import { requireScope, type Principal } from '../auth/scopes';
import { DomainError } from '../errors';
import type { AuditRepository } from './audit.repository';
import type { AuditPage, NewAuditEvent } from './audit.types';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The audit trail: recorded by the services that act, read by admins (GET /api/audit, GraphQL auditEvents). */
export class AuditService {
  constructor(private readonly repo: AuditRepository) {}

  record(e: NewAuditEvent): Promise<void> {
    return this.repo.insert({ ...e, id: crypto.randomUUID() });
  }

  /** An event by `actor` (a principal): its key id and owner are the `who`. */
  recordBy(actor: Principal, e: Omit<NewAuditEvent, 'actorKeyId' | 'actorOwner'>): Promise<void> {
    return this.record({ ...e, actorKeyId: actor.keyId, actorOwner: actor.ownerId });
  }

  /** Newest first; `after` is the `next_cursor` of the previous page. Admin keys only. */
  async list(principal: Principal, limit: number, after: string | undefined): Promise<AuditPage> {
    requireScope(principal, 'admin', 'reading the audit trail');
    const before = after === undefined ? undefined : decode(after);
    const rows = await this.repo.page(limit + 1, before);
    const events = rows.slice(0, limit);
    const last = events[events.length - 1];
    return rows.length > limit && last ? { events, nextCursor: encode(last.at, last.id) } : { events };
  }
}

const encode = (at: Date, id: string) => Buffer.from(`${at.toISOString()}|${id}`).toString('base64url');

function decode(cursor: string): { at: Date; id: string } {
  const bad = new DomainError('INVALID_CURSOR', 'after: not a cursor of this API', { parameter: 'after' });
  if (cursor.length > 200 || !/^[\w-]+$/.test(cursor)) throw bad;
  const [iso, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const at = new Date(iso ?? '');
  if (!id || !UUID.test(id) || Number.isNaN(at.getTime()) || at.toISOString() !== iso) throw bad;
  return { at, id };
}
