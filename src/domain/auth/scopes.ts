import { DomainError } from '../errors';

/**
 * What a key may do (contract 8): `read` (every GET/HEAD route, GraphQL queries, read grants), `write` (creating,
 * changing and deleting the owner's assets, uploads, tasks, exports and keys; GraphQL mutations) and `admin` (other
 * owners' keys and data, the audit trail, `is_immutable`, every owner's tasks, the seed).
 */
export const SCOPES = ['read', 'write', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** Who is asking: the owner of a key (or of a read grant, a task, an import) and what it may do. */
export interface Principal {
  readonly ownerId: string;
  /** What the key may do; checked by `requireScope`. */
  readonly scopes: readonly Scope[];
  /** Id of the API key row, or `env:<owner>` for bootstrap keys. */
  readonly keyId: string;
}

export const isScope = (s: unknown): s is Scope => typeof s === 'string' && (SCOPES as readonly string[]).includes(s);

/** The scopes of keys made before scopes existed, and of bootstrap keys: what they could do then. */
export const legacyScopes = (admin: boolean): Scope[] => (admin ? ['read', 'write', 'admin'] : ['read', 'write']);

export const hasScope = (p: Principal, scope: Scope): boolean => p.scopes.includes(scope);

/** The one refusal of a key used beyond its scopes: 403 FORBIDDEN with `details.required_scope`. */
export function requireScope(p: Principal, scope: Scope, what?: string): void {
  if (!hasScope(p, scope)) throw forbidden(scope, what);
}

export const forbidden = (scope: Scope, what?: string): DomainError =>
  new DomainError('FORBIDDEN', `${what ?? 'this operation'} needs a key with the ${scope} scope`, {
    required_scope: scope,
  });

/** Scopes in their canonical order, each once. */
export const sortedScopes = (scopes: Iterable<Scope>): Scope[] => {
  const set = new Set(scopes);
  return SCOPES.filter((s) => set.has(s));
};
