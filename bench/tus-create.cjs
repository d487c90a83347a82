'use strict';
// The latency of a tus upload's creation (POST /api/uploads) and of its first small PATCH, on an idle service:
// what a client waits between deciding to upload and its first PATCH byte (the CLI measured 0.29-0.38 s from its
// hash's end to the first PATCH byte, a HEAD by hash included). Prints the median and p90 of each step over N uploads.
//   node bench/tus-create.cjs [--n 30]
const http = require('node:http');
const { KEY, startStack, requestJson, now, median, percentile, runCleanups } = require('./lib/common.cjs');

/** A request with a raw body; resolves with its status and headers. */
function raw(baseUrl, method, pathname, headers, body) {
  const u = new URL(pathname, baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method, headers: { 'x-api-key': KEY, 'content-length': body.length, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

(async () => {
  const args = Object.fromEntries(process.argv.slice(2).map((a, i, all) => (a.startsWith('--') ? [a.slice(2), all[i + 1]] : undefined)).filter(Boolean));
  const n = Number(args.n ?? 30);
  const stack = await startStack({ prefix: 'tus-create' });
  try {
    const post = [];
    const patch = [];
    const head = [];
    for (let i = 0; i < n; i++) {
      const h0 = now();
      const h = await requestJson(stack.svc.url, 'HEAD', `/api/assets/hash/blake3:${'0'.repeat(63)}${i % 10}`);
      const t0 = now();
      const created = await requestJson(stack.svc.url, 'POST', '/api/uploads', undefined, {
        headers: { 'tus-resumable': '1.0.0', 'upload-length': '2', 'upload-metadata': `filename ${Buffer.from('x.bin').toString('base64')}` },
      });
      const t1 = now();
      if (created.status !== 201) throw new Error(`create answered ${created.status}`);
      const id = created.headers.location.split('/').pop();
      const p = await raw(stack.svc.url, 'PATCH', `/api/uploads/${id}`, { 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, Buffer.from([i & 255]));
      const t2 = now();
      if (p.status !== 204) throw new Error(`PATCH answered ${p.status}`);
      if (h.status !== 404) throw new Error(`HEAD answered ${h.status}`);
      if (i >= 3) {
        head.push(t0 - h0);
        post.push(t1 - t0);
        patch.push(t2 - t1);
      }
    }
    const f = (xs) => `p50 ${(median(xs) * 1000).toFixed(2)} ms, p90 ${(percentile(xs, 90) * 1000).toFixed(2)} ms`;
    console.log(`HEAD by hash: ${f(head)}; POST /api/uploads: ${f(post)}; first PATCH (1 of 2 bytes): ${f(patch)}`);
  } finally {
    await stack.stop();
    await runCleanups();
  }
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
