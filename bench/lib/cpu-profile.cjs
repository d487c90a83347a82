'use strict';
// Summaries of a V8 `.cpuprofile` (from `node --cpu-prof`): busy time, self time by package and the top functions,
// with µs per request when the number of requests is given.
// Shared by the profile scripts (bench/profiles/profile.cjs, bench/profiles/profile-download.cjs).

function summarize(profile, top, print = console.log, requests = 0) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++)
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (dt[i] ?? 0));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self]
    .filter(([id]) => byId.get(id).callFrame.functionName === '(idle)')
    .reduce((a, [, v]) => a + v, 0);
  const busy = total - idle;
  const fns = new Map();
  const pkgs = new Map();
  for (const [id, t] of self) {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    if (functionName === '(idle)') continue;
    const key = `${functionName || '(anonymous)'} ${short(url)}:${lineNumber + 1}`;
    fns.set(key, (fns.get(key) ?? 0) + t);
    const p = pkgOf(functionName, url);
    pkgs.set(p, (pkgs.get(p) ?? 0) + t);
  }
  const pct = (t) =>
    ((100 * t) / busy).toFixed(1).padStart(5) +
    ' %' +
    (requests ? (t / requests).toFixed(1).padStart(8) + ' µs/req' : '');
  const perRequest = requests
    ? `; ${requests} requests, ${(busy / requests).toFixed(0)} µs busy per request (start-up included)`
    : '';
  print(`busy ${(busy / 1e6).toFixed(2)} s of ${(total / 1e6).toFixed(2)} s sampled${perRequest}`);
  print('\nself time by package:');
  for (const [p, t] of [...pkgs].sort((a, b) => b[1] - a[1]).slice(0, 30)) print(`${pct(t)}  ${p}`);
  print(`\ntop ${top} functions by self time:`);
  for (const [f, t] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) print(`${pct(t)}  ${f}`);
  return { busySeconds: busy / 1e6, sampledSeconds: total / 1e6 };
}

function short(url) {
  const i = url.lastIndexOf('node_modules/');
  if (i >= 0) return url.slice(i + 13);
  const d = url.indexOf('/dist/');
  return d >= 0 ? url.slice(d + 1) : url.replace(/^file:\/\//, '');
}

function pkgOf(fn, url) {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const i = url.lastIndexOf('node_modules/');
  if (i >= 0) {
    const rest = url.slice(i + 13).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  return url.includes('/dist/') ? 'service (dist)' : url;
}

/**
 * Summarizes the main thread's profile that `node --cpu-prof --cpu-prof-dir=<dir>` left in `dir` (worker threads
 * write files of their own: `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`, the main thread's is thread 0).
 */
function summarizeDir(dir, top, print, requests) {
  const fs = require('node:fs');
  const path = require('node:path');
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const file = files.find((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f)) ?? files[0];
  if (!file) throw new Error(`no profile in ${dir}`);
  summarize(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')), top, print, requests);
  print(`profile: ${path.join(dir, file)}`);
}

module.exports = { summarize, summarizeDir };
