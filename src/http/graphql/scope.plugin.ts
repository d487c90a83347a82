import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError } from 'graphql';
import { forbidden, hasScope } from '../../domain/auth/scopes';
import { operationScope } from '../shared/route-scopes';
import type { GraphQLContext } from './context';

/**
 * The scope of every GraphQL operation, checked once it is parsed and before anything runs (an upload's file is not
 * read): `read` for queries, `write` for mutations (route-scopes.ts). Refused with HTTP 403 and FORBIDDEN,
 * `details.required_scope`, as REST. Admin-only fields and arguments are the domain's `requireScope`.
 */
export function scopePlugin(): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ contextValue, operation }) {
          const kind = operation?.operation ?? 'mutation';
          const scope = operationScope(kind);
          if (hasScope(contextValue.principal, scope)) return;
          const refusal = forbidden(scope, `a GraphQL ${kind}`);
          throw new GraphQLError(refusal.message, {
            extensions: { code: refusal.code, details: refusal.details, http: { status: 403 } },
          });
        },
      };
    },
  };
}
