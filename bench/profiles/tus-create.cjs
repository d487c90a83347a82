'use strict';
// The latency of a tus upload's creation (POST /api/uploads) and of its first small PATCH, on an idle service:
// what a client waits between deciding to upload and its first PATCH byte (the CLI measured 0.29-0.38 s from its
// hash's end to the first PATCH byte, a HEAD by hash included). Prints the median and p90 of each step over N uploads.
//   node bench/profiles/tus-create.cjs [--n=30] [--dist=DIR]   (DIR: another build, e.g. .ab-main)
const crypto = require('node:crypto');
const path = require('node:path');
const { startStack, requestJson, now, median, percentile, parseArgs, runScript } = require('../lib/common.cjs');
const { createTus, patch } = require('../lib/tus-client.cjs');

async function main() {
  const { opts } = parseArgs(process.argv.slice(2));
  const n = Number(opts.n ?? 30);
  const stack = await startStack({
    prefix: 'tus-create',
    ...(opts.dist ? { main: path.resolve(String(opts.dist), 'src', 'main.js') } : {}),
  });
  try {
    const post = [];
    const first = [];
    const head = [];
    for (let i = 0; i < n; i++) {
      const h0 = now();
      const h = await requestJson(stack.svc.url, 'HEAD', `/api/assets/hash/blake3:${'0'.repeat(63)}${i % 10}`);
      const t0 = now();
      const { id } = await createTus(stack.svc.url, 2, 'x.bin');
      const t1 = now();
      const p = await patch(stack.svc.url, id, 0, 1, crypto.randomBytes(16), undefined);
      const t2 = now();
      if (p.status !== 204) throw new Error(`PATCH answered ${p.status}`);
      if (h.status !== 404) throw new Error(`HEAD answered ${h.status}`);
      if (i >= 3) {
        head.push(t0 - h0);
        post.push(t1 - t0);
        first.push(t2 - t1);
      }
    }
    const f = (xs) => `p50 ${(median(xs) * 1000).toFixed(2)} ms, p90 ${(percentile(xs, 90) * 1000).toFixed(2)} ms`;
    console.log(`HEAD by hash: ${f(head)}; POST /api/uploads: ${f(post)}; first PATCH (1 of 2 bytes): ${f(first)}`);
  } finally {
    await stack.stop();
  }
}

runScript(main);
