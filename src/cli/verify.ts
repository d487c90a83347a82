import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config';
import { commandDatabase } from './database';
import { createBlobStore } from '../container';
import { LISTED_PER_FINDING, verifyContent, type Finding, type VerifyReport } from '../domain/content/content-verify';
import { ContentRepository } from '../domain/content/content.repository';
import { useBlake3 } from '../infra/blake3';
import { IngestWorkers } from '../infra/blob-store/ingest-pool';
import { createLogger } from '../infra/logger';
import { createDatabase } from '../infra/prisma';

const USAGE = `usage: npm run verify -- [--sample N | --all] [--json]
  compares the content rows with the blob store and re-reads a sample of blobs (BLAKE3 and size); changes nothing
  --sample N   blobs re-read, at random (default 100; 0: none)
  --all        re-read every blob
  --json       the report as JSON on stdout
exit status: 0 consistent, 1 problems found (or verify could not finish), 2 usage or settings error`;

/** Hashes printed per finding in the text report (the JSON report has up to LISTED_PER_FINDING). */
const PRINTED = 20;

type Parsed = { sample: number | 'all'; json: boolean } | { usage: string; code: number };

function parse(argv: string[]): Parsed {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        sample: { type: 'string' },
        all: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    return { usage: `${(err as Error).message}\n${USAGE}`, code: 2 };
  }
  if (values.help) return { usage: USAGE, code: 0 };
  if (values.all && values.sample !== undefined)
    return { usage: `--all and --sample exclude each other\n${USAGE}`, code: 2 };
  if (values.sample !== undefined && !/^\d{1,9}$/.test(values.sample))
    return { usage: `--sample needs a whole number, not ${JSON.stringify(values.sample)}\n${USAGE}`, code: 2 };
  return { sample: values.all ? 'all' : Number(values.sample ?? 100), json: values.json };
}

/**
 * Operator command: is every stored content's blob there and whole (after a restore, say)? Read-only: the database
 * session is `default_transaction_read_only`, the store is neither initialised nor swept, and reads leave the
 * quarantine alone. Uses DATABASE_URL, or the embedded PostgreSQL under DATA_DIR (a running service's included).
 */
async function main(argv: string[]): Promise<number> {
  const args = parse(argv);
  if ('usage' in args) {
    process.stderr.write(args.usage + '\n');
    return args.code;
  }
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
  useBlake3(config.blake3);
  const { url, embedded } = await commandDatabase(config, logger);
  const readOnly = new URL(url);
  readOnly.searchParams.set('options', '-c default_transaction_read_only=on');
  const db = createDatabase(readOnly.toString(), 2, { logger });
  const hashers = new IngestWorkers();
  const blobs = await createBlobStore(config, hashers);
  try {
    const repo = new ContentRepository(db.prisma, db.pool, db.transactions);
    const report = await verifyContent(repo, blobs, { sample: args.sample });
    process.stdout.write(args.json ? JSON.stringify(report, null, 2) + '\n' : text(report));
    return report.consistent ? 0 : 1;
  } finally {
    await blobs.close();
    await hashers.close();
    await db.close();
    await embedded?.stop();
  }
}

function text(r: VerifyReport): string {
  const lines = [
    `${r.rows} content rows, ${r.storedBlobs} stored blobs, ${r.quarantinedBlobs} in the quarantine`,
    ...section(r.missing, 'rows whose blob is missing, also from the quarantine (bytes lost)', (h) => h),
    ...section(
      r.toRestore,
      'rows whose blob is in the quarantine (moved back by the first read or the next sweep)',
      (h) => h,
    ),
    ...section(r.orphans, 'stored blobs no row names, over an hour old (the daily sweep moves them aside)', (h) => h),
    ...section(
      r.wrongSize,
      'stored blobs whose size differs from their row',
      (w) => `${w.blake3} ${w.stored} bytes, row ${w.expected}`,
    ),
    `${r.reread} blobs re-read (BLAKE3 and size)`,
    ...section(r.corrupt, 're-read blobs that differ from their row', (c) => `${c.blake3} ${c.problem}`),
    r.consistent ? 'consistent' : 'PROBLEMS FOUND',
  ];
  return lines.join('\n') + '\n';
}

function section<T>(f: Finding<T>, title: string, show: (t: T) => string): string[] {
  const head = `${f.count} ${title}`;
  if (f.count === 0) return [head];
  const more = f.count > PRINTED ? [`  … ${f.count - PRINTED} more (--json lists up to ${LISTED_PER_FINDING})`] : [];
  return [head, ...f.items.slice(0, PRINTED).map((t) => `  ${show(t)}`), ...more];
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    // Settings that do not parse are a usage error; anything else means verify could not finish.
    process.stderr.write(err instanceof ConfigError ? err.message + '\n' : `verify: ${(err as Error).message}\n`);
    process.exit(err instanceof ConfigError ? 2 : 1);
  },
);
