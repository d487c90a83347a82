#!/usr/bin/env node
'use strict';
// A throwaway one-node Ceph cluster (one monitor, one memstore OSD, no manager, no cephx) with radosgw on 127.0.0.1,
// on free ports under a temporary directory. Used by the S3 tests and benchmarks; nothing here is for production.
//
//   node scripts/ceph-rgw.cjs [--watch-pid PID] [--info FILE]
// starts a cluster, prints (and writes to FILE) one JSON line {endpoint, accessKey, secretKey, ...} and keeps running;
// on SIGINT/SIGTERM, when stdin closes, or when process PID ends, it kills the daemons and removes the directory.
// From code: `const { startCluster } = require('./ceph-rgw.cjs')`.
const { spawn, execFile } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const PACKAGES = 'ceph-mon ceph-osd radosgw ceph-common';
const BINARIES = ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'ceph', 'monmaptool'];

/** Throws one message naming the Debian packages when a binary is missing. */
function checkInstalled() {
  const dirs = (process.env.PATH || '/usr/bin').split(path.delimiter);
  const missing = BINARIES.filter((b) => !dirs.some((d) => fs.existsSync(path.join(d, b))));
  if (missing.length > 0) {
    throw new Error(
      `The S3 tests need a local Ceph RGW; ${missing.join(', ')} not found. ` +
        `Install the Debian packages: apt-get install -y --no-install-recommends ${PACKAGES}`,
    );
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function run(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: opts.timeout ?? 60_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stderr}`.trim()));
      else resolve(stdout);
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function configText(o) {
  return `[global]
fsid = ${o.fsid}
mon host = v2:127.0.0.1:${o.monPort}
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
keyring = /dev/null
ms bind msgr1 = false
ms mon client mode = crc
run dir = ${o.dir}/run
admin socket = ${o.dir}/run/$name.asok
log file = ${o.dir}/log/$name.log
pid file = ${o.dir}/run/$name.pid
debug ms = 0
mon allow pool size one = true
mon allow pool delete = true
mon data avail crit = 0
mon data avail warn = 0
mon warn on pool no redundancy = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
paxos propose interval = 0.01
paxos min wait = 0.001

[mon]
mon data = ${o.dir}/mon
mon cluster log file = ${o.dir}/log/cluster.log

[osd]
osd objectstore = memstore
osd data = ${o.dir}/osd
memstore device bytes = ${o.memstoreBytes}
osd max object size = 1073741824

[client]
rgw data = ${o.dir}/rgw
rgw dns name = localhost
rgw enable usage log = false
rgw bucket quota ttl = 0
# Memstore keeps objects in memory: deleted data goes at once, not after RGW's default two hours.
rgw gc obj min wait = 0
rgw gc processor period = 2
`;
}

/**
 * Starts the cluster. `dir` (default: a new temp directory) is removed by stop(). A failed start kills what it
 * started and removes the directory before it throws.
 */
async function startCluster(opts = {}) {
  checkInstalled();
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'ceph-rgw-'));
  const memstoreBytes = opts.memstoreBytes ?? 8 * 1024 ** 3;
  for (const d of ['run', 'log', 'mon', 'osd', 'rgw']) fs.mkdirSync(path.join(dir, d), { recursive: true });
  const children = new Map(); // name → ChildProcess
  const started = Date.now();
  const phases = {};
  const phase = (name) => (phases[name] = Date.now() - started);
  const conf = path.join(dir, 'ceph.conf');
  const cluster = {
    dir,
    conf,
    children,
    pids: () => [...children.values()].map((c) => c.pid),
    ceph: (...args) => run('ceph', ['-c', conf, ...args]),
    admin: (...args) => run('radosgw-admin', ['-c', conf, ...args]),
    /** Another radosgw on its own port, for tests that kill, freeze or restart it. */
    startRgw: (name) => startRgw(cluster, name),
    stop: async () => {
      for (const c of children.values()) killTree(c);
      killListed(path.join(dir, 'extra-pids'));
      await Promise.all([...children.values()].map((c) => exited(c, 10_000)));
      children.clear();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  const spawnDaemon = (name, cmd, args) => {
    const log = fs.openSync(path.join(dir, 'log', `${name}.out`), 'a');
    const child = spawn(cmd, args, { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    children.set(name, child);
    fs.writeFileSync(path.join(dir, 'pids'), cluster.pids().join('\n') + '\n');
    return child;
  };
  cluster.spawnDaemon = spawnDaemon;
  try {
    const monPort = await freePort();
    const fsid = crypto.randomUUID();
    fs.writeFileSync(conf, configText({ fsid, monPort, dir, memstoreBytes }));
    const monmap = path.join(dir, 'monmap');
    await run('monmaptool', ['--create', '--fsid', fsid, '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, monmap]);
    await run('ceph-mon', ['-c', conf, '--mkfs', '-i', 'a', '--monmap', monmap]);
    spawnDaemon('mon.a', 'ceph-mon', ['-c', conf, '-f', '-i', 'a']);
    phase('mon');
    const osdUuid = crypto.randomUUID();
    await cluster.ceph('osd', 'new', osdUuid);
    phase('osd new');
    await run('ceph-osd', ['-c', conf, '-i', '0', '--mkfs', '--osd-uuid', osdUuid]);
    spawnDaemon('osd.0', 'ceph-osd', ['-c', conf, '-f', '-i', '0']);
    phase('osd');
    const rgw = await startRgw(cluster, 'rgw.main');
    cluster.endpoint = rgw.endpoint;
    phase('rgw');
    cluster.accessKey = 'rgwtest';
    cluster.secretKey = crypto.randomBytes(20).toString('hex');
    await cluster.admin(
      'user',
      'create',
      '--uid',
      'test',
      '--display-name',
      'test',
      `--access-key=${cluster.accessKey}`,
      `--secret-key=${cluster.secretKey}`,
    );
    cluster.startMs = Date.now() - started;
    cluster.phases = phases;
    return cluster;
  } catch (err) {
    await cluster.stop().catch(() => undefined);
    throw err;
  }
}

/**
 * Another radosgw on a free port against a running cluster (`info`: its conf and dir), owned by the caller: tests
 * kill, freeze and restart it without disturbing the cluster's own gateway. Its PID is listed for the cluster's stop.
 */
function startGateway(info, name) {
  const spawnDaemon = (n, cmd, args) => {
    const log = fs.openSync(path.join(info.dir, 'log', `${n}.out`), 'a');
    const child = spawn(cmd, args, { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    fs.appendFileSync(path.join(info.dir, 'extra-pids'), `${child.pid}\n`);
    return child;
  };
  return startRgw({ conf: info.conf, spawnDaemon }, name);
}

/** Starts radosgw `name` on a free port and waits until it answers HTTP. */
async function startRgw(cluster, name) {
  const port = await freePort();
  const id = `client.${name}`;
  const args = ['-c', cluster.conf, '-f', '-n', id, `--rgw-frontends=beast endpoint=127.0.0.1:${port}`];
  const rgw = {
    name,
    port,
    endpoint: `http://127.0.0.1:${port}`,
    child: undefined,
    start: async () => {
      rgw.child = cluster.spawnDaemon(name, 'radosgw', args);
      await waitHttp(rgw.endpoint, rgw.child);
    },
    /** SIGKILL and wait for exit. */
    kill: async () => {
      const c = rgw.child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      c.kill('SIGKILL');
      await exited(c, 10_000);
    },
    freeze: () => rgw.child.kill('SIGSTOP'),
    thaw: () => rgw.child.kill('SIGCONT'),
    stop: () => rgw.kill(),
  };
  await rgw.start();
  return rgw;
}

