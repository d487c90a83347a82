import crypto from 'node:crypto';
import { Client } from 'pg';
import { json, KEYS, startTestService, uploadForm, type TestService } from './harness';

type Json = any;

/**
 * The set-up the Comfy suites share (comfy-assets, comfy-august): the service with every JSON answer validated against
 * openapi.yaml, a client of its database, and the REST calls they make. `svc` and `db` are set in the suite's
 * beforeAll; the calls read them when they run.
 */
export function comfySuite(env: Record<string, string> = {}) {
  const suite = {
    svc: undefined as unknown as TestService,
    db: undefined as unknown as Client,
    /** A multipart upload that must be accepted (200 or 201); its asset JSON. */
    async upload(
      body: Buffer | string,
      fields: Record<string, string | string[]> = {},
      name = 'file.bin',
      key: string = KEYS.alice,
    ): Promise<Json> {
      const res = await suite.svc.fetch('/api/assets', { method: 'POST', body: uploadForm(body, fields, name), key });
      expect([200, 201]).toContain(res.status);
      return json(res);
    },
    async get(path: string, key: string = KEYS.alice): Promise<{ status: number; body: Json }> {
      const res = await suite.svc.fetch(path, { key });
      return { status: res.status, body: await json(res) };
    },
    /** A JSON body sent with `method`; the answer's status and JSON (none for a 204). */
    async send(method: string, path: string, body: unknown, key: string = KEYS.alice) {
      const res = await suite.svc.fetch(path, {
        method,
        key,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: res.status === 204 ? undefined : await json(res) };
    },
    /** Bytes no other upload has (new content each call). */
    unique: (label = 'x') => Buffer.from(`${label}-${crypto.randomUUID()}`),
  };
  beforeAll(async () => {
    suite.svc = await startTestService(env, { validateResponses: true });
    suite.db = new Client({ connectionString: suite.svc.databaseUrl });
    await suite.db.connect();
  });
  afterAll(async () => {
    await suite.db?.end();
    await suite.svc?.stop();
  });
  return suite;
}
