'use strict';
// The GraphQL Date scalar's formatter (src/http/graphql/scalars.ts isoDateTime) against V8's Date.prototype.toISOString
// and the library scalar it replaces (graphql-scalars' DateTimeISO via type-graphql), on the same 150 dates (a page of
// 50 assets and their 3 dates), interleaved rounds in one process: ns per date and the ratio to toISOString.
//   node bench/figures/iso-date.cjs [--dist=DIR] [--rounds=N]
const path = require('node:path');
const { parseArgs, median, r2, log, printResult, runScript } = require('../lib/common.cjs');

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const dist = path.resolve(args.opts.dist ?? 'dist');
  const rounds = args.rounds ?? 5;
  const { isoDateTime } = require(path.join(dist, 'src', 'http', 'graphql', 'scalars.js'));
  const { GraphQLISODateTime } = require('type-graphql');
  const base = Date.UTC(2026, 10, 22);
  const dates = Array.from({ length: 150 }, (_, i) => new Date(base - i * 7_654_321_123));
  for (const d of dates) if (isoDateTime(d) !== d.toISOString()) throw new Error(`isoDateTime(${d.getTime()}) differs`);
  const ways = { toISOString: (d) => d.toISOString(), library: (d) => GraphQLISODateTime.serialize(d), isoDateTime };
  const perRound = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
  const reps = 4000;
  for (let round = 0; round < rounds; round++) {
    for (const [name, f] of Object.entries(ways)) {
      let chars = 0;
      const t = process.hrtime.bigint();
      for (let r = 0; r < reps; r++) for (let i = 0; i < dates.length; i++) chars += f(dates[i]).length;
      const ns = Number(process.hrtime.bigint() - t) / reps / dates.length;
      if (chars !== reps * dates.length * 24) throw new Error('wrong length');
      perRound[name].push(ns);
      log(`  round ${round + 1} ${name}: ${ns.toFixed(0)} ns/date`);
    }
  }
  const ratio = (k) => r2(median(perRound[k].map((ns, i) => ns / perRound.toISOString[i])));
  printResult('iso-date', {
    ns_per_date: Object.fromEntries(Object.entries(perRound).map(([k, xs]) => [k, Math.round(median(xs))])),
    ratio_to_toISOString: { library: ratio('library'), isoDateTime: ratio('isoDateTime') },
  });
}

runScript(main);
