import url from 'node:url';

/**
 * @as-integrations/express5 runs the legacy `url.parse(req.url)` on every request. Until Node has printed its
 * one-time deprecation warning for `url.parse` (DEP0169), each call made from inside node_modules captures a stack of
 * up to 100 frames to decide whether to print it, a cost on every GraphQL request (`npm run bench -- graphql`).
 * One call from here, outside node_modules, with deprecation
 * output off for that moment, settles Node's flag and prints nothing; nothing of ours uses `url.parse`.
 */
export function settleUrlParseDeprecation(): void {
  const quiet = process.noDeprecation;
  process.noDeprecation = true;
  try {
    url.parse('/');
  } finally {
    process.noDeprecation = quiet;
  }
}
