import type { ApolloServerPlugin } from '@apollo/server';
import type { Tracing } from '../../infra/tracing';

/**
 * A span per GraphQL operation, named as OpenTelemetry's semantic conventions name it (`query AssetList`), under the
 * request's HTTP span. graphql-jit runs the operation behind Apollo's executor hook, so OpenTelemetry's graphql
 * instrumentation (which wraps graphql-js's `execute`) would see none; and since plugin hooks cannot make a span the
 * active one, the statements of the resolvers are the operation's siblings under the HTTP span, in the same trace.
 */
export function tracingPlugin(tracing: Tracing): ApolloServerPlugin {
  return {
    async requestDidStart() {
      const span = tracing.tracer.startSpan('GraphQL Operation');
      return {
        async didResolveOperation(rc) {
          if (!rc.operation) return;
          const type = rc.operation.operation;
          const name = rc.operation.name?.value;
          span.updateName(name ? `${type} ${name}` : type);
          span.setAttributes({ 'graphql.operation.type': type, ...(name ? { 'graphql.operation.name': name } : {}) });
        },
        async willSendResponse(rc) {
          const errors = rc.errors ?? [];
          if (errors.length > 0) {
            const codes = errors.map((e) => String(e.extensions?.code ?? 'INTERNAL'));
            span.setAttribute('graphql.error.codes', [...new Set(codes)]);
            tracing.fail(span, errors[0]);
          }
          span.end();
        },
      };
    },
  };
}
