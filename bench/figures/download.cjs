'use strict';
// Figure 6: a 1 GiB file from a local HTTP server (a Hugging Face-shaped mirror at HF_ENDPOINT) through a download
// task — POST /api/assets/download, then GET /api/tasks/{id} until completed — against `curl -o` of the same file
// from the same server onto the same disk, interleaved A B A B. The service fsyncs what it stores and curl does not,
// so the run also times `curl -o` followed by `sync <file>` (coreutils: fsync of that file) — the like-for-like
// baseline the target is held against; the plain `curl -o` ratio is reported beside it.
const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const {
  MiB,
  GiB,
  startStack,
  spawnHelper,
  requestJson,
  sleep,
  now,
  median,
  r2,
  r3,
  mbps,
  log,
  printResult,
} = require('../lib/common.cjs');

function curl(url, dir, { fsync }) {
  const file = path.join(dir, `curl-${crypto.randomBytes(4).toString('hex')}.bin`);
  const t0 = now();
  const r = spawnSync('curl', ['-sS', '--fail', '-o', file, url], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`curl failed: ${r.stderr}`);
  if (fsync) {
    const s = spawnSync('sync', [file], { encoding: 'utf8' });
    if (s.status !== 0) throw new Error(`sync failed: ${s.stderr}`);
  }
  const seconds = now() - t0;
  fs.rmSync(file, { force: true });
  return seconds;
}

async function viaTask(svcUrl, url, size) {
  const t0 = now();
  const res = await requestJson(svcUrl, 'POST', '/api/assets/download', { source_url: url, tags: ['bench'] });
  if (res.status !== 202) throw new Error(`download answered ${res.status}: ${JSON.stringify(res.body)}`);
  const id = res.body.task_id;
  for (;;) {
    const t = await requestJson(svcUrl, 'GET', `/api/tasks/${id}`);
    if (t.body.status === 'completed') {
      const seconds = now() - t0;
      if (t.body.result.bytes_downloaded !== size)
        throw new Error(`task stored ${t.body.result.bytes_downloaded} bytes of ${size}`);
      await requestJson(svcUrl, 'DELETE', `/api/assets/${t.body.result.asset_id}`);
      const at = (k) => Date.parse(t.body[k]) / 1000;
      return { seconds, queued: at('started_at') - at('create_time'), running: at('completed_at') - at('started_at') };
    }
    if (t.body.status === 'failed') throw new Error(`download task failed: ${t.body.error_message}`);
    await sleep(50);
  }
}

async function run(args) {
  const size = args.smoke ? 4 * MiB : GiB;
  const rounds = args.rounds ?? (args.smoke ? 1 : 3);
  const server = await spawnHelper('file-server.cjs');
  let stack;
  try {
    stack = await startStack({
      prefix: 'download',
      env: { HF_ENDPOINT: server.url, DOWNLOAD_BLOCK_PRIVATE_NETWORKS: 'false', CONTENT_GC_GRACE_SECONDS: '0' },
    });
    const tmp = path.join(stack.dir, 'curl');
    fs.mkdirSync(tmp);
    const r = { task: [], queued: [], running: [], curl: [], curlSync: [] };
    for (let i = 0; i < rounds; i++) {
      const name = `model${i}-${crypto.randomBytes(4).toString('hex')}`;
      const url = `${server.url}/bench/models/resolve/main/${name}-${size}.bin`;
      const task = await viaTask(stack.svc.url, url, size);
      r.task.push(task.seconds);
      r.queued.push(task.queued);
      r.running.push(task.running);
      r.curl.push(curl(url, tmp, { fsync: false }));
      r.curlSync.push(curl(url, tmp, { fsync: true }));
      log(
        `  round ${i + 1}: task ${mbps(size, r.task[i]).toFixed(0)} MB/s (queued ${r.queued[i].toFixed(2)} s, running ${r.running[i].toFixed(2)} s), curl -o ${mbps(size, r.curl[i]).toFixed(0)} MB/s, ` +
          `curl -o + fsync ${mbps(size, r.curlSync[i]).toFixed(0)} MB/s`,
      );
    }
    const vsSync = median(r.task.map((t, i) => r.curlSync[i] / t));
    printResult('download', {
      bytes: size,
      rounds,
      task_mbps: r2(median(r.task.map((t) => mbps(size, t)))),
      task_queued_s: r2(median(r.queued)),
      task_running_s: r2(median(r.running)),
      curl_mbps: r2(median(r.curl.map((t) => mbps(size, t)))),
      curl_fsync_mbps: r2(median(r.curlSync.map((t) => mbps(size, t)))),
      ratio_vs_curl_fsync: r3(vsSync),
      ratio_vs_curl: r3(median(r.task.map((t, i) => r.curl[i] / t))),
      target: 0.8,
      met: vsSync >= 0.8,
    });
  } finally {
    await stack?.stop();
    await server.stop();
  }
}

module.exports = { run, viaTask };
