import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig, SECRET_SETTINGS } from '../../src/config';

// Every secret setting can come from a file (`<NAME>_FILE`, as Docker and Kubernetes mount secrets): the file's
// content with its trailing line break removed; both set, or a file that cannot be read, stops the start.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'config-secrets-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A file holding `content`, as `kubectl create secret` or `echo > file` would write it. */
const secretFile = (name: string, content: string): string => {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
};

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('secrets from files', () => {
  test('each secret setting reads <NAME>_FILE, trailing line breaks trimmed', () => {
    const c = loadConfig({
      DATABASE_URL_FILE: secretFile('db', 'postgres://u:p@db:5432/assets\n'),
      API_KEYS_FILE: secretFile('keys', 'alice:alice-secret-1\r\n'),
      ADMIN_API_KEYS_FILE: secretFile('admin', 'root:root-secret-1'),
      HF_TOKEN_FILE: secretFile('hf', 'hf_abc\n\n'),
      CIVITAI_API_TOKEN_FILE: secretFile('civitai', 'civ-123\n'),
      METRICS_TOKEN_FILE: secretFile('metrics', 'metrics-tok\n'),
    });
    expect(c.databaseUrl).toBe('postgres://u:p@db:5432/assets');
    expect(c.apiKeys).toEqual([
      { owner: 'alice', key: 'alice-secret-1', admin: false },
      { owner: 'root', key: 'root-secret-1', admin: true },
    ]);
    expect(c.huggingFace.token).toBe('hf_abc');
    expect(c.civitai.token).toBe('civ-123');
    expect(c.metrics.token).toBe('metrics-tok');
  });

  test('S3 keys from files are handed to the client; without a file the SDK chain is left alone', () => {
    const s3 = { STORAGE_BACKEND: 's3', S3_BUCKET: 'b' };
    const c = loadConfig({
      ...s3,
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY_FILE: secretFile('aws', 'wJalrXUtnFEMI\n'),
    });
    expect(c.storage).toMatchObject({ credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI' } });
    const plain = loadConfig({ ...s3, AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'x' });
    expect('credentials' in plain.storage).toBe(false);
    expect(problemsOf({ ...s3, AWS_SECRET_ACCESS_KEY_FILE: secretFile('aws2', 'k') })).toEqual([
      expect.stringContaining('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY'),
    ]);
  });

  test('both set, and unreadable files, are listed with the other bad settings', () => {
    const problems = problemsOf({
      API_KEYS: 'alice:alice-secret-1',
      API_KEYS_FILE: secretFile('keys2', 'alice:alice-secret-2'),
      METRICS_TOKEN_FILE: path.join(dir, 'missing'),
      HF_TOKEN_FILE: dir,
      PORT: 'eighty',
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        'API_KEYS and API_KEYS_FILE are both set: set one of them',
        expect.stringMatching(/^METRICS_TOKEN_FILE=".*missing": cannot read the file \(ENOENT\)$/),
        expect.stringMatching(/^HF_TOKEN_FILE=.*: cannot read the file \(EISDIR\)$/),
        expect.stringContaining('PORT='),
      ]),
    );
    expect(problems).toHaveLength(4);
    // The content of a secret file never appears in a message.
    expect(problems.join('\n')).not.toContain('alice-secret');
  });

  test('a file read through _FILE is validated like the variable itself', () => {
    expect(problemsOf({ DATABASE_URL_FILE: secretFile('db2', 'mysql://x\n') })).toEqual([
      'DATABASE_URL: expected a postgres:// or postgresql:// URL',
    ]);
  });

  test('unset _FILE variables change nothing', () => {
    expect(loadConfig({})).toEqual(loadConfig(Object.fromEntries(SECRET_SETTINGS.map((n) => [`${n}_FILE`, '']))));
  });
});
