import express, { type NextFunction, type Request, type RequestHandler } from 'express';
import { DomainError } from '../../domain/errors';

/**
 * The JSON body of a GraphQL request: `express.json({ limit })`, with the common case read directly. A POST whose
 * `Content-Type` is `application/json` (optionally `; charset=utf-8`), with a `Content-Length` within the limit and no
 * `Content-Encoding`, is read and parsed here; every other request (chunked, compressed, another charset or type,
 * oversized) goes to `express.json`, which decides it as before. The outcomes are body-parser's: the same strict
 * check (an object or array), the same BOM handling and the same errors (INVALID_JSON, INVALID_BODY when aborted).
 *
 * Why not `express.json` for everything: body-parser's per-request work (type-is and content-type parsing twice,
 * raw-body's stream set-up, iconv decoding) shows in the CPU of small queries (`npm run bench -- graphql`).
 */
export function graphqlJsonBody(limitBytes: number): RequestHandler {
  const fallback = express.json({ limit: limitBytes });
  return (req, res, next) => {
    if (plainJsonLength(req, limitBytes) === undefined) fallback(req, res, next);
    else readBody(req, next);
  };
}

/** The declared length of a body this reader takes, or undefined for body-parser. */
function plainJsonLength(req: Request, limitBytes: number): number | undefined {
  if (req.method !== 'POST') return undefined;
  const h = req.headers;
  const type = h['content-type'];
  if (type === undefined || !PLAIN_JSON.test(type)) return undefined;
  if (h['content-encoding'] !== undefined || h['transfer-encoding'] !== undefined) return undefined;
  const declared = h['content-length'];
  if (declared === undefined || !/^\d{1,10}$/.test(declared)) return undefined;
  const length = Number(declared);
  return length > 0 && length <= limitBytes ? length : undefined;
}

/** `application/json`, with at most a UTF-8 charset parameter: what every GraphQL client sends. */
const PLAIN_JSON = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

function readBody(req: Request, next: NextFunction): void {
  // Node's parser hands over exactly Content-Length bytes, or the request aborts: no size check is needed at the end.
  // Most bodies arrive as one chunk: the array is made for a second one only.
  let first: Buffer | undefined;
  let chunks: Buffer[] | undefined;
  let received = 0;
  const onData = (chunk: Buffer) => {
    if (first === undefined) first = chunk;
    else (chunks ??= [first]).push(chunk);
    received += chunk.length;
  };
  const done = (err?: DomainError) => {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('aborted', onAborted);
    req.off('error', onError);
    if (err) {
      next(err);
      return;
    }
    const text = (chunks ? Buffer.concat(chunks, received) : (first ?? Buffer.alloc(0))).toString('utf8');
    let body: unknown;
    try {
      body = parseStrict(text);
    } catch {
      next(new DomainError('INVALID_JSON', 'the request body is not valid JSON'));
      return;
    }
    req.body = body;
    next();
  };
  const onEnd = () => done();
  const onAborted = () => done(new DomainError('INVALID_BODY', 'the request was aborted'));
  const onError = () => done(new DomainError('INVALID_BODY', 'the request was aborted'));
  // `on`, not `once`: `done` removes all four, and `once` would wrap each in a closure of its own per request.
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('aborted', onAborted);
  req.on('error', onError);
}

/** body-parser's strict JSON: a leading BOM is dropped, and the text must start (after whitespace) with `{` or `[`. */
function parseStrict(text: string): unknown {
  const t = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  // The first character after JSON whitespace (space, tab, LF, CR), without a match array per request.
  let i = 0;
  let c = t.charCodeAt(0);
  while (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) c = t.charCodeAt(++i);
  if (c !== 0x7b && c !== 0x5b) throw new SyntaxError('not an object or array');
  return JSON.parse(t);
}