async function waitHttp(endpoint, child, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`radosgw exited (${child.exitCode ?? child.signalCode})`);
    const ok = await fetch(endpoint, { signal: AbortSignal.timeout(2000) }).then(
      () => true,
      () => false,
    );
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`radosgw did not answer at ${endpoint} within ${timeoutMs} ms`);
}

/** Daemons other processes started against this cluster (startGateway) list their PIDs in a file. */
function killListed(file) {
  const pids = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : [];
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGCONT');
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

function killTree(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  } catch {
    /* already gone */
  }
}

function exited(child, timeoutMs) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(resolve, timeoutMs);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

async function main() {
  const argv = process.argv.slice(2);
  const opt = (name) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const infoFile = opt('--info');
  const watchPid = opt('--watch-pid') ? Number(opt('--watch-pid')) : undefined;
  let cluster;
  let stopping = false;
  const stop = async (code) => {
    if (stopping) return;
    stopping = true;
    if (cluster) await cluster.stop().catch(() => undefined);
    process.exit(code);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => void stop(0));
  // Started from a pipe (not detached with stdin ignored): the parent's end closes it.
  if (fs.fstatSync(0).isFIFO()) process.stdin.on('end', () => void stop(0)).resume();
  if (watchPid) {
    setInterval(() => {
      try {
        process.kill(watchPid, 0);
      } catch {
        void stop(0);
      }
    }, 1000);
  }
  try {
    cluster = await startCluster();
  } catch (err) {
    const line = JSON.stringify({ error: err.message });
    if (infoFile) fs.writeFileSync(infoFile, line);
    console.error(err.message);
    process.exit(1);
  }
  const info = {
    pid: process.pid,
    endpoint: cluster.endpoint,
    accessKey: cluster.accessKey,
    secretKey: cluster.secretKey,
    conf: cluster.conf,
    dir: cluster.dir,
    daemonPids: cluster.pids(),
    startMs: cluster.startMs,
    phases: cluster.phases,
  };
  if (infoFile) {
    fs.writeFileSync(`${infoFile}.tmp`, JSON.stringify(info));
    fs.renameSync(`${infoFile}.tmp`, infoFile);
  }
  console.log(JSON.stringify(info));
}

module.exports = { startCluster, startGateway, checkInstalled, PACKAGES };
if (require.main === module) void main();
