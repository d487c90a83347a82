/** What the audit trail records (contract 8); never a secret. */
export const AUDIT_ACTIONS = [
  'key.create',
  'key.revoke',
  'asset.set_immutable',
  'quota.set',
  'import.start',
  'import.cancel',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface NewAuditEvent {
  /** The acting key's id (`env:<owner>` for a bootstrap key, `cli` for `npm run keys`) and owner. */
  actorKeyId: string;
  actorOwner: string;
  action: AuditAction;
  targetOwner?: string;
  targetId?: string;
  details?: Record<string, unknown>;
}

export interface AuditEvent extends Omit<NewAuditEvent, 'action' | 'details'> {
  id: string;
  at: Date;
  action: string;
  details: Record<string, unknown>;
}

export interface AuditPage {
  events: AuditEvent[];
  nextCursor?: string;
}
