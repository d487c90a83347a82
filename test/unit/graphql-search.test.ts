import url from 'node:url';
import fc from 'fast-check';
import { searchOf } from '../../src/http/graphql/apollo-http';

// A GET request's operation is read from its query string (http/request.ts `searchOf`). It must get the parameters
// Apollo's @as-integrations/express5 handed it, which took `url.parse(req.url).search` (now unused: its
// deprecation check cost every request a stack capture): the same text for ordinary targets, the same parameters for
// any target.
const legacy = (target: string): string => {
  const quiet = process.noDeprecation;
  process.noDeprecation = true;
  try {
    return url.parse(target).search ?? '';
  } finally {
    process.noDeprecation = quiet;
  }
};
const params = (search: string) => [...new URLSearchParams(search)];

test('ordinary targets: the same query string', () => {
  for (const t of ['/', '/?', '/?a=1', '/graphql?query=%7Bx%7D&b=2', '/?a=1#f', '/#f?x', '/?a=b?c', '/??', '/?a=1#'])
    expect([t, searchOf(t)]).toEqual([t, legacy(t)]);
});

test('any target Node hands on (no space or control character): the same parameters', () => {
  const part = fc.stringMatching(/^[\w?#&=%{}"'<>|^`+.:/-]{0,20}$/);
  fc.assert(
    fc.property(part, (tail) => {
      const t = '/' + tail;
      expect(params(searchOf(t))).toEqual(params(legacy(t)));
    }),
    { numRuns: 2000 },
  );
});
