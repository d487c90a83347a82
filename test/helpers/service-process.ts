import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/infra/embedded-postgres';
import { KEYS, waitFor } from './harness';

/** The compiled service (dist/, built by `npm test`; run `npm run build` before running a single file). */
export const MAIN = path.join(__dirname, '..', '..', 'dist', 'src', 'main.js');

export interface ServiceProcess {
  proc: ChildProcess;
  /** Base URL (a worker serves /healthz, /readyz and /metrics only). */
  url: string;
  logs(): Record<string, unknown>[];
  stderr(): string;
  fetch(pathname: string, init?: RequestInit & { key?: string | null }): Promise<Response>;
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `node dist/src/main.js [--role ROLE]` with `env` (plus test keys and JSON logs) and waits until its /readyz
 * answers 200 (every role serves it).
 */
export async function spawnService(
  env: Record<string, string>,
  opts: { role?: 'all' | 'api' | 'worker' } = {},
): Promise<ServiceProcess> {
  if (!fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first (npm test does)`);
  const port = await freePort();
  const args = opts.role ? [MAIN, '--role', opts.role] : [MAIN];
  const proc = spawn(process.execPath, args, {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? os.tmpdir(),
      HOST: '127.0.0.1',
      PORT: String(port),
      API_KEYS: `alice:${KEYS.alice},bob:${KEYS.bob}`,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const child: ServiceProcess = {
    proc,
    url,
    logs: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    stderr: () => err,
    fetch: (pathname, init = {}) => {
      const { key = KEYS.alice, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key !== null) headers.set('x-api-key', key);
      return fetch(url + pathname, { ...rest, headers });
    },
    kill: async (signal) => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    },
  };
  await waitFor(
    async () => {
      if (proc.exitCode !== null) throw new Error(`service exited early: ${err}`);
      return fetch(`${url}/readyz`).then(
        (r) => (r.status === 200 ? true : undefined),
        () => undefined,
      );
    },
    { timeoutMs: 90_000, intervalMs: 200, what: 'the service to be ready' },
  );
  return child;
}
