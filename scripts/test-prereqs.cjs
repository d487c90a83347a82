'use strict';
// Run by `npm test` before jest: the suite needs Chromium (browser tests), ffmpeg (video thumbnails), nginx (the
// deployment's proxy), promtool (its alert rules) and a local Ceph (radosgw, for the S3 tests). Finds them; as root on Debian/Ubuntu installs what is missing with apt-get; anywhere
// else stops at once with one message naming what is missing and how to get it, instead of failing tests later.
// TEST_PREREQS=off skips the check (for a run of tests that need none of them).
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const GROUPS = [
  {
    what: 'Chromium (the browser tests of /ui and the GraphQL IDE)',
    found: () => chromium() !== undefined,
    apt: { packages: ['chromium'], recommends: true },
    elsewhere: 'install Chromium and set CHROMIUM_PATH to its binary',
  },
  {
    what: 'ffmpeg (video thumbnails)',
    found: () => onPath('ffmpeg'),
    apt: { packages: ['ffmpeg'], recommends: true },
    elsewhere: "install ffmpeg from the system's packages so it is on the PATH",
  },
  {
    what: "nginx (deploy-proxy.test runs the deployment's own deploy/nginx.conf)",
    found: () => onPath('nginx'),
    apt: { packages: ['nginx'], recommends: false },
    elsewhere: "install nginx from the system's packages",
  },
  {
    what: 'promtool (the Prometheus alert rules of deploy/prometheus/ are checked with it)',
    found: () => onPath('promtool'),
    apt: { packages: ['prometheus'], recommends: false },
    elsewhere: "install Prometheus (its promtool) from the system's packages or prometheus.io",
  },
  {
    what: 'Ceph: ceph-mon, ceph-osd, radosgw (the S3 tests run against a local Ceph RGW)',
    found: () => ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'ceph', 'monmaptool'].every(onPath),
    apt: { packages: ['ceph-mon', 'ceph-osd', 'radosgw', 'ceph-common'], recommends: false },
    elsewhere: "install Ceph's monitor, OSD and radosgw from the system's packages",
  },
];

function onPath(name) {
  const dirs = (process.env.PATH || '/usr/bin:/bin').split(path.delimiter);
  return [...dirs, '/usr/sbin', '/sbin'].some((d) => isExecutable(path.join(d, name)));
}

/** The Chromium the browser tests launch: CHROMIUM_PATH, else /usr/bin/chromium (test/integration/ui.test.ts). */
function chromium() {
  const candidate = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
  return isExecutable(candidate) ? candidate : undefined;
}

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function canApt() {
  return process.platform === 'linux' && process.getuid?.() === 0 && onPath('apt-get');
}

function apt(args) {
  execFileSync('apt-get', args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    maxBuffer: 64 * 1024 * 1024,
  });
}

function install(groups) {
  const names = groups.flatMap((g) => g.apt.packages);
  process.stderr.write(`test prerequisites: installing ${names.join(' ')} with apt-get (once) ...\n`);
  const steps = [['update', '-qq']];
  const withRecommends = groups.filter((g) => g.apt.recommends).flatMap((g) => g.apt.packages);
  const without = groups.filter((g) => !g.apt.recommends).flatMap((g) => g.apt.packages);
  if (withRecommends.length > 0) steps.push(['install', '-y', '-qq', ...withRecommends]);
  if (without.length > 0) steps.push(['install', '-y', '-qq', '--no-install-recommends', ...without]);
  for (const args of steps) {
    try {
      apt(args);
    } catch (err) {
      const out = String(err.stderr || err.stdout || err.message)
        .trim()
        .split('\n')
        .slice(-5)
        .join('\n');
      process.stderr.write(`apt-get ${args[0]} failed:\n${out}\n`);
    }
  }
}

function aptCommands(groups) {
  const withRecommends = groups.filter((g) => g.apt.recommends).flatMap((g) => g.apt.packages);
  const without = groups.filter((g) => !g.apt.recommends).flatMap((g) => g.apt.packages);
  const cmds = [];
  if (withRecommends.length > 0) cmds.push(`apt-get install ${withRecommends.join(' ')}`);
  if (without.length > 0) cmds.push(`apt-get install --no-install-recommends ${without.join(' ')}`);
  return cmds.join(' && ');
}

function main() {
  if (process.env.TEST_PREREQS === 'off') return;
  let missing = GROUPS.filter((g) => !g.found());
  if (missing.length === 0) return;
  const tried = canApt();
  if (tried) {
    install(missing);
    missing = GROUPS.filter((g) => !g.found());
    if (missing.length === 0) return;
  }
  const lines = [
    'npm test needs programs that are not installed:',
    ...missing.map((g) => `  - ${g.what}`),
    `On Debian or Ubuntu, as root: apt-get update && ${aptCommands(missing)}`,
    tried ? '  (apt-get could not install them: see above)' : '  (run as root, npm test does this itself)',
    `Elsewhere: ${missing.map((g) => g.elsewhere).join('; ')}.`,
    'TEST_PREREQS=off skips this check (the tests that need them will fail).',
  ];
  process.stderr.write(`${lines.join('\n')}\n`);
  process.exitCode = 1;
}

main();
