import { ApolloServer } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import express, { Router, type ErrorRequestHandler } from 'express';
import type { Container } from '../../container';
import type { Logger } from '../../infra/logger';
import { endAnswer } from '../request-guard';
import { asDomainError, STATUS_OF } from '../shared/errors';
import { createContext, type GraphQLContext } from './context';
import { formatError } from './errors';
import { JitExecutor } from './executor';
import * as jit from 'graphql-jit';
import { apolloHandler } from './apollo-http';
import { ideRouter } from './ide';
import { keptAnswers, stringifyResult } from './kept-answers';
import { DEFAULT_QUERY_LIMITS, queryLimitsRule } from './limits';
import { metricsPlugin } from './metrics.plugin';
import { scopePlugin } from './scope.plugin';
import { buildGraphQLSchema } from './schema';
import { tracingPlugin } from './tracing.plugin';
import { graphqlMultipart } from './upload';

/** The largest JSON body of a GraphQL request (uploads are multipart). */
const MAX_JSON_BODY_BYTES = 2 * 1024 * 1024;

/**
 * `/graphql` (the router is mounted there): Apollo Server on the app's express (apollo-http.ts), the JSON and multipart
 * body parsers in front of it, and the IDE. Every GraphQL request goes through Apollo's pipeline; queries run as code
 * compiled by graphql-jit behind its executor hook (executor.ts), repeated `assets` pages come from kept answers
 * (kept-answers.ts). CSRF prevention stays on: a multipart (or GET) request must carry `Apollo-Require-Preflight: true`
 * or `X-Apollo-Operation-Name`, which a cross-site form cannot send.
 */
export async function graphqlRouter(c: Container): Promise<Router> {
  const schema = await buildGraphQLSchema(c);
  const executor = new JitExecutor(schema, jit);
  const context = createContext({ auth: c.requestAuth, assets: c.assets, logger: c.logger });
  const server = new ApolloServer<GraphQLContext>({
    // Queries run as code compiled once per document (graphql-jit) through Apollo's executor hook: executor.ts.
    gateway: executor.gateway(),
    introspection: true,
    csrfPrevention: true,
    includeStacktraceInErrorResponses: false,
    persistedQueries: false,
    // Shutdown is the service's (src/main.ts drains HTTP, then jobs, then the database). Apollo's own signal
    // handlers would re-raise SIGTERM at once and cut in-flight requests.
    stopOnTerminationSignals: false,
    validationRules: [queryLimitsRule(DEFAULT_QUERY_LIMITS)],
    formatError: formatError(c.logger),
    stringifyResult,
    // The IDE is ours (ide.ts); Apollo's default landing page would load code from a CDN. Cache-control hints are not
    // used (answers are per key, never cached by a CDN), and Apollo's default cache-control plugin would wrap every
    // field's resolver to compute them (willResolveField on each field of each list item).
    // Inline traces are for federated subgraphs, which this is not.
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      // Before kept answers: a refused operation is never answered from them.
      scopePlugin(),
      keptAnswers((principal) => c.assets.rowsVersion(principal)),
      ...(c.metrics ? [metricsPlugin(c.metrics)] : []),
      ...(c.tracing ? [tracingPlugin(c.tracing)] : []),
    ],
  });
  await server.start();

  const chain = [
    graphqlMultipart({ maxBytes: c.content.maxUploadBytes }),
    express.json({ limit: MAX_JSON_BODY_BYTES }),
    apolloHandler(server, context),
  ];
  // Mounted at /graphql (app.ts): paths here are below it.
  const r = Router();
  // POSTs first: the IDE's router answers GETs only, and every GraphQL request would walk it.
  r.post('/', ...chain);
  r.use(ideRouter());
  r.all('/', ...chain);
  r.use(graphqlErrors(c.logger));
  return r;
}

/** Errors before Apollo (bad JSON, oversized or malformed multipart) answered in GraphQL's error shape. */
function graphqlErrors(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    void _next;
    const { code, message, details } = asDomainError(err, logger, {
      requestId: res.locals.requestId as string | undefined,
      method: req.method,
      message: 'unhandled error on /graphql',
    });
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(STATUS_OF[code] ?? 500);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    endAnswer(res, JSON.stringify({ errors: [{ message, extensions: { code, ...(details ? { details } : {}) } }] }));
  };
}
