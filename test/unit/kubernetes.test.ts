import fs from 'node:fs';
import path from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { parseAllDocuments } from 'yaml';
import { loadConfig, SECRET_SETTINGS } from '../../src/config';

// deploy/kubernetes/: every document is valid against the Kubernetes API schemas (kubernetes-models' validators),
// and the manifests fit the service: api and worker roles, probes as docs/operations.md advises, settings the
// service accepts, every secret from the Secret (as a file), and the migration step a command the image has.

const root = path.join(__dirname, '..', '..');
const DIR = path.join(root, 'deploy', 'kubernetes');
const MODELS = { Deployment, ConfigMap, Secret, Service } as const;

const documents: { file: string; obj: any }[] = fs
  .readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((file) =>
    parseAllDocuments(fs.readFileSync(path.join(DIR, file), 'utf8')).map((d) => {
      expect([file, d.errors]).toEqual([file, []]);
      return { file, obj: d.toJS() };
    }),
  );
const ofKind = (kind: string) => documents.filter((d) => d.obj.kind === kind).map((d) => d.obj);

test('every document validates against its Kubernetes schema', () => {
  expect(documents.length).toBeGreaterThanOrEqual(5);
  for (const { file, obj } of documents) {
    const Model = MODELS[obj.kind as keyof typeof MODELS];
    expect([file, obj.kind, Model !== undefined]).toEqual([file, obj.kind, true]);
    expect(() => new Model(obj).validate()).not.toThrow();
  }
  // The validator does refuse a broken document (so the loop above cannot pass by checking nothing).
  const broken = structuredClone(ofKind('Deployment')[0]);
  broken.spec.template.spec.containers[0].ports[0].containerPort = 'eighty';
  expect(() => new Deployment(broken).validate()).toThrow();
});

test('an api and a worker Deployment, with the probes docs/operations.md advises; the Service selects the api', () => {
  const deployments = ofKind('Deployment');
  const roles = deployments.map((d) => d.spec.template.spec.containers[0].args);
  expect(roles).toEqual(
    expect.arrayContaining([
      ['--role', 'api'],
      ['--role', 'worker'],
    ]),
  );
  for (const d of deployments) {
    const c = d.spec.template.spec.containers[0];
    expect(c.readinessProbe.httpGet.path).toBe('/readyz');
    expect(c.livenessProbe).toMatchObject({ httpGet: { path: '/healthz' }, timeoutSeconds: 3, failureThreshold: 3 });
    expect(d.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(30);
  }
  const [service] = ofKind('Service');
  const api = deployments.find((d) => d.spec.template.spec.containers[0].args[1] === 'api');
  expect(api.spec.template.metadata.labels).toMatchObject(service.spec.selector);
  const worker = deployments.find((d) => d.spec.template.spec.containers[0].args[1] === 'worker');
  expect(worker.spec.template.metadata.labels).not.toMatchObject(service.spec.selector);
});

test('settings the service accepts, secrets from the mounted Secret, and a migration step the image has', () => {
  const [settings] = ofKind('ConfigMap');
  const [secret] = ofKind('Secret');
  const data: Record<string, string> = settings.data;
  const files = Object.entries(data).filter(([k]) => k.endsWith('_FILE'));
  // No secret in the ConfigMap: each secret setting is a file of the Secret, named as its variable.
  for (const name of SECRET_SETTINGS) expect([name, name in data]).toEqual([name, false]);
  expect(Object.keys(secret.stringData).sort()).toEqual(files.map(([k]) => k.slice(0, -'_FILE'.length)).sort());
  for (const d of ofKind('Deployment')) {
    const pod = d.spec.template.spec;
    const secretVolume = pod.volumes.find((v: any) => v.secret?.secretName === secret.metadata.name);
    for (const c of [...pod.initContainers, ...pod.containers]) {
      expect(c.envFrom).toEqual([{ configMapRef: { name: settings.metadata.name } }]);
      const mount = c.volumeMounts.find((m: any) => m.name === secretVolume.name);
      for (const [name, file] of files) expect([name, file]).toEqual([name, `${mount.mountPath}/${name.slice(0, -5)}`]);
    }
    // The init container runs the migrations with a command the image has (dist/ is src/ compiled).
    const [migrate] = pod.initContainers;
    expect(migrate.command).toEqual(['node', 'dist/src/cli/migrate.js']);
    expect(fs.existsSync(path.join(root, 'src', 'cli', 'migrate.ts'))).toBe(true);
    expect(migrate.image).toBe(pod.containers[0].image);
  }
  // With the secrets in place as the pods see them, the settings load.
  const env: Record<string, string> = Object.fromEntries(Object.entries(data).filter(([k]) => !k.endsWith('_FILE')));
  for (const [name, value] of Object.entries<string>(secret.stringData)) env[name] = value;
  expect(loadConfig(env)).toMatchObject({
    role: 'all',
    trustProxy: true,
    storage: { backend: 's3', bucket: 'assets' },
  });
});
