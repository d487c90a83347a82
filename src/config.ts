import fs from 'node:fs';
import path from 'node:path';
import { trimEnd } from './domain/input';

/** Every setting of the service, parsed once at start from the environment. */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** External PostgreSQL; undefined means "start the embedded one under dataDir". */
  readonly databaseUrl: string | undefined;
  readonly storage: StorageConfig;
  readonly apiKeys: readonly BootstrapKey[];
  readonly huggingFace: { readonly endpoint: string; readonly token: string | undefined };
  readonly civitai: { readonly endpoint: string; readonly token: string | undefined };
  readonly downloadBlockPrivateNetworks: boolean;
  readonly maxUploadBytes: number;
  readonly logLevel: LogLevel;
  /** Seconds an unreferenced content stays before its blob is removed. */
  readonly contentGcGraceSeconds: number;
  /** Days a blob no row names stays in the quarantine before it is removed for good (longer than any backup kept). */
  readonly orphanRetentionDays: number;
  /** Which parts this process runs: HTTP, job workers, or both. */
  readonly role: 'all' | 'api' | 'worker';
  /** Size of the PostgreSQL connection pool used for requests. */
  readonly databasePoolSize: number;
  /** Thumbnails: images with more pixels are refused unread; jobs at a time per instance. */
  /**
   * THUMBNAIL_LOOKUP_CACHE: the thumbnail route keeps its asset → content lookups while a LISTEN connection hears
   * every delete (false where LISTEN does not work, e.g. behind a transaction-pooling PgBouncer).
   */
  readonly thumbnails: { readonly maxPixels: number; readonly concurrency: number; readonly lookupCache: boolean };
  /** PUBLIC_URL: absolute base of URLs in responses (`preview_url`); undefined: built from each request. */
  readonly publicUrl: string | undefined;
  /** TRUST_PROXY: honour X-Forwarded-Proto/-Host (and the client address) from a reverse proxy. */
  readonly trustProxy: boolean;
  /** Seconds an unfinished resumable (tus) upload is kept (Upload-Expires). */
  readonly uploadExpirySeconds: number;
  /** Seconds an export archive is kept. */
  readonly exportTtlSeconds: number;
  /** `GET /metrics` and request instrumentation. */
  readonly metrics: { readonly enabled: boolean; readonly token: string | undefined };
  /** Server-side timeout of every statement of the pool (a frozen database answers 503, not a hang); 0: none. */
  readonly databaseStatementTimeoutMs: number;
  /** Connecting to PostgreSQL, or waiting for a pooled connection. */
  readonly databaseConnectTimeoutMs: number;
  /** /readyz fails (503, check `storage`) when the blob store has less free space than this (fs only). */
  readonly storageMinFreeBytes: number;
  /** A request body that sends no byte for this long is cut (408); 0: never. */
  readonly bodyIdleTimeoutMs: number;
  /**
   * A request body slower than this on average over `bodyMinRateWindowMs` is cut (408), as Apache's mod_reqtimeout
   * MinRate: a client trickling a byte now and then holds a socket, a temporary blob and an upload slot; 0: never.
   */
  readonly bodyMinBytesPerSecond: number;
  readonly bodyMinRateWindowMs: number;
  /** An answer the client reads no byte of for this long (its socket full) is cut; 0: never. */
  readonly sendIdleTimeoutMs: number;
  /** On shutdown, in-flight requests get this long to finish before they are answered 503 and closed. */
  readonly shutdownGraceMs: number;
  /** Requests per key per minute, per instance; 0: no limit. */
  readonly rateLimitPerMinute: number;
  /** Failed authentications per client address per minute, per instance (then 429 before any lookup). */
  readonly authFailuresPerMinute: number;
  /** CORS_ORIGINS: origins whose pages may call the API from a browser (`*`: any); empty: none. */
  readonly corsOrigins: '*' | readonly string[];
  /** MEDIA_URL_GRANTS: `preview_url` and `thumbnail_url` carry a read grant (`<img src>` loads them without a key). */
  readonly mediaUrlGrants: boolean;
  /** IMPORT_ROOTS and IMPORT_ROOTS_OWNER: folders of this machine that POST /api/assets/seed imports. */
  readonly importRoots: ImportRootsConfig;
  /** BLAKE3 through the native addon (WebAssembly where it does not load), or always WebAssembly. */
  readonly blake3: 'native' | 'wasm';
  /** GIT_COMMIT: the commit the build came from (set when the image is built); else `.git`, when there is one. */
  readonly gitCommit: string | undefined;
  /** OpenTelemetry tracing from the standard `OTEL_*` variables; undefined: off, and no OpenTelemetry code is loaded. */
  readonly tracing: TracingConfig | undefined;
}

