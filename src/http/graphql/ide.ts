import path from 'node:path';
import { Router, type Request } from 'express';
import { htmlPage } from '../shared/html-page';
import { FAVICON } from '../shared/favicon';

/**
 * The GraphQL IDE (GraphiQL 3) at `GET /graphql` for browsers. Every file it loads comes from npm packages and is
 * served here under /graphql/ide/, so it works with no internet access. The page itself needs no key: it asks for one
 * first (or takes the one the asset browser keeps in this tab) and only then starts GraphiQL with it in the headers,
 * so the schema is fetched once, with the key (docs and autocompletion work at once, and nothing is refused on open).
 */
export function ideRouter(): Router {
  const pkg = (name: string) => path.dirname(require.resolve(`${name}/package.json`));
  const files: Record<string, { file?: string; text?: string; type: string }> = {
    'react.production.min.js': {
      file: path.join(pkg('react'), 'umd', 'react.production.min.js'),
      type: 'text/javascript',
    },
    'react-dom.production.min.js': {
      file: path.join(pkg('react-dom'), 'umd', 'react-dom.production.min.js'),
      type: 'text/javascript',
    },
    'graphiql.min.js': { file: path.join(pkg('graphiql'), 'graphiql.min.js'), type: 'text/javascript' },
    'graphiql.min.css': { file: path.join(pkg('graphiql'), 'graphiql.min.css'), type: 'text/css' },
    'ide.js': { text: IDE_SCRIPT, type: 'text/javascript' },
    'ide.css': { text: IDE_CSS, type: 'text/css' },
    'favicon.svg': { text: FAVICON, type: 'image/svg+xml' },
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
  return (
    req.query.query === undefined &&
    req.accepts(['application/json', 'application/graphql-response+json', 'text/html']) === 'text/html'
  );
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
<link rel="icon" href="/graphql/ide/favicon.svg" type="image/svg+xml">
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
# Your key is in the Headers tab below ({"X-API-Key": "…"}).
# The docs (book icon) and autocompletion use the schema
# fetched with it. Run with Ctrl-Enter.

{
  tasks {
    items { id status taskName createTime }
    total
  }
}
`;

const IDE_CSS = `html, body, #graphiql { height: 100%; margin: 0; }
.key-gate { min-height: 100%; display: grid; place-items: center; padding: 24px; box-sizing: border-box;
  font: 14px/1.45 system-ui, sans-serif; color: #1b1f24; background: #f6f7f9; }
.key-gate form { width: min(440px, 100%); background: #fff; border: 1px solid #d5dae0; border-radius: 12px; padding: 28px;
  box-sizing: border-box; }
.key-gate h1 { font-size: 20px; margin: 0 0 6px; }
.key-gate label { display: block; font-weight: 600; margin: 12px 0 4px; }
.key-gate input { width: 100%; box-sizing: border-box; font: inherit; padding: 6px 10px; border: 1px solid #8c959f;
  border-radius: 6px; }
.key-gate button { margin-top: 14px; width: 100%; font: inherit; padding: 8px; border-radius: 6px; cursor: pointer;
  border: 1px solid #0b57d0; background: #0b57d0; color: #fff; }
.key-gate .error { color: #b3261e; }
`;

// The key prompt is plain DOM (React is only needed once GraphiQL starts); the key is kept in this tab's
// sessionStorage under the asset browser's name, so one sign-in serves both pages.
const IDE_SCRIPT = `(function () {
  var url = window.location.origin + window.location.pathname.replace(/\\/+$/, '');
  var STORE = 'assetBrowser.apiKey';
  var root = document.getElementById('graphiql');
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text) e.textContent = text;
    return e;
  }
  function start(key) {
    var headers = { 'X-API-Key': key };
    root.textContent = '';
    ReactDOM.createRoot(root).render(
      React.createElement(GraphiQL, {
        fetcher: GraphiQL.createFetcher({ url: url, headers: headers }),
        defaultQuery: ${JSON.stringify(DEFAULT_QUERY)},
        defaultHeaders: JSON.stringify(headers, null, 2),
        defaultEditorToolsVisibility: 'headers',
        shouldPersistHeaders: false,
      }),
    );
  }
  function ask(notice) {
    root.textContent = '';
    var main = el('main', { class: 'key-gate' });
    var form = el('form', { 'aria-labelledby': 'ide-title' });
    form.appendChild(el('h1', { id: 'ide-title' }, 'GraphQL IDE'));
    form.appendChild(el('p', {}, 'Enter your API key. It is sent as the X-API-Key header of every request and kept in this browser tab only.'));
    form.appendChild(el('label', { for: 'ide-key' }, 'API key'));
    var input = el('input', { id: 'ide-key', type: 'password', autocomplete: 'off', spellcheck: 'false' });
    form.appendChild(input);
    var error = el('p', { class: 'error', role: 'alert', id: 'ide-error' }, notice || '');
    form.appendChild(error);
    form.appendChild(el('button', { type: 'submit' }, 'Open the IDE'));
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      var key = input.value.trim();
      if (!key) { error.textContent = 'Enter an API key.'; return; }
      error.textContent = '';
      fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-API-Key': key }, body: '{"query":"{ __typename }"}' })
        .then(function (res) {
          if (res.status === 401) { error.textContent = 'This key was refused (401 UNAUTHORIZED).'; return; }
          try { sessionStorage.setItem(STORE, key); } catch (err) { /* kept for this page only */ }
          start(key);
        }, function () { error.textContent = 'The service cannot be reached.'; });
    });
    main.appendChild(form);
    root.appendChild(main);
    input.focus();
  }
  var saved = null;
  try { saved = sessionStorage.getItem(STORE); } catch (err) { /* no storage: ask */ }
  if (saved) start(saved); else ask();
})();
`;
