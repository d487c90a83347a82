import { Router } from 'express';
import type { ApiKeyInfo, ApiKeyService } from '../../domain/auth/api-key.service';
import { DomainError } from '../../domain/errors';
import { checkBody } from '../schema/check';
import { oneOf, stringParam } from '../schema/query';
import { KeyCreateRequest } from '../schema/rest';
import { handle, principalOf } from '../shared/handler';
import { jsonBody, pathId, sendJson } from './middleware';

/** A key as GET /api/keys lists it: never the secret; fields without a value are absent. */
export function keyJson(k: ApiKeyInfo): Record<string, unknown> {
  return {
    id: k.id,
    owner: k.ownerId,
    label: k.label,
    scopes: k.scopes,
    created_at: k.createdAt.toISOString(),
    ...(k.lastUsedAt ? { last_used_at: k.lastUsedAt.toISOString() } : {}),
    ...(k.expiresAt ? { expires_at: k.expiresAt.toISOString() } : {}),
    ...(k.revokedAt ? { revoked_at: k.revokedAt.toISOString() } : {}),
  };
}

/** `expires_at` as sent: an ISO 8601 time (INVALID_BODY otherwise). */
export function expiryOf(v: unknown): Date | undefined {
  if (v === undefined) return undefined;
  const d = typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v) ? new Date(v) : undefined;
  if (!d || Number.isNaN(d.getTime()))
    throw new DomainError('INVALID_BODY', 'expires_at must be an ISO 8601 time', { field: 'expires_at' });
  return d;
}

/** Key management (contract 8): POST and GET /api/keys, DELETE /api/keys/{id}. */
export function keysRouter(deps: { apiKeys: ApiKeyService }): Router {
  const r = Router();
  r.post(
    '/keys',
    ...jsonBody(),
    handle(async (req, res) => {
      const body = req.body as Record<string, unknown>;
      checkBody(KeyCreateRequest, body);
      const { key, info } = await deps.apiKeys.create(principalOf(res), {
        owner: body.owner as string | undefined,
        label: body.label as string | undefined,
        scopes: body.scopes as string[] | undefined,
        expiresAt: expiryOf(body.expires_at),
      });
      res.setHeader('Cache-Control', 'no-store');
      res.status(201).json({ ...keyJson(info), key });
    }),
  );
  r.get(
    '/keys',
    handle(async (req, res) => {
      const q = req.query as Record<string, unknown>;
      const keys = await deps.apiKeys.list(principalOf(res), {
        owner: stringParam(q, 'owner'),
        allOwners: oneOf(q, 'all_owners', ['true', 'false'] as const, 'false') === 'true',
      });
      sendJson(res, { keys: keys.map(keyJson) });
    }),
  );
  r.delete(
    '/keys/:id',
    handle(async (req, res) => {
      await deps.apiKeys.revoke(principalOf(res), pathId(req));
      res.status(204).end();
    }),
  );
  return r;
}