/** Where spans go when tracing is on (src/infra/tracing.ts). */
export interface TracingConfig {
  /** OTEL_SERVICE_NAME: the `service.name` of every span. */
  readonly serviceName: string;
  /** OTEL_TRACES_EXPORTER: OTLP over HTTP, and/or the process's standard output (for a look while developing). */
  readonly exporters: readonly TraceExporterName[];
  /** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL. */
  readonly protocol: OtlpProtocol;
  /**
   * The full URL spans are posted to: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT
   * with `/v1/traces` appended (as the OTLP exporter specification says); undefined: the exporter's default
   * (http://localhost:4318/v1/traces).
   */
  readonly otlpUrl: string | undefined;
}

export const TRACE_EXPORTERS = ['otlp', 'console'] as const;
export type TraceExporterName = (typeof TRACE_EXPORTERS)[number];
/** gRPC is left out: it would bring @grpc/grpc-js for a transport every collector also offers over HTTP. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/** The names a root of IMPORT_ROOTS may have: the top folders of a ComfyUI tree. */
export const IMPORT_ROOT_NAMES = ['models', 'input', 'output'] as const;
export type ImportRootName = (typeof IMPORT_ROOT_NAMES)[number];

export interface ImportRootsConfig {
  /** Absolute folders by root name; empty when IMPORT_ROOTS is unset. */
  readonly roots: Readonly<Partial<Record<ImportRootName, string>>>;
  /**
   * The roots written `name=/path:in-place`: indexed where they are (hashed, served from their files, never copied,
   * written, renamed or deleted); the others are copied into the store.
   */
  readonly inPlace: ReadonlySet<ImportRootName>;
  /** The owner whose keys may start an import (besides admin keys), and who owns what it imports. */
  readonly owner: string | undefined;
}

export type StorageConfig =
  | { readonly backend: 'fs' }
  | {
      readonly backend: 's3';
      readonly bucket: string;
      readonly endpoint: string | undefined;
      readonly region: string;
      readonly forcePathStyle: boolean;
      readonly prefix: string;
      readonly presignedDownloads: boolean;
      /** How long a connection to the store may be silent in the middle of a body, either way (S3_TIMEOUT_MS). */
      readonly timeoutMs?: number;
      /**
       * Keys read from `AWS_*_FILE`; absent (the usual case), the AWS SDK finds credentials by its own chain, which
       * does not know the `_FILE` convention.
       */
      readonly credentials?: S3Credentials;
    };

