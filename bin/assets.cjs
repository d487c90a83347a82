#!/usr/bin/env node
'use strict';
// `assets` command (package.json "bin"): the compiled client in dist/. A wrapper rather than dist/ itself, so the
// command stays executable whatever mode tsc gives the files it writes.
const path = require('node:path');
const fs = require('node:fs');

const main = path.join(__dirname, '..', 'dist', 'src', 'cli', 'assets', 'main.js');
const versionCheck = path.join(__dirname, '..', 'dist', 'src', 'node-version.js');
if (!fs.existsSync(main) || !fs.existsSync(versionCheck)) {
  process.stderr.write('assets: the client is not built yet: run `npm run build` in the asset-service folder\n');
  process.exit(2);
}
require(versionCheck).requireSupportedNode('assets');
// `npm run cli -- push models/` runs in the package folder: paths are meant from where the user typed it.
if (process.env.npm_lifecycle_event === 'cli' && process.env.INIT_CWD) process.chdir(process.env.INIT_CWD);
process.argv.splice(1, 1, main);
require(main).run(process.argv.slice(2));
