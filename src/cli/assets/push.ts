import fs from 'node:fs';
import path from 'node:path';
import { ApiError, type ApiClient } from './client';
import { FileHasher } from './file-hasher';
import type { FileIdentity, HashCache } from './hash-cache';
import { comfyPlacementOf, safeRelativePath } from './paths';
import { mapPool } from './pool';
import { formatBytes, type Progress } from './progress';
import { multipartUpload, TusUnsupported, tusUpload, type UploadResult } from './upload';
import type { UploadStateFile } from './upload-state';

/**
 * Files from this size go up as resumable uploads; a smaller one goes in one multipart request: resuming it would
 * save at most this much, and a resumable upload's two requests (and the service's upload row) cost a folder of
 * small files more than its bytes do (`npm run bench -- import`, `assets push` of 10,000 images).
 */
export const RESUMABLE_MIN = 8 << 20;

/**
 * Whether a tree path goes with its file's create (`path` of an upload, `paths` of from-hash): by the service's rules
 * for a path (PATHS_LIMITS.length); one it would refuse is recorded the old way, or not at all.
 */
const sentWithCreate = (treePath: string): boolean =>
  safeRelativePath(treePath) !== undefined && treePath.length <= 1024;

export interface PushOptions {
  tags: string[];
  comfyui: boolean;
  concurrency: number;
  /** Bytes per tus PATCH request; 0 for the whole rest of the file in one. */
  chunkSize: number;
  /** Adds each file's phase times to its result (hidden `--timings`, for bench/profiles/profile-cli.cjs). */
  timings?: boolean;
  /** Hashes remembered from earlier pushes (hash-cache.ts); none: every file is hashed. */
  cache?: HashCache;
  /** Told how many files were opened to be hashed (a push of an unchanged tree opens none). */
  onFilesRead?: (n: number) => void;
}

/** Above this many files a push shows one progress line for all of them. */
const MANY_FILES = 32;

/** Milliseconds from the start of the push: the hash, the first and last byte the socket took. */
export interface PushTimings {
  hash_started_ms: number;
  hash_done_ms: number;
  /** HEAD /api/assets/hash answered. */
  checked_ms?: number;
  /** The resumable upload created (POST /api/uploads answered). */
  created_ms?: number;
  first_bytes_ms?: number;
  sent_ms?: number;
}

export interface PushResult {
  file: string;
  name?: string;
  tags?: string[];
  size?: number;
  hash?: string;
  /** `uploaded`: bytes were sent; `from_hash`: the content was stored already, no byte sent. */
  action: 'uploaded' | 'from_hash' | 'skipped' | 'failed';
  asset_id?: string;
  created_new?: boolean;
  /** Tags this file added to an asset that existed already. */
  tags_added?: string[];
  bytes_sent?: number;
  error?: { code: string; message: string };
  timings?: PushTimings;
}

interface Candidate {
  file: string;
  rel: string;
}

/** What a walk found that is not pushed: a special file (skipped) or an entry it could not read (failed). */
export interface WalkProblem {
  file: string;
  action: 'skipped' | 'failed';
  error: { code: string; message: string };
}

const STATE_FILE_NAME = '.assets-push-state.json';

/** `fifo`, `socket`, ... for a file that is neither a regular file nor a folder. */
function kindOf(st: fs.Stats | fs.Dirent): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/**
 * Every regular file under the arguments (files as given, directories walked; hidden names skipped). Special files
 * (FIFOs, sockets, devices: reading one could block forever) are skipped, and entries that cannot be read (EACCES,
 * a symlink loop) are failures, each listed in `problems`; the walk goes on with the rest.
 */
