import { HeaderMap, type ApolloServer, type HTTPGraphQLResponse } from '@apollo/server';
import type { Request, RequestHandler, Response } from 'express';
import { endAnswer } from '../request-guard';
import type { GraphQLContext } from './context';
import { checkDocumentText, DEFAULT_QUERY_LIMITS } from './limits';

/**
 * Apollo Server on Express through its documented integration API (`executeHTTPGraphQLRequest`): the request's
 * method, headers, query string and parsed body in, Apollo's status, headers and body out. What
 * `@as-integrations/express5` does, without its legacy `url.parse` of every URL (which also runs Node's deprecation
 * check, a stack capture, from inside node_modules) and `res.send`'s content-type parse for a POST's answer. Before
 * Apollo parses the document, its size and nesting are checked (limits.ts).
 */
export function apolloHandler(
  server: ApolloServer<GraphQLContext>,
  context: (args: { req: Request; res: Response }) => Promise<GraphQLContext>,
): RequestHandler {
  server.assertStarted('apolloHandler()');
  return (req, res, next) => {
    // Express 5 leaves req.body unset when no parser ran (GET); Apollo needs it present.
    req.body ??= {};
    const body = req.body as { query?: unknown };
    const query = typeof body.query === 'string' ? body.query : (req.query as Record<string, unknown>).query;
    const refused = typeof query === 'string' ? checkDocumentText(query, DEFAULT_QUERY_LIMITS) : undefined;
    if (refused) {
      next(refused);
      return;
    }
    const headers = new HeaderMap();
    const h = req.headers;
    for (const key in h) {
      const value = h[key];
      if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
    }
    server
      .executeHTTPGraphQLRequest({
        httpGraphQLRequest: { method: req.method.toUpperCase(), headers, search: searchOf(req.url), body: req.body },
        context: () => context({ req, res }),
      })
      .then((answer) => send(req, res, answer))
      .catch(next);
  };
}

/**
 * The query string of a request target, `?` included ('' for none): what Apollo reads GET parameters from. As
 * `url.parse(target).search` gives it, but for the characters url.parse escapes, which decode to the same parameters.
 */
export function searchOf(target: string): string {
  const hash = target.indexOf('#');
  const q = target.indexOf('?');
  if (q < 0 || (hash >= 0 && hash < q)) return '';
  return hash < 0 ? target.slice(q) : target.slice(q, hash);
}

async function send(req: Request, res: Response, answer: HTTPGraphQLResponse): Promise<void> {
  for (const [key, value] of answer.headers) res.setHeader(key, value);
  res.statusCode = answer.status || 200;
  if (answer.body.kind === 'complete') {
    if (req.method === 'POST') {
      // What res.send does with Apollo's string on a POST (its content types carry their charset; the app sends no
      // ETags; freshness is for GET and HEAD), with a lingering close when the answer refuses an upload still arriving.
      // endAnswer sets its Content-Length.
      endAnswer(res, answer.body.string);
    } else res.send(answer.body.string);
    return;
  }
  for await (const chunk of answer.body.asyncIterator) {
    res.write(chunk);
    (res as Response & { flush?: () => void }).flush?.();
  }
  res.end();
}
