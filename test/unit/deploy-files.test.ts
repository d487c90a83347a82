import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

// The shipped deployment as written: every image of docker-compose.yml is pinned to a version, the service behind the proxy trusts it, the bucket is made at start; the image has ffmpeg
// and runs the keys command without a build.

const root = path.join(__dirname, '..', '..');
const read = (f: string) => fs.readFileSync(path.join(root, f), 'utf8');
const compose = parse(read('docker-compose.yml')) as {
  services: Record<string, { image?: string; environment?: Record<string, string>; depends_on?: object }>;
};

// `docker compose config` runs in test/integration/monitoring.test.ts where the plugin is installed.

test('every image is pinned to a version tag (no latest, no bare name), none of them MinIO', () => {
  const images = Object.entries(compose.services)
    .filter(([, s]) => s.image !== undefined && s.image !== 'asset-service:local')
    .map(([name, s]) => [name, s.image!] as const);
  expect(images.length).toBeGreaterThanOrEqual(6);
  for (const [name, image] of images) {
    const tag = /^[^:@\s]+:([^@\s]+)(@sha256:[0-9a-f]{64})?$/.exec(image)?.[1];
    const pinned = tag !== undefined && tag !== 'latest' && /\d/.test(tag);
    expect({ name, image, pinned }).toEqual({ name, image, pinned: true });
    expect(image).not.toMatch(/minio/i);
  }
});

test('the replicas behind nginx trust it, and start once the bucket is made', () => {
  const assets = compose.services.assets!;
  expect(assets.environment).toMatchObject({ TRUST_PROXY: 'true' });
  expect(assets.depends_on).toMatchObject({ 'seaweedfs-init': { condition: 'service_completed_successfully' } });
  expect(read('deploy/nginx.conf')).toMatch(/proxy_set_header Host \$client_host;/);
});

test('the image installs ffmpeg, records its commit, and runs the keys command without a build', () => {
  const dockerfile = read('Dockerfile');
  const runtime = dockerfile.slice(dockerfile.indexOf(' AS runtime'));
  expect(runtime).toMatch(/apt-get install -y --no-install-recommends ffmpeg/);
  expect(runtime).toMatch(/^ARG GIT_COMMIT=/m);
  const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  expect(scripts['keys:built']).toBe('node dist/src/cli/keys.js');
  expect(read('docs/operations.md')).toContain('docker compose exec assets node dist/src/cli/keys.js create --owner');
});