export function collectFiles(args: string[], problems: WalkProblem[] = []): Candidate[] {
  const out: Candidate[] = [];
  const seen = new Set<string>();
  const failed = (file: string, err: unknown): void => {
    const e = err as NodeJS.ErrnoException;
    problems.push({ file, action: 'failed', error: { code: e.code ?? 'ERROR', message: e.message } });
  };
  const special = (file: string, st: fs.Stats | fs.Dirent): void =>
    void problems.push({
      file,
      action: 'skipped',
      error: { code: 'NOT_A_FILE', message: `${kindOf(st)}: only regular files are pushed` },
    });
  const walk = (root: string, dir: string): void => {
    let entries: fs.Dirent[];
    try {
      // A symlinked folder is followed once (a link back up the tree would otherwise never end).
      const real = fs.realpathSync(dir);
      if (seen.has(real)) return;
      seen.add(real);
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      return failed(dir, err);
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (e.name.startsWith('.')) continue;
      const abs = path.join(dir, e.name);
      // A name that is not UTF-8 (Latin-1 bytes from an old archive) reads back with U+FFFD and opens nothing.
      if (e.name.includes('\ufffd') && !fs.lstatSync(abs, { throwIfNoEntry: false })) {
        problems.push({
          file: abs,
          action: 'failed',
          error: { code: 'INVALID_FILE_NAME', message: 'the file name is not UTF-8: rename it to push it' },
        });
        continue;
      }
      let st: fs.Stats | fs.Dirent | undefined = e;
      if (e.isSymbolicLink()) {
        try {
          st = fs.statSync(abs, { throwIfNoEntry: false });
        } catch (err) {
          failed(abs, err); // ELOOP, EACCES
          continue;
        }
        if (!st) continue; // a dangling link: nothing to push
      }
      if (st.isDirectory()) walk(root, abs);
      else if (st.isFile()) out.push({ file: abs, rel: path.relative(root, abs).split(path.sep).join('/') });
      else special(abs, st);
    }
  };
  for (const arg of args) {
    let st: fs.Stats;
    try {
      st = fs.statSync(arg);
    } catch (err) {
      failed(arg, err);
      continue;
    }
    if (st.isDirectory()) walk(arg, arg);
    else if (st.isFile()) out.push({ file: path.resolve(arg), rel: path.basename(arg) });
    else special(arg, st);
  }
  return out;
}

/** The size and modification time a file had when it was planned: if either moved, its hash may not be its content. */
interface Seen {
  size: number;
  mtimeMs: number;
}

function checkUnchanged(file: string, seen: Seen): void {
  const now = fs.statSync(file, { throwIfNoEntry: false, bigint: true });
  if (!now || !now.isFile()) throw new ApiError(0, 'FILE_CHANGED', 'the file went away while it was pushed');
  if (Number(now.size) !== seen.size || Number(now.mtimeNs / 1_000_000n) !== seen.mtimeMs) {
    throw new ApiError(
      0,
      'FILE_CHANGED',
      `the file changed while it was pushed (size ${seen.size} → ${now.size}); push it again once it is written`,
    );
  }
}

const errorInfo = (err: unknown): { code: string; message: string } =>
  err instanceof ApiError
    ? { code: err.code, message: err.message }
    : { code: (err as NodeJS.ErrnoException).code ?? 'ERROR', message: (err as Error).message };

/**
 * `assets push`: hash each file locally, create what the service already stores by hash (zero bytes sent), upload
 * the rest (tus, resumable; multipart where the instance has no /api/uploads), `concurrency` files at a time (the
 * hashing threads read the next files while earlier ones are sent). No byte of a file is sent before the service has
 * been asked for its hash.
 */
