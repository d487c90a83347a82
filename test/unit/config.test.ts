import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';

describe('loadConfig', () => {
  test('defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: path.resolve('./data'),
      databaseUrl: undefined,
      storage: { backend: 'fs' },
      apiKeys: [],
      huggingFace: { endpoint: 'https://huggingface.co', token: undefined },
      civitai: { endpoint: 'https://civitai.com', token: undefined },
      downloadBlockPrivateNetworks: true,
      maxUploadBytes: 68719476736,
      logLevel: 'info',
      role: 'all',
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  test('fault settings: defaults, values, and bad values listed', () => {
    expect(loadConfig({})).toMatchObject({
      databaseStatementTimeoutMs: 8_000,
      databaseConnectTimeoutMs: 5_000,
      storageMinFreeBytes: 1024 ** 3,
      bodyIdleTimeoutMs: 60_000,
      shutdownGraceMs: 30_000,
      rateLimitPerMinute: 0,
      authFailuresPerMinute: 60,
      trustProxy: false,
    });
    expect(
      loadConfig({
        BODY_IDLE_TIMEOUT_MS: '1000',
        SHUTDOWN_GRACE_MS: '500',
        RATE_LIMIT_PER_MINUTE: '100',
        TRUST_PROXY: 'true',
        STORAGE_MIN_FREE_BYTES: '0',
      }),
    ).toMatchObject({
      bodyIdleTimeoutMs: 1000,
      shutdownGraceMs: 500,
      rateLimitPerMinute: 100,
      trustProxy: true,
      storageMinFreeBytes: 0,
    });
    const bad = () => loadConfig({ AUTH_FAILURES_PER_MINUTE: '0', BODY_IDLE_TIMEOUT_MS: 'soon', TRUST_PROXY: 'maybe' });
    for (const name of ['BODY_IDLE_TIMEOUT_MS', 'AUTH_FAILURES_PER_MINUTE', 'TRUST_PROXY']) expect(bad).toThrow(name);
  });

  test('ORPHAN_RETENTION_DAYS: 7 days by default, 1 to 3650, anything else refused', () => {
    expect(loadConfig({}).orphanRetentionDays).toBe(7);
    expect(loadConfig({ ORPHAN_RETENTION_DAYS: '30' }).orphanRetentionDays).toBe(30);
    for (const bad of ['0', '-1', '2.5', 'week', '3651'])
      expect(() => loadConfig({ ORPHAN_RETENTION_DAYS: bad })).toThrow(
        `ORPHAN_RETENTION_DAYS=${JSON.stringify(bad)}: expected a whole number from 1 to 3650`,
      );
  });

  test('keys: owner:key entries, default owner, admin keys', () => {
    const c = loadConfig({ API_KEYS: 'alice:alice-secret-1, plainkey-123', ADMIN_API_KEYS: 'root:root-secret-1' });
    expect(c.apiKeys).toEqual([
      { owner: 'alice', key: 'alice-secret-1', admin: false },
      { owner: 'default', key: 'plainkey-123', admin: false },
      { owner: 'root', key: 'root-secret-1', admin: true },
    ]);
  });

  test('every bad variable is listed in one error', () => {
    let err: unknown;
    try {
      loadConfig({
        PORT: 'eighty',
        STORAGE_BACKEND: 'tape',
        MAX_UPLOAD_BYTES: '-1',
        DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'maybe',
        HF_ENDPOINT: 'ftp://x',
        LOG_LEVEL: 'loud',
        DATABASE_URL: 'mysql://x',
        API_KEYS: 'bob:short',
        ROLE: 'boss',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems.join('\n');
    for (const name of [
      'PORT',
      'STORAGE_BACKEND',
      'MAX_UPLOAD_BYTES',
      'DOWNLOAD_BLOCK_PRIVATE_NETWORKS',
      'HF_ENDPOINT',
      'LOG_LEVEL',
      'DATABASE_URL',
      'API_KEYS',
      'ROLE',
    ]) {
      expect(problems).toContain(name);
    }
    expect((err as ConfigError).problems).toHaveLength(9);
  });

  test('PUBLIC_URL (absolute http(s), no trailing slash) and TRUST_PROXY (off by default)', () => {
    expect(loadConfig({})).toMatchObject({ publicUrl: undefined, trustProxy: false });
    expect(loadConfig({ PUBLIC_URL: 'https://assets.example.com/base/', TRUST_PROXY: 'true' })).toMatchObject({
      publicUrl: 'https://assets.example.com/base',
      trustProxy: true,
    });
    expect(() => loadConfig({ PUBLIC_URL: 'assets.example.com', TRUST_PROXY: 'maybe' })).toThrow(
      /PUBLIC_URL[\s\S]*TRUST_PROXY/,
    );
  });

  test('CORS_ORIGINS (origins or *, none by default) and MEDIA_URL_GRANTS (on by default)', () => {
    expect(loadConfig({})).toMatchObject({ corsOrigins: [], mediaUrlGrants: true });
    expect(loadConfig({ CORS_ORIGINS: '*', MEDIA_URL_GRANTS: 'false' })).toMatchObject({
      corsOrigins: '*',
      mediaUrlGrants: false,
    });
    expect(
      loadConfig({ CORS_ORIGINS: ' https://App.example.com , http://127.0.0.1:5173/,https://x.example:8443 ' })
        .corsOrigins,
    ).toEqual(['https://app.example.com', 'http://127.0.0.1:5173', 'https://x.example:8443']);
    let err: unknown;
    try {
      loadConfig({
        CORS_ORIGINS: 'https://ok.example,app.example.com,https://a.example/path,ftp://f.example,*',
        MEDIA_URL_GRANTS: 'sometimes',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    expect(problems.filter((p) => p.startsWith('CORS_ORIGINS'))).toHaveLength(4);
    for (const bad of ['app.example.com', 'https://a.example/path', 'ftp://f.example', '"*"'])
      expect(problems.join('\n')).toContain(bad);
    expect(problems.join('\n')).toContain('MEDIA_URL_GRANTS');
  });

  test('BLAKE3: the native addon by default, WebAssembly when forced', () => {
    expect(loadConfig({}).blake3).toBe('native');
    expect(loadConfig({ ASSET_SERVICE_FORCE_WASM_BLAKE3: '1' }).blake3).toBe('wasm');
    expect(loadConfig({ ASSET_SERVICE_FORCE_WASM_BLAKE3: 'false' }).blake3).toBe('native');
  });

  test('s3 needs a bucket', () => {
    expect(() => loadConfig({ STORAGE_BACKEND: 's3' })).toThrow(/S3_BUCKET/);
    const c = loadConfig({ STORAGE_BACKEND: 's3', S3_BUCKET: 'b', S3_FORCE_PATH_STYLE: 'true', S3_PREFIX: '/assets/' });
    expect(c.storage).toMatchObject({
      backend: 's3',
      bucket: 'b',
      forcePathStyle: true,
      prefix: 'assets',
      region: 'us-east-1',
    });
  });

  test('endpoints lose trailing slashes; mirrors allowed', () => {
    expect(loadConfig({ HF_ENDPOINT: 'http://127.0.0.1:9999/' }).huggingFace.endpoint).toBe('http://127.0.0.1:9999');
  });

  test('metrics: on by default, loopback-only without METRICS_TOKEN', () => {
    expect(loadConfig({}).metrics).toEqual({ enabled: true, token: undefined });
    expect(loadConfig({ METRICS_TOKEN: ' tok-1 ', METRICS_ENABLED: 'false' }).metrics).toEqual({
      enabled: false,
      token: 'tok-1',
    });
    expect(() => loadConfig({ METRICS_ENABLED: 'maybe' })).toThrow(/METRICS_ENABLED/);
  });
});
