import path from 'node:path';
import { Router, type Request } from 'express';
import { htmlPage } from '../shared/html-page';

/**
 * The GraphQL IDE (GraphiQL 3) at `GET /graphql` for browsers. Every file it loads comes from npm packages and is
 * served here under /graphql/ide/, so it works with no internet access. The page itself needs no key: admins paste
 * theirs in the Headers tab, and every operation it runs is authenticated like any other.
 */
export function ideRouter(): Router {
  const pkg = (name: string) => path.dirname(require.resolve(`${name}/package.json`));
  const files: Record<string, { file?: string; text?: string; type: string }> = {
    'react.production.min.js': { file: path.join(pkg('react'), 'umd', 'react.production.min.js'), type: 'text/javascript' },
    'react-dom.production.min.js': { file: path.join(pkg('react-dom'), 'umd', 'react-dom.production.min.js'), type: 'text/javascript' },
    'graphiql.min.js': { file: path.join(pkg('graphiql'), 'graphiql.min.js'), type: 'text/javascript' },
    'graphiql.min.css': { file: path.join(pkg('graphiql'), 'graphiql.min.css'), type: 'text/css' },
    'ide.js': { text: IDE_SCRIPT, type: 'text/javascript' },
    'ide.css': { text: 'html, body, #graphiql { height: 100%; margin: 0; }\n', type: 'text/css' },
  };

  // Mounted at /graphql, with the GraphQL routes.
  const r = Router();
  r.get('/ide/:file', (req, res, next) => {
    const f = Object.hasOwn(files, req.params.file) ? files[req.params.file] : undefined;
    if (!f) {
      next();
      return;
    }
    res.set('Cache-Control', 'public, max-age=3600').set('X-Content-Type-Options', 'nosniff');
    if (f.text !== undefined) res.type(f.type).send(f.text);
    else res.type(f.type).sendFile(f.file!);
  });
  r.get('/', (req, res, next) => {
    if (!wantsHtml(req)) {
      next();
      return;
    }
    htmlPage(res, CSP).send(PAGE);
  });
  return r;
}

/** A browser navigating to /graphql (not a GraphQL GET request, which has a `query` parameter). */
function wantsHtml(req: Request): boolean {
  return req.query.query === undefined && req.accepts(['application/json', 'application/graphql-response+json', 'text/html']) === 'text/html';
}

// Everything from this origin; GraphiQL sets inline styles and its fonts are data: URLs.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; font-src 'self' data:; img-src 'self' data:; " +
  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Asset service · GraphQL IDE</title>
<link rel="stylesheet" href="/graphql/ide/graphiql.min.css">
<link rel="stylesheet" href="/graphql/ide/ide.css">
</head>
<body>
<div id="graphiql">Loading the GraphQL IDE…</div>
<script src="/graphql/ide/react.production.min.js"></script>
<script src="/graphql/ide/react-dom.production.min.js"></script>
<script src="/graphql/ide/graphiql.min.js"></script>
<script src="/graphql/ide/ide.js"></script>
</body>
</html>
`;

const DEFAULT_QUERY = `# Asset service GraphQL IDE
#
# 1. In the Headers tab below: {"X-API-Key": "<your key>"}
# 2. Re-fetch the schema (the arrows at the bottom left)
#    for the docs and autocompletion.
# 3. Run with Ctrl-Enter.

{
  tasks {
    items { id status taskName createTime }
    total
  }
}
`;

const IDE_SCRIPT = `(function () {
  var url = window.location.origin + window.location.pathname.replace(/\\/+$/, '');
  var root = ReactDOM.createRoot(document.getElementById('graphiql'));
  root.render(
    React.createElement(GraphiQL, {
      fetcher: GraphiQL.createFetcher({ url: url }),
      defaultQuery: ${JSON.stringify(DEFAULT_QUERY)},
      defaultHeaders: '{\\n  "X-API-Key": ""\\n}',
      defaultEditorToolsVisibility: 'headers',
      shouldPersistHeaders: false,
    }),
  );
})();
`;
