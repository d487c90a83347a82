import type { Prisma } from '../../generated/prisma/client';
import type { Db } from '../../infra/prisma';
import type { AuditEvent, NewAuditEvent } from './audit.types';

/** The audit trail's rows (audit_event), newest first by (at, id). */
export class AuditRepository {
  constructor(private readonly db: Db) {}

  async insert(e: NewAuditEvent & { id: string }): Promise<void> {
    await this.db.auditEvent.create({
      data: {
        id: e.id,
        actorKeyId: e.actorKeyId,
        actorOwner: e.actorOwner,
        action: e.action,
        targetOwner: e.targetOwner ?? null,
        targetId: e.targetId ?? null,
        details: (e.details ?? {}) as Prisma.InputJsonObject,
      },
    });
  }

  /** Up to `limit` events older than `before` (its `at` and `id`), newest first. */
  async page(limit: number, before: { at: Date; id: string } | undefined): Promise<AuditEvent[]> {
    const rows = await this.db.auditEvent.findMany({
      where: before ? { OR: [{ at: { lt: before.at } }, { at: before.at, id: { lt: before.id } }] } : {},
      orderBy: [{ at: 'desc' }, { id: 'desc' }],
      take: limit,
    });
    return rows.map((r) => ({
      id: r.id,
      at: r.at,
      actorKeyId: r.actorKeyId,
      actorOwner: r.actorOwner,
      action: r.action,
      targetOwner: r.targetOwner ?? undefined,
      targetId: r.targetId ?? undefined,
      details: (r.details ?? {}) as Record<string, unknown>,
    }));
  }
}
