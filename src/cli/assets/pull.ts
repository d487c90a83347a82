import fs from 'node:fs';
import path from 'node:path';
import fsp from 'node:fs/promises';
import { ApiError, retryDelayMs, type ApiClient, type Asset } from './client';
import { FileHasher, type HashAlgorithm } from './file-hasher';
import { pullPaths, resolveInside } from './paths';
import { mapPool } from './pool';
import { formatBytes, printable, type Progress } from './progress';

export interface PullOptions {
  tags: string[];
  nameContains?: string;
  comfyui: boolean;
  concurrency: number;
  /** The second and later paths of one asset are hard links to the first, not copies. */
  link?: boolean;
}

export interface PullResult {
  asset_id: string;
  name: string;
  path: string;
  size: number;
  /**
   * `downloaded` (bytes received this run), `present` (already there with the right hash), `copied` / `linked` (another
   * path of an asset pulled to its first path: a copy, or with `--link` a hard link), `failed`.
   */
  action: 'downloaded' | 'present' | 'copied' | 'linked' | 'failed';
  bytes_received?: number;
  error?: { code: string; message: string };
}

/** The algorithm of `asset_hash` (`blake3:` as the service stores; `sha256:` understood too). */
const algorithmOf = (assetHash: string): HashAlgorithm => (assetHash.startsWith('sha256:') ? 'sha256' : 'blake3');

async function hasRightContent(hasher: FileHasher, file: string, asset: Asset): Promise<boolean> {
  const st = fs.statSync(file, { throwIfNoEntry: false });
  if (!st?.isFile() || st.size !== asset.size) return false;
  return (await hasher.hashFile(file, algorithmOf(asset.asset_hash), { size: asset.size })) === asset.asset_hash;
}

const RETRY_DELAYS_MS = [1000, 3000];

/**
 * Downloads one asset's content into `<target>.part`, continuing a part a previous run left (Range; a 200 answer
 * restarts it), checks the hash over the whole file, then renames. Network failures are retried twice; the part
 * stays for the next run when they persist.
 */
async function download(
  client: ApiClient,
  hasher: FileHasher,
  asset: Asset,
  target: string,
  onBytes: (n: number) => void,
): Promise<number> {
  const part = `${target}.part`;
  fs.mkdirSync(path.dirname(target), { recursive: true });
  let received = 0;
  for (let attempt = 0; ; attempt++) {
    try {
      let offset = fs.statSync(part, { throwIfNoEntry: false })?.size ?? 0;
      if (offset > asset.size) {
        fs.rmSync(part);
        offset = 0;
      }
      const headers: Record<string, string> = offset > 0 ? { range: `bytes=${offset}-` } : {};
      const res = await client.getBlocks(`/api/assets/${asset.id}/content`, headers, [416]);
      if (res.status === 416) {
        res.destroy();
        fs.rmSync(part, { force: true });
        throw new ApiError(416, 'RANGE_NOT_SATISFIABLE', 'the part file does not match the content; restarting');
      }
      if (res.status !== 206) offset = 0;
      let done = offset;
      onBytes(done);
      // A body longer than the asset (a broken or hostile server) is cut at its size, not written to the disk's end.
      const tooLong = (): ApiError =>
        new ApiError(0, 'SIZE_MISMATCH', `the service sent more than the ${asset.size} bytes of ${asset.asset_hash}`);
      // The main thread only moves the bytes: the body arrives in blocks of about 4 MiB (block-get.ts), each written
      // with one call, and the hashing thread reads the part behind the writes, so what is checked is what is on disk.
      // What arrived before a broken connection is written before the failure is reported: the next attempt
      // continues after it.
      // O_NOFOLLOW: a .part that is a symlink (planted by someone else in a shared folder) is not written through.
      const { O_WRONLY, O_CREAT, O_APPEND, O_TRUNC, O_NOFOLLOW } = fs.constants;
      const fh = await fsp.open(part, O_WRONLY | O_CREAT | O_NOFOLLOW | (offset > 0 ? O_APPEND : O_TRUNC), 0o644);
      const hash = hasher.follow(part, algorithmOf(asset.asset_hash));
      hash.grow(offset);
      let digest: string;
      try {
        try {
          await res.pipeTo(async (block) => {
            if (done + block.length > asset.size) throw tooLong();
            await writeFully(fh, block);
            done += block.length;
            received += block.length;
            hash.grow(done);
            onBytes(done);
          });
        } catch (err) {
          if (err instanceof ApiError || (err as NodeJS.ErrnoException).syscall === 'write') throw err;
          throw new ApiError(
            0,
            'NETWORK',
            `download of ${asset.id} broke off at ${done} bytes: ${(err as Error).message}`,
          );
        } finally {
          await fh.close();
        }
        digest = await hash.finish();
      } catch (err) {
        hash.drop();
        throw err;
      }
      if (done !== asset.size || digest !== asset.asset_hash) {
        // Never kept: a wrong part would be resumed by the next run.
        fs.rmSync(part, { force: true });
        throw new ApiError(0, 'HASH_MISMATCH', `the downloaded bytes (${done}) do not match ${asset.asset_hash}`);
      }
      fs.renameSync(part, target);
      return received;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (err instanceof ApiError && (err.code === 'SIZE_MISMATCH' || err.code === 'HASH_MISMATCH'))
        fs.rmSync(part, { force: true });
      // The local disk is full: what this file took is given back, for the other files and whatever else runs.
      if (code === 'ENOSPC' || code === 'EDQUOT') fs.rmSync(part, { force: true });
      const retriable =
        err instanceof ApiError &&
        (err.status === 0 || err.status === 416 || err.status === 429 || err.status >= 500) &&
        err.code !== 'HASH_MISMATCH' &&
        err.code !== 'SIZE_MISMATCH';
      if (!retriable || attempt >= RETRY_DELAYS_MS.length) throw err;
      await new Promise((r) =>
        setTimeout(r, err.retryAfter !== undefined ? retryDelayMs(err.retryAfter, attempt) : RETRY_DELAYS_MS[attempt]),
      );
    }
  }
}

