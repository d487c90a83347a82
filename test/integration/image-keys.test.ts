import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase } from '../helpers/harness';

// The operator commands run in the service's image as it is (no build, no sources, no dev tools there):
// `docker compose exec assets node dist/src/cli/keys.js …`. Without a Docker engine here, the image's runtime stage
// is laid out from the Dockerfile's own COPY lines (the files it copies from the build and deps stages).

const root = path.join(__dirname, '..', '..');
let app: string;

beforeAll(() => {
  const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  const runtime = dockerfile.slice(dockerfile.indexOf(' AS runtime'));
  app = fs.mkdtempSync(path.join(os.tmpdir(), 'image-app-'));
  for (const m of runtime.matchAll(/^COPY --from=(\w+) (.+)$/gm)) {
    const parts = m[2]!.split(/\s+/);
    const dest = parts.pop()!;
    for (const src of parts) {
      const rel = path.relative('/app', src);
      const to = dest.endsWith('/') && parts.length > 1 ? path.join(app, rel) : path.join(app, dest);
      // node_modules: the installed one stands in for the deps stage's (linked: copying it would take minutes).
      if (rel === 'node_modules') fs.symlinkSync(path.join(root, rel), to);
      else fs.cpSync(path.join(root, rel), to, { recursive: true });
    }
  }
  expect(fs.existsSync(path.join(app, 'src'))).toBe(false);
});
afterAll(() => fs.rmSync(app, { recursive: true, force: true }));

test('node dist/src/cli/migrate.js (the Kubernetes init container) migrates DATABASE_URL_FILE and exits 0', async () => {
  const secret = path.join(app, 'database-url');
  fs.writeFileSync(secret, `${await createTestDatabase()}\n`);
  const out = execFileSync(process.execPath, ['dist/src/cli/migrate.js'], {
    cwd: app,
    env: { PATH: process.env.PATH ?? '', DATABASE_URL_FILE: secret },
    encoding: 'utf8',
  });
  expect(out).toContain('"msg":"migrations applied"');
});

test('node dist/src/cli/keys.js create and list, in the runtime layout, on the deployment database', async () => {
  const env = { PATH: process.env.PATH ?? '', DATABASE_URL: await createTestDatabase() };
  const run = (...args: string[]) =>
    execFileSync(process.execPath, ['dist/src/cli/keys.js', ...args], { cwd: app, env, encoding: 'utf8' });
  // The key is printed once, alone on its line; list names its owner (never the key).
  const key = run('create', '--owner', 'carol').trim();
  // 24 random bytes as base64url: `-` and `_` are part of the alphabet (`\w` alone failed when a key held a `-`).
  expect(key).toMatch(/^ask_[A-Za-z0-9_-]{32}$/);
  const list = run('list');
  expect(list).toMatch(/carol/);
  expect(list).not.toContain(key);
});