export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface BootstrapKey {
  readonly owner: string;
  readonly key: string;
  readonly admin: boolean;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/**
 * The settings that hold secrets: each can also be given as `<NAME>_FILE`, the path of a file holding the value (a
 * Docker or Kubernetes secret mounted as a file, so the value is in no process environment or `docker inspect`).
 */
export const SECRET_SETTINGS = [
  'DATABASE_URL',
  'API_KEYS',
  'ADMIN_API_KEYS',
  'HF_TOKEN',
  'CIVITAI_API_TOKEN',
  'METRICS_TOKEN',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
] as const;

/** The AWS keys given through `_FILE`: the SDK reads only the plain variables, so these are handed to it. */
const AWS_KEY_SETTINGS = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'] as const;

/**
 * `env` with the value of every `<NAME>_FILE` put in place of `<NAME>` (the file's content, trailing line breaks
 * removed). Both set, or a file that cannot be read, is a problem; `env` itself is returned when no `_FILE` is set.
 */
function withSecretFiles(env: Env, problems: string[]): { env: Env; fromFiles: ReadonlySet<string> } {
  const values: Record<string, string> = {};
  for (const name of SECRET_SETTINGS) {
    const file = env[`${name}_FILE`]?.trim();
    if (!file) continue;
    if (env[name] !== undefined && env[name].trim() !== '') {
      problems.push(`${name} and ${name}_FILE are both set: set one of them`);
      continue;
    }
    try {
      values[name] = trimEnd(fs.readFileSync(file, 'utf8'), '\r\n');
    } catch (err) {
      // The path is the operator's own; the error code says why (ENOENT, EACCES, EISDIR), never the content.
      const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      problems.push(`${name}_FILE=${JSON.stringify(file)}: cannot read the file (${why})`);
    }
  }
  const fromFiles = new Set(Object.keys(values));
  return { env: fromFiles.size === 0 ? env : { ...env, ...values }, fromFiles };
}

/** Parses the environment; throws one ConfigError that lists every bad variable. */
export function loadConfig(rawEnv: Env = process.env, overrides: Partial<Config> = {}): Config {
  const problems: string[] = [];
  const { env, fromFiles } = withSecretFiles(rawEnv, problems);
  const str = (name: string, dflt: string): string => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? dflt : v.trim();
  };
  const optional = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const int = (name: string, dflt: number, min: number, max: number): number => {
    const raw = optional(name);
    if (raw === undefined) return dflt;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name}=${JSON.stringify(raw)}: expected a whole number from ${min} to ${max}`);
      return dflt;
    }
    return Number(raw);
  };
  const bool = (name: string, dflt: boolean): boolean => {
    const raw = optional(name)?.toLowerCase();
    if (raw === undefined) return dflt;
    if (['true', '1', 'yes', 'on'].includes(raw)) return true;
    if (['false', '0', 'no', 'off'].includes(raw)) return false;
    problems.push(`${name}=${JSON.stringify(env[name])}: expected true or false`);
    return dflt;
  };
  const url = (name: string, dflt: string): string => {
    const raw = str(name, dflt);
    try {
      const u = new URL(raw);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
      return u.origin + trimEnd(u.pathname, '/');
    } catch {
      problems.push(`${name}=${JSON.stringify(raw)}: expected an http(s) URL`);
      return dflt;
    }
  };
  const keys = (name: string, admin: boolean): BootstrapKey[] => {
    const raw = optional(name);
    if (raw === undefined) return [];
    const out: BootstrapKey[] = [];
    for (const entry of raw
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean)) {
      const i = entry.indexOf(':');
      const owner = i >= 0 ? entry.slice(0, i).trim() : 'default';
      const key = i >= 0 ? entry.slice(i + 1).trim() : entry;
      if (!owner || !/^[\w.@-]{1,128}$/.test(owner)) {
        problems.push(`${name}: owner ${JSON.stringify(owner)} must be 1-128 letters, digits, '.', '@', '_' or '-'`);
      } else if (key.length < 8) {
        problems.push(`${name}: the key of owner ${JSON.stringify(owner)} is shorter than 8 characters`);
      } else {
        out.push({ owner, key, admin });
      }
    }
    return out;
  };

  /** Explicit S3 keys only when one came from a file; otherwise the SDK's chain, as before `_FILE` existed. */
  const awsCredentials = (): { credentials?: S3Credentials } => {
    if (!AWS_KEY_SETTINGS.some((n) => fromFiles.has(n))) return {};
    const accessKeyId = optional('AWS_ACCESS_KEY_ID');
    const secretAccessKey = optional('AWS_SECRET_ACCESS_KEY');
    const sessionToken = optional('AWS_SESSION_TOKEN');
    if (!accessKeyId || !secretAccessKey) {
      problems.push('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or their _FILE) are both needed when one is a file');
      return {};
    }
    return { credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } };
  };

  const logLevel = str('LOG_LEVEL', 'info').toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(logLevel))
    problems.push(`LOG_LEVEL=${JSON.stringify(env.LOG_LEVEL)}: expected one of ${LOG_LEVELS.join(', ')}`);

  const backend = str('STORAGE_BACKEND', 'fs').toLowerCase();
  let storage: StorageConfig = { backend: 'fs' };
  if (backend === 's3') {
    const bucket = optional('S3_BUCKET');
    if (!bucket) problems.push('S3_BUCKET: required when STORAGE_BACKEND=s3');
    const endpoint = optional('S3_ENDPOINT');
    if (endpoint !== undefined) url('S3_ENDPOINT', endpoint);
    storage = {
      backend: 's3',
      bucket: bucket ?? '',
      endpoint,
      region: str('S3_REGION', str('AWS_REGION', 'us-east-1')),
      forcePathStyle: bool('S3_FORCE_PATH_STYLE', false),
      prefix: trimEnd(str('S3_PREFIX', '').replace(/^\/+/, ''), '/'),
      presignedDownloads: bool('S3_PRESIGNED_DOWNLOADS', false),
      timeoutMs: int('S3_TIMEOUT_MS', 120_000, 1_000, 3_600_000),
      ...awsCredentials(),
    };
  } else if (backend !== 'fs') {
    problems.push(`STORAGE_BACKEND=${JSON.stringify(env.STORAGE_BACKEND)}: expected fs or s3`);
  }

  const databaseUrl = optional('DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL: expected a postgres:// or postgresql:// URL');
  }

  const role = str('ROLE', 'all').toLowerCase();
  if (!['all', 'api', 'worker'].includes(role))
    problems.push(`ROLE=${JSON.stringify(env.ROLE)}: expected all, api or worker`);

  /** `*`, or comma-separated origins (`scheme://host[:port]`, as a browser sends them in `Origin`). */
  const origins = (name: string): '*' | string[] => {
    const raw = optional(name);
    if (raw === undefined) return [];
    const entries = raw
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean);
    if (entries.length === 1 && entries[0] === '*') return '*';
    const out: string[] = [];
    for (const entry of entries) {
      let origin: string | undefined;
      try {
        const u = new URL(entry);
        const web = u.protocol === 'http:' || u.protocol === 'https:';
        if (web && u.origin.toLowerCase() === entry.replace(/\/$/, '').toLowerCase()) origin = u.origin;
      } catch {
        origin = undefined;
      }
      const bad = `${name}: ${JSON.stringify(entry)} is not an origin (http(s)://host[:port], no path), nor a lone *`;
      if (origin === undefined) problems.push(bad);
      else out.push(origin);
    }
    return out;
  };
  const importRoots = parseImportRoots(optional('IMPORT_ROOTS'), optional('IMPORT_ROOTS_OWNER'), problems);

  const gitCommit = optional('GIT_COMMIT')?.toLowerCase();
  if (gitCommit !== undefined && !/^[0-9a-f]{7,64}$/.test(gitCommit))
    problems.push(`GIT_COMMIT=${JSON.stringify(env.GIT_COMMIT)}: expected a commit id (7 to 64 hex digits)`);

  const tracing = parseTracing(optional, bool, problems);

  const host = str('HOST', '127.0.0.1');
  const config: Config = {
    port: int('PORT', 8080, 0, 65535),
    host,
    dataDir: path.resolve(str('DATA_DIR', './data')),
    databaseUrl,
    storage,
    apiKeys: [...keys('API_KEYS', false), ...keys('ADMIN_API_KEYS', true)],
    huggingFace: { endpoint: url('HF_ENDPOINT', 'https://huggingface.co'), token: optional('HF_TOKEN') },
    civitai: { endpoint: url('CIVITAI_ENDPOINT', 'https://civitai.com'), token: optional('CIVITAI_API_TOKEN') },
    downloadBlockPrivateNetworks: bool('DOWNLOAD_BLOCK_PRIVATE_NETWORKS', true),
    maxUploadBytes: int('MAX_UPLOAD_BYTES', 68719476736, 0, Number.MAX_SAFE_INTEGER),
    logLevel,
    contentGcGraceSeconds: int('CONTENT_GC_GRACE_SECONDS', 3600, 0, 365 * 86400),
    orphanRetentionDays: int('ORPHAN_RETENTION_DAYS', 7, 1, 3650),
    role: role as Config['role'],
    databasePoolSize: int('DATABASE_POOL_SIZE', 10, 1, 1000),
    thumbnails: {
      maxPixels: int('THUMBNAIL_MAX_PIXELS', 100_000_000, 1, 10_000_000_000),
      concurrency: int('THUMBNAIL_CONCURRENCY', 1, 1, 16),
      lookupCache: bool('THUMBNAIL_LOOKUP_CACHE', true),
    },
    publicUrl: optional('PUBLIC_URL') === undefined ? undefined : url('PUBLIC_URL', 'http://localhost'),
    trustProxy: bool('TRUST_PROXY', false),
    // At most a day: the temporary-blob sweeper removes parts not written to for 24 h.
    uploadExpirySeconds: int('UPLOAD_EXPIRY_SECONDS', 86400, 1, 86400),
    exportTtlSeconds: int('EXPORT_TTL_SECONDS', 86400, 1, 365 * 86400),
    metrics: { enabled: bool('METRICS_ENABLED', true), token: optional('METRICS_TOKEN') },
    databaseStatementTimeoutMs: int('DATABASE_STATEMENT_TIMEOUT_MS', 8_000, 0, 3_600_000),
    databaseConnectTimeoutMs: int('DATABASE_CONNECT_TIMEOUT_MS', 5_000, 100, 600_000),
    storageMinFreeBytes: int('STORAGE_MIN_FREE_BYTES', 1024 ** 3, 0, Number.MAX_SAFE_INTEGER),
    bodyIdleTimeoutMs: int('BODY_IDLE_TIMEOUT_MS', 60_000, 0, 86_400_000),
    bodyMinBytesPerSecond: int('BODY_MIN_BYTES_PER_SECOND', 4096, 0, 1_000_000_000),
    bodyMinRateWindowMs: int('BODY_MIN_RATE_WINDOW_MS', 30_000, 100, 3_600_000),
    sendIdleTimeoutMs: int('SEND_IDLE_TIMEOUT_MS', 60_000, 0, 86_400_000),
    shutdownGraceMs: int('SHUTDOWN_GRACE_MS', 30_000, 0, 3_600_000),
    rateLimitPerMinute: int('RATE_LIMIT_PER_MINUTE', 0, 0, 1_000_000_000),
    authFailuresPerMinute: int('AUTH_FAILURES_PER_MINUTE', 60, 1, 1_000_000_000),
    corsOrigins: origins('CORS_ORIGINS'),
    mediaUrlGrants: bool('MEDIA_URL_GRANTS', true),
    blake3: bool('ASSET_SERVICE_FORCE_WASM_BLAKE3', false) ? 'wasm' : 'native',
    importRoots,
    gitCommit,
    tracing,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({ ...config, ...overrides });
}