/** `assets pull`: every matching asset into `dir`, skipping files already there with the right hash. */
export async function pull(
  client: ApiClient,
  dir: string,
  opts: PullOptions,
  progress: Progress,
): Promise<PullResult[]> {
  const assets: Asset[] = [];
  for await (const a of client.listAll({ tags: opts.tags, nameContains: opts.nameContains })) assets.push(a);
  const plan = planPaths(assets, opts.comfyui, foldsCase(dir)).filter((p) => !p.duplicate);
  for (const p of plan) if (p.primary) progress.addTotal(p.asset.size);

  const hasher = new FileHasher();
  try {
    return await pullAll(client, hasher, dir, plan, opts, progress);
  } finally {
    await hasher.close();
  }
}

/**
 * Each asset's path in the target folder, and why it cannot be written when it cannot: its path is another asset's
 * (written once, by the first), a folder of another asset's path (`dir` beside `dir/x`), or another asset's
 * temporary `.part` file (`x.part` beside `x`).
 */
export function planPaths(assets: Asset[], comfyui: boolean, foldCase = false): PlannedPath[] {
  // Every path of every asset (pullPaths: its recorded tree paths); the first of an asset's paths is downloaded, the
  // others are made from it.
  const entries = assets.flatMap((asset) =>
    pullPaths(asset, comfyui).map((rel, i) => ({ asset, rel, first: i === 0 })),
  );
  const rels = entries.map((e) => e.rel);
  // Paths as the target's file system tells them apart: on one that ignores letter case and Unicode normalisation
  // (macOS, Windows), `Model.bin` and `model.bin` are one file.
  const keyOf = foldCase ? (rel: string) => rel.normalize('NFC').toLowerCase() : (rel: string) => rel;
  const firstOf = new Map<string, string>();
  const folders = new Map<string, string>();
  const firstIndex = new Map<string, number>();
  for (const [i, rel] of rels.entries()) {
    const key = keyOf(rel);
    if (!firstOf.has(key)) {
      firstOf.set(key, entries[i]!.asset.id);
      firstIndex.set(key, i);
    }
    for (let j = key.indexOf('/'); j >= 0; j = key.indexOf('/', j + 1))
      if (!folders.has(key.slice(0, j))) folders.set(key.slice(0, j), entries[i]!.asset.id);
  }
  return entries.map(({ asset, rel, first: primary }, i) => {
    const key = keyOf(rel);
    const first = firstOf.get(key)!;
    let takenBy: string | undefined;
    // One asset's two recorded paths that are one file here (case-folding file systems): written once.
    if (first === asset.id && firstIndex.get(key) !== i)
      return { asset, rel, takenBy: undefined, primary, duplicate: true };
    if (first !== asset.id) takenBy = `${rel} is also the path of asset ${first}; not written twice`;
    else if (folders.has(key)) takenBy = `${rel} is a folder of asset ${folders.get(key)}'s path`;
    else if (key.endsWith('.part') && firstOf.has(key.slice(0, -5)))
      takenBy = `${rel} is where asset ${firstOf.get(key.slice(0, -5))} is downloaded to first`;
    return { asset, rel, takenBy, primary };
  });
}

export interface PlannedPath {
  asset: Asset;
  rel: string;
  /** Why it cannot be written, when it cannot. */
  takenBy: string | undefined;
  /** The asset's first path (downloaded); its other paths are made from it. */
  primary: boolean;
  /** The same file as an earlier path of the same asset: nothing to do. */
  duplicate?: boolean;
}

/** Whether the file system of `dir` (made if missing) takes names that differ only in letter case for one. */
function foldsCase(dir: string): boolean {
  const probe = path.join(dir, `.assets-case-${process.pid}-${Date.now()}-a`);
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(probe, '', { flag: 'wx' });
    return fs.existsSync(`${probe.slice(0, -1)}A`);
  } catch {
    return false;
  } finally {
    fs.rmSync(probe, { force: true });
  }
}

/** Writes the whole block (a write may take only part of it, as on a disk about to be full). */
async function writeFully(fh: fsp.FileHandle, block: Buffer): Promise<void> {
  for (let at = 0; at < block.length;) {
    const { bytesWritten } = await fh.write(block, at, block.length - at);
    at += bytesWritten;
  }
}

