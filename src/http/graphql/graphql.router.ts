import { Router, type ErrorRequestHandler } from 'express';
import * as jit from 'graphql-jit';
import type { Container } from '../../container';
import type { Logger } from '../../infra/logger';
import { asDomainError, STATUS_OF } from '../shared/errors';
import { createContext } from './context';
import { formatError } from './errors';
import { JitExecutor } from './executor';
import { Documents } from './http/documents';
import { graphqlHttp } from './http/handler';
import { ideRouter } from './ide';
import { graphqlJsonBody } from './json-body';
import { KeptAnswers } from './kept-answers';
import { DEFAULT_QUERY_LIMITS, queryLimitsRule } from './limits';
import { buildGraphQLSchema } from './schema';
import { graphqlMultipart } from './upload';

/** The largest JSON body of a GraphQL request (uploads are multipart). */
const MAX_JSON_BODY_BYTES = 2 * 1024 * 1024;

/**
 * `/graphql` (the router is mounted there): the multipart and JSON body parsers, then GraphQL over HTTP (http/), and
 * the IDE. Every GraphQL request takes that one path: CSRF prevention (a multipart or GET request must carry
 * `Apollo-Require-Preflight: true` or `X-Apollo-Operation-Name`, which a cross-site form cannot send), the context,
 * the document (parsed and validated once per text), a kept answer for a repeated `assets` page (kept-answers.ts) or
 * the execution (queries as code compiled by graphql-jit: executor.ts), the errors formatted (errors.ts), the
 * operation timed. Introspection is on.
 */
export async function graphqlRouter(c: Container): Promise<Router> {
  const schema = await buildGraphQLSchema(c);
  const handler = graphqlHttp({
    documents: new Documents(schema, [queryLimitsRule(DEFAULT_QUERY_LIMITS)]),
    executor: new JitExecutor(schema, jit),
    context: createContext({ auth: c.requestAuth, assets: c.assets, logger: c.logger }),
    formatError: formatError(c.logger),
    kept: new KeptAnswers((principal) => c.assets.rowsVersion(principal)),
    metrics: c.metrics,
  });
  const chain = [
    graphqlMultipart({ maxBytes: c.content.maxUploadBytes }),
    graphqlJsonBody(MAX_JSON_BODY_BYTES),
    handler,
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

/** Errors before the GraphQL handling (bad JSON, oversized or malformed multipart, an oversized document) answered in GraphQL's error shape. */
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
    res
      .status(STATUS_OF[code] ?? 500)
      .json({ errors: [{ message, extensions: { code, ...(details ? { details } : {}) } }] });
  };
}