/**
 * The standard OpenTelemetry variables that decide whether spans are exported: on when an OTLP endpoint is set or
 * OTEL_TRACES_EXPORTER names an exporter, off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. The SDK reads
 * the other standard variables itself (OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_*, OTEL_TRACES_SAMPLER, ...).
 */
function parseTracing(
  optional: (name: string) => string | undefined,
  bool: (name: string, dflt: boolean) => boolean,
  problems: string[],
): TracingConfig | undefined {
  const disabled = bool('OTEL_SDK_DISABLED', false);
  const endpoint = optional('OTEL_EXPORTER_OTLP_ENDPOINT');
  const tracesEndpoint = optional('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const named = (optional('OTEL_TRACES_EXPORTER') ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  const serviceName = optional('OTEL_SERVICE_NAME') ?? 'asset-service';
  const protocolName = optional('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL')
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocolRaw = optional(protocolName) ?? 'http/protobuf';
  const httpUrl = (name: string, raw: string | undefined): string | undefined => {
    if (raw === undefined) return undefined;
    try {
      const u = new URL(raw);
      if (u.protocol === 'http:' || u.protocol === 'https:') return u.href;
    } catch {
      // reported below
    }
    problems.push(`${name}=${JSON.stringify(raw)}: expected an http(s) URL`);
    return undefined;
  };
  const base = httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', endpoint);
  const otlpUrl =
    httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', tracesEndpoint) ??
    (base === undefined ? undefined : `${trimEnd(base, '/')}/v1/traces`);
  if (named.includes('none')) {
    if (named.length > 1) problems.push('OTEL_TRACES_EXPORTER: none cannot be named beside other exporters');
    return undefined;
  }
  const unknown = named.filter((n) => !(TRACE_EXPORTERS as readonly string[]).includes(n));
  if (unknown.length > 0)
    problems.push(`OTEL_TRACES_EXPORTER: ${unknown.join(', ')}: expected ${TRACE_EXPORTERS.join(', ')} or none`);
  const exporters = [...new Set(named.length > 0 ? named : ['otlp'])].filter((n): n is TraceExporterName =>
    (TRACE_EXPORTERS as readonly string[]).includes(n),
  );
  if (disabled || (named.length === 0 && endpoint === undefined && tracesEndpoint === undefined)) return undefined;
  const protocol = protocolRaw.toLowerCase() as OtlpProtocol;
  if (exporters.includes('otlp') && !OTLP_PROTOCOLS.includes(protocol))
    problems.push(`${protocolName}=${JSON.stringify(protocolRaw)}: expected ${OTLP_PROTOCOLS.join(' or ')}`);
  return Object.freeze({ serviceName, exporters: Object.freeze(exporters), protocol, otlpUrl });
}

/**
 * `models=/srv/comfyui/models:in-place,input=/srv/comfyui/input`: each name once, each folder an absolute path, an
 * optional `:in-place` (else the root is copied). An in-place root must be a folder this process can read now: the
 * service serves its files, so one that is missing or unreadable stops the start, as any other bad setting does.
 */
function parseImportRoots(raw: string | undefined, owner: string | undefined, problems: string[]): ImportRootsConfig {
  const roots: Partial<Record<ImportRootName, string>> = {};
  const inPlace = new Set<ImportRootName>();
  for (const entry of (raw ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const i = entry.indexOf('=');
    const name = (i >= 0 ? entry.slice(0, i) : '').trim() as ImportRootName;
    let dir = i >= 0 ? entry.slice(i + 1).trim() : '';
    const here = dir.endsWith(IN_PLACE_SUFFIX);
    if (here) dir = dir.slice(0, -IN_PLACE_SUFFIX.length).trim();
    if (!IMPORT_ROOT_NAMES.includes(name)) {
      problems.push(
        `IMPORT_ROOTS: ${JSON.stringify(entry)} must be <name>=<folder> with a name of ${IMPORT_ROOT_NAMES.join(', ')}`,
      );
    } else if (roots[name] !== undefined) {
      problems.push(`IMPORT_ROOTS: ${name} is named twice`);
    } else if (!path.isAbsolute(dir)) {
      problems.push(`IMPORT_ROOTS: the folder of ${name} must be an absolute path`);
    } else if (here && !readableFolder(dir)) {
      problems.push(`IMPORT_ROOTS: the in-place folder of ${name} (${dir}) does not exist or cannot be read`);
    } else {
      roots[name] = path.resolve(dir);
      if (here) inPlace.add(name);
    }
  }
  if (owner !== undefined && !/^[\w.@-]{1,128}$/.test(owner)) {
    problems.push(`IMPORT_ROOTS_OWNER: ${JSON.stringify(owner)} must be 1-128 letters, digits, '.', '@', '_' or '-'`);
  }
  return Object.freeze({ roots: Object.freeze(roots), inPlace, owner });
}

const IN_PLACE_SUFFIX = ':in-place';

/** A folder this process can list and read. */
function readableFolder(dir: string): boolean {
  try {
    if (!fs.statSync(dir).isDirectory()) return false;
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
