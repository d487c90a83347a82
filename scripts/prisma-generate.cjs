// Runs `prisma generate` offline. Generation never executes the schema engine, but the CLI insists on locating one
// at start; where no engine can be downloaded we point it at a placeholder file.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const os = require('node:os');

const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY) {
  const placeholder = path.join(os.tmpdir(), 'asset-service-prisma-schema-engine-placeholder');
  if (!fs.existsSync(placeholder)) fs.writeFileSync(placeholder, '');
  env.PRISMA_SCHEMA_ENGINE_BINARY = placeholder;
}
const cli = require.resolve('prisma/build/index.js');
execFileSync(process.execPath, [cli, 'generate', '--schema', path.join(__dirname, '..', 'prisma', 'schema.prisma')], {
  env,
  stdio: ['ignore', 'ignore', 'inherit'],
});
