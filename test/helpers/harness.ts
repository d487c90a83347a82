import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { loadConfig } from '../../src/config';
import { createLogger, type Logger } from '../../src/infra/logger';
import { startService, type RunningService } from '../../src/server';
import { validatedFetch } from './openapi-validator';

export const KEYS = {
  alice: 'alice-key-0001',
  bob: 'bob-key-000002',
  admin: 'admin-key-0001',
} as const;

/** A fresh database cloned from the migrated template of global-setup. */
export async function createTestDatabase(): Promise<string> {
  const template = process.env.TEST_PG_TEMPLATE_URL;
  if (!template) throw new Error('TEST_PG_TEMPLATE_URL is unset: run through jest (global-setup)');
  const name = `t_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: template.replace(/\/template_assets$/, '/postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE template_assets`);
  } finally {
    await admin.end();
  }
  return template.replace(/\/template_assets$/, `/${name}`);
}

export interface TestService extends RunningService {
  url: string;
  dataDir: string;
  databaseUrl: string;
  /** fetch against the service with a key (alice's by default; null for none). */
  fetch(pathname: string, init?: RequestInit & { key?: string | null }): Promise<Response>;
}

/**
 * The real service (migrations, container, job workers, HTTP on an ephemeral port) on its own database and a temp
 * data dir. `env` adds or overrides settings. With `validateResponses`, every JSON answer `fetch` gets is checked
 * against openapi.yaml (test/helpers/openapi-validator.ts) before the test sees it.
 */
export async function startTestService(
  env: Record<string, string> = {},
  opts: {
    databaseUrl?: string;
    dataDir?: string;
    validateResponses?: boolean;
    logger?: Logger;
    /** receives the service's log lines */ log?: (line: string) => void;
  } = {},
): Promise<TestService> {
  const databaseUrl = opts.databaseUrl ?? (await createTestDatabase());
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-data-'));
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    API_KEYS: `alice:${KEYS.alice},bob:${KEYS.bob}`,
    ADMIN_API_KEYS: `admin:${KEYS.admin}`,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...env,
  });
  const svc = await startService(config, opts.logger ?? createLogger(config.logLevel, {}, opts.log));
  const url = svc.url!;
  return {
    ...svc,
    url,
    dataDir,
    databaseUrl,
    fetch: (pathname, init = {}) => {
      const { key = KEYS.alice, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key !== null && !headers.has('x-api-key')) headers.set('x-api-key', key);
      const res = fetch(url + pathname, { ...rest, headers });
      return opts.validateResponses ? res.then((r) => validatedFetch(rest.method ?? 'GET', url + pathname, r)) : res;
    },
    stop: async () => {
      await svc.stop();
      if (!opts.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A media URL (`preview_url`, `thumbnail_url`) as the service gives it to `owner`: with the owner's read grant of the
 * current window (MEDIA_URL_GRANTS, on by default; every instance on one database mints the same token).
 */
export const granted = (svc: RunningService, url: string, owner = 'alice'): string =>
  `${url}?access=${svc.container.grants.mint(owner).token}`;

/** A multipart body for POST /api/assets. */
export function uploadForm(
  file: Buffer | string | undefined,
  fields: Record<string, string | string[]> = {},
  fileName = 'file.bin',
): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) for (const one of Array.isArray(v) ? v : [v]) form.append(k, one);
  if (file !== undefined)
    form.append('file', new Blob([typeof file === 'string' ? Buffer.from(file) : file]), fileName);
  return form;
}

export function blake3Of(buf: Buffer): string {
  const { Blake3Hasher } = require('@napi-rs/blake-hash') as typeof import('@napi-rs/blake-hash');
  return 'blake3:' + new Blake3Hasher().update(buf).digest('hex');
}

export const sha256Of = (buf: Buffer): string => 'sha256:' + crypto.createHash('sha256').update(buf).digest('hex');

/** Polls `check` until it returns a value other than undefined (never a fixed sleep). */
export async function waitFor<T>(
  check: () => Promise<T | undefined>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${opts.what ?? 'a condition'}`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
  }
}

/** The JSON body of a response, loosely typed for assertions. */
export const json = async (res: Response): Promise<any> => res.json();

/** Rows of one SQL statement on `databaseUrl`, on a connection of its own (a test's look behind the API). */
export async function queryRows<T = Record<string, unknown>>(
  databaseUrl: string,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    return (await db.query(text, values)).rows as T[];
  } finally {
    await db.end();
  }
}

/**
 * POST /api/assets with a multipart head announcing `contentLength` bytes and no byte of the body sent: what the
 * service answers at the head (a refusal must come before any body byte is stored).
 */
export function uploadHeadOnly(
  baseUrl: string,
  key: string,
  contentLength: number,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}/api/assets`, {
      method: 'POST',
      headers: {
        'x-api-key': key,
        'content-type': 'multipart/form-data; boundary=x',
        'content-length': String(contentLength),
      },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}
