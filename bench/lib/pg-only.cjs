'use strict';
// Baseline of the startup benchmark: a process that only starts the embedded PostgreSQL under <dir> (initdb when the
// directory is new) and runs SELECT 1, then prints `ready 0` and waits for SIGTERM to stop it.
const path = require('node:path');
const { DIST } = require('./common.cjs');

async function main() {
  const { startEmbeddedPostgres } = require(path.join(DIST, 'infra', 'embedded-postgres.js'));
  const { createLogger } = require(path.join(DIST, 'infra', 'logger.js'));
  const { Client } = require('pg');
  const db = await startEmbeddedPostgres({ dir: process.argv[2], database: 'assets', logger: createLogger('warn') });
  const c = new Client({ connectionString: db.url });
  await c.connect();
  await c.query('SELECT 1');
  await c.end();
  process.stdout.write('ready 0\n');
  process.on('SIGTERM', () => db.stop().then(() => process.exit(0)));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack) + '\n');
  process.exit(1);
});
