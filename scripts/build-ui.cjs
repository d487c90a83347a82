/**
 * Builds the asset browser (GET /ui) into dist/ui/: ui/src/main.tsx (Preact) bundled by esbuild into one module
 * script (and the chunks it imports when first needed) and one stylesheet, with content hashes in their names and a
 * manifest the server reads (src/http/ui/ui.router.ts); ui/src/boot.ts into a small script the manifest carries as
 * text, which the server inlines in the page's head (it sends the first screen's requests before the bundle is loaded:
 * ui/src/first-screen.ts).
 * Run by `npm run build`; the browser test calls buildUi() itself so it always tests the current sources.
 */
const fs = require('node:fs');
const path = require('node:path');
const esbuild = require('esbuild');

const ROOT = path.join(__dirname, '..');
const OUT = path.join(ROOT, 'dist', 'ui');

// UI_MINIFY=0: names kept, for reading a profile of the page (bench/figures/grid.cjs --prof).
async function buildUi({ outDir = OUT, minify = process.env.UI_MINIFY !== '0' } = {}) {
  fs.rmSync(outDir, { recursive: true, force: true });
  // What the page's bundle and its inline head script share.
  const common = {
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'browser',
    target: ['chrome110', 'firefox110', 'safari16'],
    minify,
    logLevel: 'warning',
  };
  const result = await esbuild.build({
    ...common,
    entryPoints: { app: 'ui/src/main.tsx' },
    outdir: outDir,
    entryNames: '[name]-[hash]',
    chunkNames: 'chunk-[hash]',
    // ES modules, split: what only some actions need (tus-js-client, for uploads) is a chunk loaded when first used.
    format: 'esm',
    splitting: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    sourcemap: 'linked',
    metafile: true,
    legalComments: 'linked',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const boot = await esbuild.build({
    ...common,
    entryPoints: ['ui/src/boot.ts'],
    write: false,
    format: 'iife',
    legalComments: 'none',
  });
  const outputs = Object.keys(result.metafile.outputs).map((p) => path.basename(p));
  const script = Object.entries(result.metafile.outputs).find(([p]) => /^app-.*\.js$/.test(path.basename(p)));
  const manifest = {
    script: script && path.basename(script[0]),
    // Chunks the script imports statically: the page names them too (modulepreload), so they load beside it.
    preload: (script?.[1].imports ?? []).filter((i) => i.kind === 'import-statement').map((i) => path.basename(i.path)),
    style: outputs.find((f) => /^app-.*\.css$/.test(f)),
    boot: boot.outputFiles[0]?.text.trim(),
  };
  if (!manifest.script || !manifest.style || !manifest.boot)
    throw new Error(`build-ui: missing outputs in ${outputs.join(', ')}`);
  fs.writeFileSync(path.join(outDir, 'manifest.json'), JSON.stringify(manifest) + '\n');
  return manifest;
}

module.exports = { buildUi };

if (require.main === module) {
  buildUi().then(
    (m) => console.log(`dist/ui: ${m.script}, ${m.style}`),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
