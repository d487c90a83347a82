import { Router } from 'express';
import type { AuditService } from '../../domain/audit/audit.service';
import type { AuditEvent } from '../../domain/audit/audit.types';
import { intParam, stringParam } from '../schema/query';
import { handle, principalOf } from '../shared/handler';
import { sendJson } from './middleware';

export function auditEventJson(e: AuditEvent): Record<string, unknown> {
  return {
    id: e.id,
    at: e.at.toISOString(),
    actor: { key_id: e.actorKeyId, owner: e.actorOwner },
    action: e.action,
    ...(e.targetOwner !== undefined ? { target_owner: e.targetOwner } : {}),
    ...(e.targetId !== undefined ? { target_id: e.targetId } : {}),
    details: e.details,
  };
}

/** GET /api/audit (admin keys): the audit trail, newest first, cursor-paginated (contract 8). */
export function auditRouter(deps: { audit: AuditService }): Router {
  const r = Router();
  r.get(
    '/audit',
    handle(async (req, res) => {
      const q = req.query as Record<string, unknown>;
      const page = await deps.audit.list(principalOf(res), intParam(q, 'limit', 50, 1, 500), stringParam(q, 'after'));
      sendJson(res, {
        events: page.events.map(auditEventJson),
        ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}),
      });
    }),
  );
  return r;
}
