import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Router } from 'express';
import { FAVICON } from '../shared/favicon';
import { htmlPage } from '../shared/html-page';

/**
 * The asset browser: `GET /ui` is a page whose script and stylesheet `npm run build` bundles from
 * ui/src (scripts/build-ui.cjs) into dist/ui/ with content-hashed names. The page and its files need no key (the
 * page asks for one and keeps it in the tab's sessionStorage); everything it shows comes through the keyed API.
 * No CDN: every file is served here, under a CSP that allows this origin only, and the page's one inline script (the
 * build's `boot`, which sends the first screen's requests before the bundle loads: ui/src/first-screen.ts) by its
 * SHA-256.
 */
export function uiRouter(opts: { dir?: string } = {}): Router {
  let built: Built | undefined;
  const load = (): Built | undefined => (built ??= readBuilt(opts.dir ?? findBuiltDir()));

  const r = Router();
  r.get('/ui', (_req, res) => {
    const b = load();
    htmlPage(res, b?.csp ?? cspOf(undefined));
    if (!b) res.status(503).send(NOT_BUILT);
    else res.send(b.page);
  });
  // The page's icon (a browser asks for one on every page; without it, a 404 each time).
  r.get('/ui/favicon.svg', (_req, res) => {
    res
      .set('Cache-Control', 'public, max-age=86400')
      .set('X-Content-Type-Options', 'nosniff')
      .type('image/svg+xml')
      .send(FAVICON);
  });
  r.get('/ui/assets/:file', (req, res, next) => {
    const b = load();
    // Only the files the build wrote: a name is looked up, never joined into a path as given.
    if (!b || !b.files.has(req.params.file)) {
      next();
      return;
    }
    res
      .set('Cache-Control', 'public, max-age=31536000, immutable')
      .set('X-Content-Type-Options', 'nosniff')
      .type(path.extname(req.params.file) === '.map' ? 'application/json' : path.extname(req.params.file))
      // `root`: the name alone is checked (a build under a dot-directory such as `.ab-main/ui` is still served).
      .sendFile(req.params.file, { root: b.dir });
  });
  return r;
}

interface Manifest {
  script: string;
  /** Chunks the script imports at once. */
  preload?: string[];
  style: string;
  /** The text of the page's inline script. */
  boot: string;
}
interface Built {
  dir: string;
  files: Set<string>;
  page: string;
  csp: string;
}

function readBuilt(dir: string | undefined): Built | undefined {
  if (!dir) return undefined;
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Manifest;
    const files = new Set(fs.readdirSync(dir).filter((f) => f !== 'manifest.json'));
    if (
      ![manifest.script, manifest.style, ...(manifest.preload ?? [])].every((f) => files.has(f)) ||
      typeof manifest.boot !== 'string'
    )
      return undefined;
    // `</` cannot end the script element early: the same text in JavaScript.
    const boot = manifest.boot.replace(/<\//g, '<\\/');
    return {
      dir,
      files,
      page: page(manifest, boot),
      csp: cspOf(crypto.createHash('sha256').update(boot).digest('base64')),
    };
  } catch {
    return undefined;
  }
}

/**
 * The build's own ui/ beside its compiled server (<build>/src/http/ui → <build>/ui), whatever the build's directory
 * is called (a copy such as `.ab-main` must serve its own page, not the dist/ui of a checkout around it); from
 * sources, dist/ui at the repository root.
 */
function findBuiltDir(): string | undefined {
  const own = path.resolve(__dirname, '..', '..', '..', 'ui');
  if (fs.existsSync(path.join(own, 'manifest.json'))) return own;
  let dir = __dirname;
  for (let i = 0; i < 6; i++) {
    const candidate = path.join(dir, 'dist', 'ui');
    if (fs.existsSync(path.join(candidate, 'manifest.json'))) return candidate;
    dir = path.dirname(dir);
  }
  return undefined;
}

// Images and the viewer's media are object URLs of bytes fetched with the key (blob:) or this service's signed URLs;
// the export archive link is a plain navigation.
const cspOf = (bootSha256: string | undefined) =>
  `default-src 'self'; script-src 'self'${bootSha256 ? ` 'sha256-${bootSha256}'` : ''}; style-src 'self'; img-src 'self' blob: data:; ` +
  "media-src 'self' blob:; connect-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'none'; object-src 'none'";

const escapeAttr = (s: string) => s.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);

// The inline script first: a script after a stylesheet waits for the stylesheet.
const page = (m: Manifest, boot: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<script>${boot}</script>
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Assets</title>
<link rel="icon" href="/ui/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/ui/assets/${escapeAttr(m.style)}">
<script type="module" src="/ui/assets/${escapeAttr(m.script)}"></script>
${(m.preload ?? []).map((f) => `<link rel="modulepreload" href="/ui/assets/${escapeAttr(f)}">\n`).join('')}</head>
<body>
<div id="app"><noscript>The asset browser needs JavaScript.</noscript></div>
</body>
</html>
`;

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Assets</title></head>
<body><p>The asset browser is not built: run <code>npm run build</code>.</p></body></html>
`;
