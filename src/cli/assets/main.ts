#!/usr/bin/env node
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ApiClient, ApiError, DEFAULT_TIMEOUT_MS } from './client';
import { assetLine, downloadUrl, exportZip } from './commands';
import { createProgress, formatBytes, printable } from './progress';
import { HashCache } from './hash-cache';
import { extraModelPathsYaml, pull } from './pull';
import { push } from './push';
import { UploadStateFile } from './upload-state';

/** Exit codes: 0 done, 1 something failed, 2 bad usage. */
const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

class UsageError extends Error {}

/** This package's version (package.json, three folders above dist/src/cli/assets and src/cli/assets). */
function packageVersion(): string {
  for (let dir = __dirname, i = 0; i < 5; i++, dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return 'unknown';
}

interface GlobalOptions {
  url: string;
  apiKey?: string;
  stateFile?: string;
  pageSize: number;
  timeout: number;
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a whole number ≥ 1');
  return n;
}

function wholeNumber(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a whole number ≥ 0');
  return n;
}

const out = (v: unknown): void => void process.stdout.write(JSON.stringify(v, null, 2) + '\n');

/** `{code, message}` of any failure: the service's, NETWORK / INVALID_RESPONSE of the client, a system error's code. */
function errorInfo(err: unknown): { code: string; message: string } {
  if (err instanceof ApiError)
    return { code: err.code, message: err.status ? `${err.status} ${err.message}` : err.message };
  const e = err as NodeJS.ErrnoException;
  return {
    code: typeof e?.code === 'string' ? e.code : 'ERROR',
    message: typeof e?.message === 'string' ? e.message : String(err),
  };
}

function positiveSeconds(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number of seconds > 0');
  return n;
}

/** The `assets` program: configuration from ASSETS_URL / ASSETS_API_KEY, overridden by --url / --api-key. */
export function buildProgram(env: NodeJS.ProcessEnv, setExit: (code: number) => void): Command {
  const program = new Command('assets')
    .description(
      'Command-line client of the asset service: push and pull folders (ComfyUI layouts too), downloads, exports.',
    )
    .version(packageVersion(), '-V, --version', "the client's version (this package's)")
    .addOption(new Option('--url <url>', 'service base URL').env('ASSETS_URL').default('http://127.0.0.1:8080'))
    .addOption(new Option('--api-key <key>', 'API key (X-API-Key)').env('ASSETS_API_KEY'))
    .option('--state-file <file>', 'where push keeps its resumable uploads (default: ~/.cache/assets-cli/uploads.json)')
    .addOption(
      new Option('--page-size <n>', 'assets per listing request').argParser(positiveInt).default(500).hideHelp(),
    )
    .addOption(
      new Option(
        '--timeout <seconds>',
        'give a request up when the service sends nothing for this long (then retried where safe)',
      )
        .env('ASSETS_TIMEOUT')
        .argParser(positiveSeconds)
        .default(DEFAULT_TIMEOUT_MS / 1000),
    )
    .showHelpAfterError()
    .exitOverride();
  program.addHelpText('after', '\nExit codes: 0 success, 1 some files or requests failed (listed), 2 usage error.');

  const client = (): ApiClient => {
    const g = program.opts<GlobalOptions>();
    let url: URL | undefined;
    try {
      url = new URL(g.url);
    } catch {
      // below
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new UsageError(`--url / ASSETS_URL must be an http: or https: URL: ${printable(g.url)}`);
    if (g.apiKey !== undefined && !/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(g.apiKey)) {
      throw new UsageError(
        '--api-key / ASSETS_API_KEY must be printable ASCII without line breaks or surrounding spaces (it goes in a header)',
      );
    }
    return new ApiClient({
      url: g.url,
      apiKey: g.apiKey,
      pageSize: g.pageSize,
      timeoutMs: Math.round(g.timeout * 1000),
    });
  };

  program
    .command('push')
    .description(
      'upload files and folders: hashed locally, stored content created by hash (0 bytes sent), the rest resumable',
    )
    .argument('<paths...>', 'files or folders')
    .option('--tag <tag>', 'add a tag to every file (repeatable)', collect, [])
    .option(
      '--comfyui',
      'the folder is a ComfyUI tree: models/<folder>/… → tags models,<folder>; input/; output/',
      false,
    )
    .option('--concurrency <n>', 'files at a time', positiveInt, 4)
    .option(
      '--chunk-size <MiB>',
      'MiB per resumable-upload request; 0: the whole file in one (a broken one resumes from what the service kept); set it behind a proxy that limits request bodies',
      wholeNumber,
      0,
    )
    .addOption(new Option('--timings', "each file's phase times in its --json result (ms)").default(false).hideHelp())
    .option('--no-hash-cache', 'hash every file, ignoring (and not updating) the hashes remembered from earlier pushes')
    .option('--json', 'print the results as JSON on stdout', false)
    .action(
      async (
        paths: string[],
        o: {
          tag: string[];
          comfyui: boolean;
          concurrency: number;
          chunkSize: number;
          timings: boolean;
          hashCache: boolean;
          json: boolean;
        },
      ) => {
        // lstat: a symlink loop or a dangling link exists (and is reported as the file it is), only nothing is missing.
        const missing = paths.filter((p) => {
          try {
            return !fs.lstatSync(p, { throwIfNoEntry: false });
          } catch {
            return false; // there, but not to be looked at (EACCES, ENOTDIR): the push lists it as failed
          }
        });
        if (missing.length) throw new UsageError(`no such file or folder: ${missing.join(', ')}`);
        const g = program.opts<GlobalOptions>();
        const cacheDir = env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache');
        const progress = createProgress();
        const state = new UploadStateFile(g.stateFile ?? path.join(cacheDir, 'assets-cli', 'uploads.json'), (m) =>
          progress.log(`warning: ${m}`),
        );
        // size, mtime, ctime, inode → BLAKE3 of what earlier pushes hashed (hash-cache.ts); safe to delete.
        const cache = o.hashCache ? new HashCache(path.join(cacheDir, 'assets-cli', 'hashes.json')) : undefined;
        let hashed = 0;
        const pushOpts = {
          tags: o.tag,
          comfyui: o.comfyui,
          concurrency: o.concurrency,
          chunkSize: o.chunkSize * 1024 * 1024,
          timings: o.timings,
        };
        const results = await push(
          client(),
          state,
          paths,
          { ...pushOpts, cache, onFilesRead: (n) => (hashed = n) },
          progress,
        ).finally(() => progress.stop());
        const failed = results.filter((r) => r.action === 'failed');
        const sent = results.reduce((s, r) => s + (r.bytes_sent ?? 0), 0);
        if (o.json) out({ files: results, failed: failed.length, bytes_sent: sent, files_hashed: hashed });
        process.stderr.write(
          `${results.length} files: ${results.filter((r) => r.action === 'uploaded').length} uploaded (${formatBytes(sent)} sent), ` +
            `${results.filter((r) => r.action === 'from_hash').length} stored by hash, ${failed.length} failed\n`,
        );
        for (const f of failed)
          process.stderr.write(printable(`  failed: ${f.file}: ${f.error?.code}: ${f.error?.message}`) + '\n');
        setExit(failed.length ? EXIT.failed : EXIT.ok);
      },
    );

  program
    .command('pull')
    .description('download matching assets into a folder (Range resume, hash checked; files already there are skipped)')
    .argument('<dir>', 'target folder')
    .option('--tag <tag>', 'only assets with this tag (repeatable: all of them)', collect, [])
    .option('--name-contains <text>', 'only assets whose name contains this')
    .option('--comfyui', 'lay out as a ComfyUI tree: models/<folder>/<loader_path>, input/, output/', false)
    .option('--concurrency <n>', 'files at a time', positiveInt, 4)
    .option('--link', "an asset's second and later paths are hard links to its first, not copies", false)
    .option('--json', 'print the results as JSON on stdout', false)
    .action(
      async (
        dir: string,
        o: {
          tag: string[];
          nameContains?: string;
          comfyui: boolean;
          concurrency: number;
          link: boolean;
          json: boolean;
        },
      ) => {
        const progress = createProgress();
        const pullOpts = {
          tags: o.tag,
          nameContains: o.nameContains,
          comfyui: o.comfyui,
          concurrency: o.concurrency,
          link: o.link,
        };
        const results = await pull(client(), dir, pullOpts, progress).finally(() => progress.stop());
        const failed = results.filter((r) => r.action === 'failed');
        const received = results.reduce((s, r) => s + (r.bytes_received ?? 0), 0);
        const yaml = o.comfyui ? extraModelPathsYaml(dir, results) : undefined;
        if (o.json)
          out({
            files: results,
            failed: failed.length,
            bytes_received: received,
            ...(yaml ? { extra_model_paths_yaml: yaml } : {}),
          });
        process.stderr.write(
          `${results.length} assets: ${results.filter((r) => r.action === 'downloaded').length} downloaded (${formatBytes(received)}), ` +
            `${results.filter((r) => r.action === 'present').length} already present, ` +
            `${results.filter((r) => r.action === 'copied' || r.action === 'linked').length} other paths made, ${failed.length} failed\n`,
        );
        for (const f of failed)
          process.stderr.write(
            printable(`  failed: ${f.path} (${f.asset_id}): ${f.error?.code}: ${f.error?.message}`) + '\n',
          );
        if (yaml && !o.json) {
          process.stdout.write(`# add to ComfyUI's extra_model_paths.yaml:\n${yaml}`);
          process.stdout.write(`# input/ and output/ are ComfyUI's --input-directory and --output-directory\n`);
        }
        setExit(failed.length ? EXIT.failed : EXIT.ok);
      },
    );

  program
    .command('ls')
    .description('list assets')
    .option('--tag <tag>', 'only assets with this tag (repeatable: all of them)', collect, [])
    .option('--name-contains <text>', 'only assets whose name contains this')
    .option('--limit <n>', 'at most this many', positiveInt, 100)
    .option('--json', 'print the assets as JSON on stdout', false)
    .action(async (o: { tag: string[]; nameContains?: string; limit: number; json: boolean }) => {
      const assets = [];
      for await (const a of client().listAll({ tags: o.tag, nameContains: o.nameContains, limit: o.limit })) {
        if (o.json) assets.push(a);
        else process.stdout.write(assetLine(a) + '\n');
      }
      if (o.json) out({ assets });
    });

  program
    .command('get')
    .description('show one asset')
    .argument('<id>', 'asset id')
    .option('--json', 'print the asset as JSON', false)
    .action(async (id: string, o: { json: boolean }) => {
      const a = await client().getAsset(id);
      if (o.json) return out(a);
      for (const k of [
        'id',
        'name',
        'size',
        'asset_hash',
        'mime_type',
        'tags',
        'loader_path',
        'created_at',
        'updated_at',
      ]) {
        if (a[k] !== undefined)
          process.stdout.write(
            printable(
              `${k}: ${k === 'tags' ? a.tags.join(', ') : k === 'size' ? `${a.size} (${formatBytes(a.size)})` : String(a[k])}`,
            ) + '\n',
          );
      }
    });

  program
    .command('rm')
    .description('delete an asset')
    .argument('<id>', 'asset id')
    .option('--json', 'print the result as JSON', false)
    .action(async (id: string, o: { json: boolean }) => {
      await client().deleteAsset(id);
      if (o.json) out({ deleted: id });
      process.stderr.write(`deleted ${id}\n`);
    });

  program
    .command('download')
    .description('have the service download a Hugging Face or Civitai URL (followed to the end with a progress bar)')
    .argument('<url>', 'source URL')
    .option('--tag <tag>', 'tag for the new asset (repeatable)', collect, [])
    .option('--json', 'print the asset (or the failed task) as JSON', false)
    .action(async (url: string, o: { tag: string[]; json: boolean }) => {
      const progress = createProgress();
      const r = await downloadUrl(client(), url, o.tag, progress).finally(() => progress.stop());
      if (o.json) out(r.asset ?? r.task);
      else if (r.asset) process.stdout.write(assetLine(r.asset) + '\n');
      if (!r.asset) {
        process.stderr.write(
          printable(`download ${r.task?.status ?? 'failed'}: ${r.task?.error_message ?? ''}`) + '\n',
        );
        setExit(EXIT.failed);
      }
    });

  program
    .command('export')
    .description('export assets into a ZIP file: assets export <id…> <file.zip>, or assets export --tag T <file.zip>')
    .argument('<args...>', 'asset ids, then the ZIP file to write')
    .option('--tag <tag>', 'export the assets with this tag (repeatable: all of them)', collect, [])
    .option('--json', 'print the task as JSON', false)
    .action(async (args: string[], o: { tag: string[]; json: boolean }) => {
      const file = args[args.length - 1]!;
      let ids = args.slice(0, -1);
      if (!file.endsWith('.zip'))
        throw new UsageError(`the last argument is the file to write and must end in .zip: ${file}`);
      if (ids.length === 0 && o.tag.length === 0) throw new UsageError('name asset ids or --tag');
      const c = client();
      if (o.tag.length) for await (const a of c.listAll({ tags: o.tag })) ids.push(a.id);
      ids = [...new Set(ids)];
      if (ids.length === 0) throw new ApiError(0, 'NOTHING_TO_EXPORT', 'no asset matches');
      const progress = createProgress();
      const r = await exportZip(c, ids, file, progress).finally(() => progress.stop());
      if (o.json) out({ file, bytes: r.bytes, task: r.task });
      // Assets the service left out of the archive (unknown ids, content that could not be read): named, exit 1.
      for (const f of r.failed) process.stderr.write(printable(`! ${f.asset_id}: ${f.error} (not in ${file})`) + '\n');
      if (r.failed.length) setExit(EXIT.failed);
    });

  return program;
}

async function main(argv: string[]): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram(process.env, (c) => (code = c));
  // Every failure of a `--json` run is also an answer on stdout: `{"error": {"code", "message"}}`.
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0 || err.code === 'commander.helpDisplayed' || err.code === 'commander.version')
        return EXIT.ok;
      if (json) out({ error: { code: 'USAGE', message: err.message.replace(/^error: /, '') } });
      return EXIT.usage;
    }
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n`);
      if (json) out({ error: { code: 'USAGE', message: err.message } });
      return EXIT.usage;
    }
    const e = errorInfo(err);
    process.stderr.write(printable(`assets: ${e.code}: ${e.message}`) + '\n');
    if (json) out({ error: e });
    return EXIT.failed;
  }
}

/** Runs the program on `argv` (the arguments after the command name) and sets the exit code. */
export function run(argv: string[]): void {
  // The reader of our output went away (`assets ls | head`): stop quietly, as a Unix tool ends on SIGPIPE, rather
  // than die on an unhandled EPIPE with a stack trace.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok);
    process.stderr.write(`assets: cannot write the output: ${err.message}\n`);
    process.exit(EXIT.failed);
  });
  // Whatever escapes (a bug, a library's stray error): one line, never a stack trace, exit 1.
  const fatal = (err: unknown): void => {
    const e = errorInfo(err);
    process.stderr.write(printable(`assets: internal error: ${e.code}: ${e.message}`) + '\n');
    process.exit(EXIT.failed);
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
  void main(argv).then((code) => {
    process.exitCode = code;
  }, fatal);
}

if (require.main === module) run(process.argv.slice(2));
