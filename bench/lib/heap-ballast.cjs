'use strict';
// Preloaded with `node --require` by bench/profiles/upload-gc.cjs: BALLAST_MB (default 40) of live objects that hold
// pointers (objects, arrays, closures, strings), kept for the life of the process. It gives a stripped server a heap
// the size of the service's, so a benchmark can show what the heap's size alone costs an upload.
const mb = Number(process.env.BALLAST_MB ?? 40);
const keep = [];
for (let i = 0, bytes = 0; bytes < mb * 1e6; i++, bytes += 200) {
  keep.push({ id: i, name: `n${i}`, tags: [i, i + 1, `t${i % 100}`], fn: () => i, nested: { a: i, b: [i] } });
}
globalThis.__benchBallast = keep;
