import type { Scope } from '../../domain/auth/scopes';

/**
 * The routes whose scope is not their method's, by path below /api and method (looked up without building a key:
 * every request asks). Data-dependent rights (another owner's
 * keys, `allOwners`, the seed) are checked by the domain with the same `requireScope`.
 */
const BY_ROUTE = new Map<string, Partial<Record<string, Scope>>>([['/audit', { GET: 'admin' }]]);

/**
 * The scope a REST request needs, decided here for every /api route (and tus) before any body byte is read: a
 * listed route's, else `read` for GET and HEAD and `write` for any other method; OPTIONS (discovery) needs a valid
 * key only. test/integration/scopes.test.ts walks the app's route table and holds every route to its scope.
 */
export function routeScope(method: string, path: string): Scope | undefined {
  const listed = BY_ROUTE.get(path)?.[method];
  if (listed) return listed;
  // PUT /owners/{owner}/quota: the one admin route with a parameter in its path.
  if (method === 'PUT' && path.startsWith('/owners/') && path.endsWith('/quota')) return 'admin';
  if (method === 'OPTIONS') return undefined;
  return method === 'GET' || method === 'HEAD' ? 'read' : 'write';
}

/** The scope a GraphQL operation needs: `read` for queries, `write` for mutations (and anything else). */
export const operationScope = (kind: string): Scope => (kind === 'query' ? 'read' : 'write');
