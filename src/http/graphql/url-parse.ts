import url from 'node:url';

/**
 * @as-integrations/express5 runs the legacy `url.parse(req.url)` on every request. Until Node has printed its
 * one-time deprecation warning for `url.parse` (DEP0169), each call made from inside node_modules captures a stack of
 * up to 100 frames to decide whether to print it: measured ~3.5 µs a call in a plain script, ~5 % of a GraphQL
 * request's CPU under Express (BENCHMARKS.md, change 10). One call from here, outside node_modules, with deprecation
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
