#!/usr/bin/env node
'use strict';
// `assets` command (package.json "bin"): the compiled client in dist/. A wrapper rather than dist/ itself, so the
// command stays executable whatever mode tsc gives the files it writes.
const path = require('node:path');
const fs = require('node:fs');

const main = path.join(__dirname, '..', 'dist', 'src', 'cli', 'assets', 'main.js');
if (!fs.existsSync(main)) {
  process.stderr.write('assets: the client is not built yet: run `npm run build` in the asset-service folder\n');
  process.exit(2);
}
process.argv.splice(1, 1, main);
require(main).run(process.argv.slice(2));
