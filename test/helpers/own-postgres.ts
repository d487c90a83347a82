import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { binDir, freePort, runAsIds } from '../../src/infra/embedded-postgres';
import { createLogger } from '../../src/infra/logger';
import { migrate } from '../../src/infra/migrate';
import { JobQueue } from '../../src/infra/queue';
import { waitFor } from './harness';

/**
 * A PostgreSQL cluster of its own (from the embedded binaries), on a fixed port, that a test may stop, kill, freeze
 * and start again without touching the shared template cluster of the run.
 */
export interface OwnPostgres {
  url: string;
  start(): Promise<void>;
  /** Fast shutdown (SIGINT), waited for. */
  stop(): Promise<void>;
  /** SIGKILL of the postmaster and every backend. */
  kill(): Promise<void>;
  /** SIGSTOP / SIGCONT of the postmaster and every backend. */
  freeze(): void;
  thaw(): void;
  /** Starts it again unless it runs. */
  ensureRunning(): Promise<void>;
  /** Stops it and removes its files. */
  destroy(): Promise<void>;
}

export async function ownPostgres(): Promise<OwnPostgres> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-own-pg-'));
  fs.chmodSync(root, 0o755);
  const dir = path.join(root, 'data');
  const ids = runAsIds();
  fs.mkdirSync(dir, { mode: 0o700 });
  if (ids) fs.chownSync(dir, ids.uid, ids.gid);
  const pw = path.join(root, 'pw');
  fs.writeFileSync(pw, 'postgres\n', { mode: 0o644 });
  execFileSync(
    path.join(binDir(), 'initdb'),
    [
      `--pgdata=${dir}`,
      '--auth=scram-sha-256',
      '--username=postgres',
      `--pwfile=${pw}`,
      '--locale=C',
      '--encoding=UTF8',
    ],
    {
      ...(ids ?? {}),
      stdio: 'ignore',
      env: { ...process.env, LC_ALL: 'C' },
    },
  );
  const port = await freePort();
  const base = `postgresql://postgres:postgres@127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const pids = (): number[] => {
    if (!child?.pid) return [];
    const kids = execFileSync('sh', ['-c', `pgrep -P ${child.pid} || true`], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
    return [child.pid, ...kids];
  };
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of pids()) {
      try {
        process.kill(pid, sig);
      } catch {
        // already gone
      }
    }
  };
  const running = () => !!child && child.exitCode === null && child.signalCode === null;
  const waitExit = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise((r) => c.once('exit', r));
  };
  const pg: OwnPostgres = {
    url: `${base}/assets`,
    start: async () => {
      const log = fs.openSync(path.join(root, 'log'), 'a');
      if (ids) fs.fchownSync(log, ids.uid, ids.gid);
      child = spawn(
        path.join(binDir(), 'postgres'),
        ['-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
        {
          ...(ids ?? {}),
          stdio: ['ignore', log, log],
          env: { ...process.env, LC_ALL: 'C' },
        },
      );
      fs.closeSync(log);
      await waitFor(
        async () => {
          const c = new Client({ connectionString: `${base}/postgres`, connectionTimeoutMillis: 1000 });
          try {
            await c.connect();
            return true;
          } catch {
            return undefined;
          } finally {
            await c.end().catch(() => undefined);
          }
        },
        { timeoutMs: 30_000, what: 'own PostgreSQL to start' },
      );
    },
    stop: async () => {
      child?.kill('SIGINT');
      await waitExit();
    },
    kill: async () => {
      signal('SIGKILL');
      await waitExit();
      fs.rmSync(path.join(dir, 'postmaster.pid'), { force: true });
    },
    freeze: () => {
      signal('SIGSTOP');
    },
    thaw: () => {
      signal('SIGCONT');
    },
    ensureRunning: async () => {
      if (!running()) await pg.start();
    },
    destroy: async () => {
      pg.thaw();
      await pg.stop();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
  await pg.start();
  const admin = new Client({ connectionString: `${base}/postgres` });
  await admin.connect();
  await admin.query('CREATE DATABASE assets');
  await admin.end();
  const logger = createLogger('warn');
  await migrate(pg.url, logger);
  const queue = await JobQueue.create(pg.url, logger);
  await queue.start({ workers: false });
  await queue.stop();
  return pg;
}
