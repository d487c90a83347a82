import type { Request, RequestHandler, Response } from 'express';
import type { GraphQLContext } from '../context';
import { checkDocumentText, DEFAULT_QUERY_LIMITS } from '../limits';
import { badRequest, ensureGraphQLError, formatErrors, type Head } from './errors';
import { runOperation, stringify, type OperationAnswer, type OperationDeps } from './operation';
import { contentTypeFor, JSON_TYPE, preventCsrf, readRequest, searchOf } from './request';

/**
 * GraphQL over HTTP: the one path of every request to /graphql after its body parser (GET, POST JSON, POST multipart).
 * The document's size and nesting are checked first (limits.ts), then CSRF, the context (context.ts: the key, rate
 * limits; once per request), the request's operation (request.ts), the operation itself (operation.ts), the answer's
 * content type. Apollo Server's answer to each request, byte for byte (test/integration/graphql-wire.test.ts), without
 * its per-request pipeline.
 */
export function graphqlHttp(
  deps: OperationDeps & { context: (args: { req: Request; res: Response }) => Promise<GraphQLContext> },
): RequestHandler {
  return (req, res, next) => {
    // Express 5 leaves req.body unset when no parser ran (GET).
    req.body ??= {};
    const body = req.body as { query?: unknown };
    const text = typeof body.query === 'string' ? body.query : (req.query as Record<string, unknown>).query;
    // A text among the valid documents passed these checks when it was parsed.
    if (typeof text === 'string' && !deps.documents.has(text)) {
      const refused = checkDocumentText(text, DEFAULT_QUERY_LIMITS);
      if (refused) {
        next(refused);
        return;
      }
    }
    answer(deps, req, res)
      .then((a) => send(req, res, a))
      .catch(next);
  };
}

interface Answer extends OperationAnswer {
  head: Head & { status: number };
}

async function answer(deps: Parameters<typeof graphqlHttp>[0], req: Request, res: Response): Promise<Answer> {
  try {
    preventCsrf(req.headers);
    let ctx: GraphQLContext;
    try {
      ctx = await deps.context({ req, res });
    } catch (e) {
      return refused(deps, req, ensureGraphQLError(e, 'Context creation failed: '));
    }
    const method = req.method.toUpperCase();
    const request = readRequest(method, req.headers, req.body, method === 'GET' ? searchOf(req.url) : '');
    const { head, body } = await runOperation(deps, request, ctx, method);
    // The operation has run (and been timed) before a refused Accept header is answered.
    const type = contentTypeFor(req.headers.accept);
    if (type === null) {
      throw badRequest(
        `An 'accept' header was provided for this request which does not accept application/json; charset=utf-8 ` +
          `or application/graphql-response+json; charset=utf-8`,
        { status: 406, headers: new Map() },
      );
    }
    head.headers.set('content-type', type);
    return { head: { status: head.status || 200, headers: head.headers }, body };
  } catch (e) {
    return refused(deps, req, e);
  }
}

/** A request refused before or around its operation: the error's status (else 500) and its headers. */
function refused(deps: OperationDeps, req: Request, error: unknown): Answer {
  const { errors, head } = formatErrors([error], deps.formatError);
  head.headers.set('content-type', contentTypeFor(req.headers.accept) ?? JSON_TYPE);
  return { head: { status: head.status ?? 500, headers: head.headers }, body: stringify({ errors }) };
}

function send(req: Request, res: Response, answer: Answer): void {
  for (const [key, value] of answer.head.headers) res.setHeader(key, value);
  res.statusCode = answer.head.status;
  if (req.method === 'POST') {
    // What res.send does with the body of a POST's answer (its content types carry their charset; the app sends no
    // ETags; freshness is for GET and HEAD), without parsing the content type again.
    res.setHeader('Content-Length', Buffer.byteLength(answer.body));
    res.end(answer.body);
  } else res.send(answer.body.toString());
}
