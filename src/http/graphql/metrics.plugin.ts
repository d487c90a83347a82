import type { ApolloServerPlugin } from '@apollo/server';
import type { Metrics } from '../../infra/metrics';

/**
 * Times every GraphQL operation into `assets_graphql_operation_duration_seconds`, labelled by operation name (bounded
 * in Metrics: anonymous, invalid and names past the cap get fixed labels) and outcome. A request refused before
 * Apollo's pipeline (no valid key) shows only in the HTTP metrics, as POST /graphql 401.
 */
export function metricsPlugin(metrics: Metrics): ApolloServerPlugin {
  return {
    async requestDidStart() {
      const start = performance.now();
      return {
        async willSendResponse(rc) {
          const name = rc.operation ? (rc.operation.name?.value ?? undefined) : null;
          metrics.observeOperation(name, !rc.errors?.length, (performance.now() - start) / 1000);
        },
      };
    },
  };
}