export async function push(
  client: ApiClient,
  state: UploadStateFile,
  args: string[],
  opts: PushOptions,
  progress: Progress,
): Promise<PushResult[]> {
  const t0 = performance.now();
  const ms = (): number => Math.round(performance.now() - t0);
  const problems: WalkProblem[] = [];
  const candidates = collectFiles(args, problems);
  const results: PushResult[] = problems.map((p) => {
    progress.log(`${p.action === 'failed' ? 'FAILED  ' : 'skipped '} ${p.file}: ${p.error.code}: ${p.error.message}`);
    return { ...p };
  });
  const planned: {
    c: Candidate;
    name: string;
    tags: string[];
    treePath: string;
    size: number;
    seen: Seen;
    id: FileIdentity;
  }[] = [];
  for (const c of candidates) {
    if (path.basename(c.file) === STATE_FILE_NAME) continue;
    let name = c.rel;
    let tags = opts.tags;
    let treePath = c.rel;
    if (opts.comfyui) {
      const place = comfyPlacementOf(path.resolve(c.file), c.rel);
      if (!place) {
        results.push({
          file: c.file,
          action: 'skipped',
          error: { code: 'NOT_COMFYUI', message: 'not under models/<folder>/, input/ or output/' },
        });
        progress.log(`skipped ${c.rel}: not under models/<folder>/, input/ or output/`);
        continue;
      }
      name = place.name;
      tags = [...place.tags, ...opts.tags];
      treePath = place.treePath;
    }
    let st: fs.BigIntStats;
    try {
      st = fs.statSync(c.file, { bigint: true });
    } catch (err) {
      results.push({ file: c.file, name, tags, action: 'failed', error: errorInfo(err) });
      continue;
    }
    const size = Number(st.size);
    planned.push({ c, name, tags, treePath, size, seen: { size, mtimeMs: Number(st.mtimeNs / 1_000_000n) }, id: st });
  }
  // A folder of many files (ComfyUI's output/) gets one progress line for all of them, not a bar and a line each.
  const many = planned.length > MANY_FILES;
  const note = (line: string): void => {
    if (!many) progress.log(line);
  };
  for (const p of planned) progress.addTotal(p.size);

  let tusAvailable = true;
  // One content in several files of this run: the first sends it, the others wait and create theirs by hash.
  const firstOfHash = new Map<string, Promise<unknown>>();

  // The service keeps one asset per content and owner: a file whose content is already an asset of
  // this owner (another name, another folder, an earlier push with other tags) adds its tags to that asset, so
  // `ls --tag` finds it under each; its name stays the first one. Tags compare as the service keeps them: trimmed,
  // case kept.
  const addMissingTags = async (id: string, has: string[] | undefined, wanted: string[]): Promise<string[]> => {
    const current = new Set(has ?? (await client.getAsset(id)).tags);
    const missing = [...new Set(wanted.map((t) => t.trim()).filter((t) => t && !current.has(t)))];
    return missing.length ? client.addTags(id, missing) : [];
  };

  // Every path a content was pushed under is kept with its asset (metadata.paths), so `pull` recreates each one.
  let pathsRoute = true;
  /** `kept`: the asset's paths as its create answered them (the service took the path with the upload). */
  const recordPath = async (id: string, treePath: string, kept?: unknown): Promise<void> => {
    if (!pathsRoute || safeRelativePath(treePath) === undefined) return;
    if (Array.isArray(kept) && kept.includes(treePath)) return;
    if ((await client.addPaths(id, [treePath])) === undefined) pathsRoute = false;
  };

  /** With the hash known: creates stored content by hash (zero bytes sent), else uploads the file. */
  const sendOrLink = async (
    p: (typeof planned)[number],
    hash: string,
    times: Partial<PushTimings>,
  ): Promise<PushResult> => {
    const base = { file: p.c.file, name: p.name, tags: p.tags, size: p.size, hash };
    const stored = await client.hashStored(hash);
    times.checked_ms = ms();
    // The hash is of the file as it was read: a file written to since is not sent (nor linked) under it.
    checkUnchanged(p.c.file, p.seen);
    if (stored) {
      const paths = sentWithCreate(p.treePath) ? [p.treePath] : undefined;
      const asset = await client.fromHash({ hash, name: p.name, tags: p.tags, paths });
      // The asset must be of this file's content, whatever the server says it stores.
      if (asset.asset_hash !== hash)
        throw new ApiError(
          0,
          'HASH_MISMATCH',
          `the service answered asset ${asset.id} of ${asset.asset_hash}, not of this file's ${hash}`,
        );
      const added = asset.created_new ? [] : await addMissingTags(asset.id, asset.tags, p.tags);
      await recordPath(asset.id, p.treePath, (asset.metadata as { paths?: unknown } | undefined)?.paths);
      note(
        `stored   ${p.name} (by hash, 0 bytes sent${asset.created_new ? '' : `, as existing asset ${asset.name}`}${added.length ? `, tags added: ${added.join(', ')}` : ''})`,
      );
      return {
        ...base,
        action: 'from_hash',
        asset_id: asset.id,
        created_new: asset.created_new === true,
        bytes_sent: 0,
        ...(added.length ? { tags_added: added } : {}),
      };
    }
    const maxSize = limits?.maxSize;
    if (maxSize !== undefined && p.size > maxSize) {
      throw new ApiError(
        413,
        'PAYLOAD_TOO_LARGE',
        `the file has ${p.size} bytes; the service takes at most ${maxSize} (its Tus-Max-Size)`,
      );
    }
    progress.addTotal(p.size);
    const bar = progress.item(`↑ ${p.name}`, p.size, many);
    let sent = 0;
    const onBytes = (n: number): void => {
      times.first_bytes_ms ??= ms();
      sent = n;
      bar.update(n);
    };
    let res: UploadResult | undefined;
    try {
      if (tusAvailable && p.size >= RESUMABLE_MIN) {
        try {
          res = await tusUpload(
            client,
            state,
            { file: p.c.file, size: p.size, hash, name: p.name, tags: p.tags },
            opts.chunkSize,
            onBytes,
            () => (times.created_ms ??= ms()),
          );
        } catch (err) {
          if (!(err instanceof TusUnsupported)) throw err;
          noTus();
        }
      }
      res ??= await multipartUpload(
        client,
        {
          file: p.c.file,
          size: p.size,
          hash,
          name: p.name,
          tags: p.tags,
          path: sentWithCreate(p.treePath) ? p.treePath : undefined,
        },
        onBytes,
      );
    } catch (err) {
      bar.finish(); // no bar left behind; the failure is reported with the file's name
      // The service refused the bytes (their hash is not the one sent) or they ran short: the file was being written.
      if (
        err instanceof ApiError &&
        (err.code === 'HASH_MISMATCH' || err.code === 'FILE_CHANGED' || err.code === 'NETWORK')
      )
        checkUnchanged(p.c.file, p.seen);
      throw err;
    }
    times.sent_ms = ms();
    bar.finish(`uploaded ${p.name} (${formatBytes(p.size)})`);
    const added = res.created ? [] : await addMissingTags(res.id, undefined, p.tags);
    await recordPath(res.id, p.treePath, res.paths);
    return {
      ...base,
      action: 'uploaded',
      asset_id: res.id,
      created_new: res.created,
      bytes_sent: sent,
      ...(added.length ? { tags_added: added } : {}),
    };
  };

  const noTus = (): void => {
    if (!tusAvailable) return;
    tusAvailable = false;
    progress.log('the service has no resumable uploads (POST /api/uploads: 404): sending whole files');
  };

  // Asked beside the first hashes (the connection and the HTTP client are ready when the first hash is): does the
  // service answer and take this key, and up to what size it takes resumable uploads. A refusal fails every file at
  // once with the service's code, rather than each after its hash (hours of hashing for a large tree).
  let limits: { maxSize?: number } | undefined;
  const preflight = client.uploadOptions().then((o) => void (limits = o));
  const refused = preflight.then(() => new Promise<never>(() => undefined));
  refused.catch(() => undefined);

  const hasher = new FileHasher();
  let filesRead = 0;
  const done = await mapPool(planned, opts.concurrency, async (p): Promise<PushResult> => {
    let hash: string | undefined;
    const times: Partial<PushTimings> = {};
    const withTimes = (r: PushResult): PushResult => (opts.timings ? { ...r, timings: times as PushTimings } : r);
    try {
      times.hash_started_ms = ms();
      hash = opts.cache?.get(path.resolve(p.c.file), p.id);
      if (hash === undefined) {
        const bar = progress.item(`# ${p.name}`, p.size, many);
        filesRead++;
        // Until the service has answered, a refusal stops the hash; after, the hash alone is awaited.
        hash = await hasher
          .hashFile(p.c.file, 'blake3', {
            size: p.size,
            onHashed: (n) => bar.update(n),
            ...(limits ? {} : { until: refused }),
          })
          .finally(() => bar.finish());
        // Remembered only for the file as it was when planned (a write since moved its ctime).
        checkUnchanged(p.c.file, p.seen);
        opts.cache?.set(path.resolve(p.c.file), p.id, hash);
      }
      times.hash_done_ms = ms();
      await preflight;
      const earlier = firstOfHash.get(hash);
      if (earlier) {
        // The same content is being sent by another file of this run: this one waits, then is created by hash.
        await earlier.catch(() => undefined);
        return withTimes(await sendOrLink(p, hash, times));
      }
      const mine = sendOrLink(p, hash, times);
      firstOfHash.set(hash, mine);
      return withTimes(await mine);
    } catch (err) {
      const e = errorInfo(err);
      progress.log(`FAILED   ${p.c.file}: ${e.code}: ${e.message}`);
      return { file: p.c.file, name: p.name, tags: p.tags, size: p.size, hash, action: 'failed', error: e };
    }
  }).finally(() => {
    opts.cache?.save();
    return hasher.close();
  });
  opts.onFilesRead?.(filesRead);
  return [...results, ...done];
}