async function pullAll(
  client: ApiClient,
  hasher: FileHasher,
  dir: string,
  plan: PlannedPath[],
  opts: PullOptions,
  progress: Progress,
): Promise<PullResult[]> {
  const others = new Map<string, PlannedPath[]>();
  for (const p of plan) if (!p.primary) others.set(p.asset.id, [...(others.get(p.asset.id) ?? []), p]);
  const failure = (base: Omit<PullResult, 'action'>, rel: string, err: unknown): PullResult => {
    const e =
      err instanceof ApiError
        ? { code: err.code, message: err.message }
        : { code: (err as NodeJS.ErrnoException).code ?? 'ERROR', message: (err as Error).message };
    progress.log(`FAILED   ${rel}: ${e.code}: ${e.message}`);
    return { ...base, action: 'failed', error: e };
  };
  const groups = await mapPool(
    plan.filter((p) => p.primary),
    opts.concurrency,
    async ({ asset, rel, takenBy }): Promise<PullResult[]> => {
      const base = { asset_id: asset.id, name: asset.name, path: rel, size: asset.size };
      let first: PullResult;
      try {
        if (takenBy !== undefined) throw new ApiError(0, 'PATH_TAKEN', takenBy);
        const target = resolveInside(dir, rel);
        if (fs.lstatSync(target, { throwIfNoEntry: false })?.isDirectory())
          throw new ApiError(0, 'PATH_TAKEN', `${rel} is a folder in ${dir}; not replaced`);
        if (await hasRightContent(hasher, target, asset)) {
          progress.log(`present  ${rel}`);
          first = { ...base, action: 'present', bytes_received: 0 };
        } else {
          const bar = progress.item(`↓ ${rel}`, asset.size);
          const received = await download(client, hasher, asset, target, (n) => bar.update(n)).catch((err: unknown) => {
            bar.finish(); // no bar left behind; the failure is reported with the path
            throw err;
          });
          bar.finish(`pulled   ${rel} (${formatBytes(asset.size)})`);
          first = { ...base, action: 'downloaded', bytes_received: received };
        }
      } catch (err) {
        return [
          failure(base, rel, err),
          ...(others.get(asset.id) ?? []).map((o) =>
            failure(
              { ...base, path: o.rel },
              o.rel,
              new ApiError(0, 'NOT_PULLED', `its first path ${rel} could not be pulled`),
            ),
          ),
        ];
      }
      const out = [first];
      for (const o of others.get(asset.id) ?? []) {
        const b = { ...base, path: o.rel };
        try {
          if (o.takenBy !== undefined) throw new ApiError(0, 'PATH_TAKEN', o.takenBy);
          out.push({
            ...b,
            ...(await placeCopy(hasher, resolveInside(dir, rel), resolveInside(dir, o.rel), asset, opts.link === true)),
          });
          progress.log(`${out[out.length - 1]!.action.padEnd(8)} ${o.rel}`);
        } catch (err) {
          out.push(failure(b, o.rel, err));
        }
      }
      return out;
    },
  );
  return groups.flat();
}

/**
 * Another path of an asset already pulled to `source`: a hard link to it (`link`) or a copy (a reflink where the file
 * system offers one), written under a temporary name and renamed; `present` when it is there already.
 */
async function placeCopy(
  hasher: FileHasher,
  source: string,
  target: string,
  asset: Asset,
  link: boolean,
): Promise<{ action: 'present' | 'copied' | 'linked' }> {
  const st = fs.lstatSync(target, { throwIfNoEntry: false });
  if (st?.isDirectory()) throw new ApiError(0, 'PATH_TAKEN', `${target} is a folder; not replaced`);
  const src = fs.statSync(source);
  if (link ? st?.isFile() && st.ino === src.ino && st.dev === src.dev : await hasRightContent(hasher, target, asset))
    return { action: 'present' };
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const part = `${target}.part`;
  fs.rmSync(part, { force: true });
  if (link) fs.linkSync(source, part);
  else await fsp.copyFile(source, part, fs.constants.COPYFILE_FICLONE);
  fs.renameSync(part, target);
  return { action: link ? 'linked' : 'copied' };
}

/** The `extra_model_paths.yaml` entry that points ComfyUI at the model folders `pull --comfyui` wrote. */
export function extraModelPathsYaml(dir: string, results: PullResult[]): string {
  const folders = new Set<string>();
  for (const r of results) {
    const m = /^models\/([^/]+)\//.exec(r.path);
    if (m && r.action !== 'failed') folders.add(m[1]!);
  }
  const lines = ['assets:', `    base_path: ${JSON.stringify(path.resolve(dir))}`];
  const key = (f: string): string => (/^[A-Za-z0-9_.-]+$/.test(f) ? f : JSON.stringify(f));
  for (const f of [...folders].sort()) lines.push(`    ${key(f)}: ${JSON.stringify(`models/${f}/`)}`);
  // Quoted by JSON.stringify; the C1 controls it leaves as they are escaped too (a YAML double-quoted \u escape).
  return lines.map(printable).join('\n') + '\n';
}
