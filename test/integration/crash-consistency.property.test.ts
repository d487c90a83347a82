/**
 * Crash consistency on the disk store, as a property over real processes: a random mixed workload (multipart
 * uploads with duplicate bytes, tus uploads cut into PATCHes, some empty, some terminated midway, asset deletes,
 * from-hash creates, PUT edits), a few requests at a time, against a spawned service that is SIGKILLed at a random
 * moment while requests are in flight; a new process on the same database and data dir; the invariants; again, for
 * several crash/restart rounds per run. Requests the kill cuts simply fail: the model keeps only what the client was
 * told (a 2xx), and an operation whose answer was lost may or may not have happened.
 *
 * The invariants after each restart (see `check`):
 * 1. every asset acknowledged as created, and never asked to be deleted, exists with its hash and downloads with it;
 *    one whose delete was acknowledged is 404;
 * 2. every listed asset downloads with the BLAKE3 its asset_hash names; no listing, read or download answers 5xx;
 * 3. an acknowledged tus upload is there (HEAD 200) unless asked to be terminated (404 once acknowledged); an
 *    unfinished one reports at least the offset acknowledged and at most the bytes of its part on disk, and finishes
 *    from there into an asset of the right hash; a finished one names the asset its last PATCH answered;
 * 4. once the new process is ready, blobs/.tmp holds no temporary of a dead process (FsBlobStore.removeDeadTemps);
 * 5. once the start-up reconciliation has run (CONTENT_GC_GRACE_SECONDS=0): no content row without its blob file,
 *    no blob file without a content row, and every content row no asset uses is marked orphaned (so GC takes it).
 *    Whether GC then removes it is not checked: a GC job the dead process held is only retried by the quarter-hourly
 *    sweep (content.gc-sweep), which no route can trigger.
 *
 * The same property runs on S3 (Ceph RGW, CRASH_RUNS_S3 runs, default 2), where invariant 4 is the hourly sweeper's.
 *
 * CRASH_RUNS (default 5, about a minute) sets the runs; a failure names fast-check's seed and the workload, and
 * FUZZ_SEED replays that seed's workloads (not the kill's exact timing, which depends on the machine):
 * `CRASH_RUNS=30 FUZZ_SEED=123 npx jest test/integration/crash-consistency.property`. CRASH_STATS=1 prints how the
 * requests ended (to see that kills land mid-request, and where uploads were found after them).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { Client } from 'pg';
import { blake3Of, createTestDatabase, uploadForm, waitFor } from '../helpers/harness';
import { FUZZ_SEED } from '../helpers/hostile';
import { spawnService, type ServiceProcess } from '../helpers/service-process';
import { startRgw, type TestS3Server } from '../helpers/rgw';
import { TUS, tusMetadata } from '../helpers/tus';

const CRASH_RUNS = Number(process.env.CRASH_RUNS) > 0 ? Number(process.env.CRASH_RUNS) : 5;
const OPTS = { numRuns: CRASH_RUNS, endOnFailure: true, ...FUZZ_SEED };
/** Runs on S3 (CRASH_RUNS_S3, default 2): the same workloads, fewer of them, as each costs as much again. */
const CRASH_RUNS_S3 = Number(process.env.CRASH_RUNS_S3) > 0 ? Number(process.env.CRASH_RUNS_S3) : 2;
// A restart costs a few seconds; an upload whose PATCH the kill cut keeps its lease (10 s) until it lapses.
jest.setTimeout(Math.max(120_000, CRASH_RUNS * 60_000));

const KiB = 1024;
/** Requests of the workload at once. */
const CONCURRENCY = 3;
/** Any single request: bounded, so a hang fails the run instead of the suite's timeout. */
const REQUEST_MS = 60_000;

// ---- the workload -------------------------------------------------------------------------------------------------

/** The contents of one run: few, so that uploads and from-hash meet the same bytes (dedupe). */
interface ContentSpec {
  seed: number;
  size: number;
}

type Op =
  | { kind: 'upload'; content: number; tags: string[] }
  | { kind: 'tus'; content: number; chunks: number; terminateAfter: number | undefined; tags: string[] }
  | { kind: 'fromHash'; content: number; tags: string[] }
  | { kind: 'delete'; pick: number }
  | { kind: 'edit'; pick: number; tags: string[] };

interface Round {
  ops: Op[];
  /** The kill comes `killDelayMs` after this many operations ended (all of them: once the workload is done). */
  killAfterOps: number;
  killDelayMs: number;
}

interface Workload {
  contents: ContentSpec[];
  rounds: Round[];
}

const CONTENTS = 6;
const tagsArb = fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'models', 'loras', 'input'), {
  minLength: 1,
  maxLength: 3,
});
const contentArb = fc.nat({ max: CONTENTS - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('upload' as const), content: contentArb, tags: tagsArb }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('tus' as const),
      content: contentArb,
      chunks: fc.integer({ min: 1, max: 6 }),
      terminateAfter: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined, freq: 4 }),
      tags: tagsArb,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('fromHash' as const), content: contentArb, tags: tagsArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('edit' as const), pick: fc.nat(), tags: tagsArb }) },
);
const workloadArb: fc.Arbitrary<Workload> = fc.record({
  contents: fc.array(
    fc.record({
      seed: fc.nat(),
      // Empty, small, and a few large enough (up to 3 MiB) that a PATCH or an upload is still streaming at the kill.
      size: fc.oneof(
        { weight: 1, arbitrary: fc.constant(0) },
        { weight: 3, arbitrary: fc.integer({ min: 1, max: 64 * KiB }) },
        { weight: 3, arbitrary: fc.integer({ min: 256 * KiB, max: 3 * 1024 * KiB }) },
      ),
    }),
    { minLength: CONTENTS, maxLength: CONTENTS },
  ),
  rounds: fc.array(
    fc.record({
      ops: fc.array(opArb, { minLength: 4, maxLength: 14 }),
      killAfterOps: fc.nat({ max: 10 }),
      // Mostly at once; sometimes late enough (GC jobs are due 1 s after a delete) for the kill to meet a collection.
      killDelayMs: fc.oneof(
        { weight: 3, arbitrary: fc.integer({ min: 0, max: 400 }) },
        { weight: 1, arbitrary: fc.integer({ min: 800, max: 2500 }) },
      ),
    }),
    { minLength: 2, maxLength: 3 },
  ),
});

/** The bytes of a content: AES-CTR over zeros keyed by its seed (deterministic, fast, incompressible). */
function bytesOf(spec: ContentSpec): Buffer {
  const key = crypto.createHash('sha256').update(String(spec.seed)).digest().subarray(0, 16);
  return crypto.createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(spec.size));
}

// ---- what the client was told -------------------------------------------------------------------------------------

interface AssetModel {
  hash: string;
  deleteAsked: boolean;
  deleteAcked: boolean;
  /** The tag lists that may be the asset's: its creation's, and every edit sent (acknowledged or not). */
  tagChoices: Set<string>;
  /** False once an answer named it for a create of existing content (whose tags that create did not set). */
  tagsKnown: boolean;
}

interface UploadModel {
  data: Buffer;
  acked: number;
  terminateAsked: boolean;
  terminateAcked: boolean;
  /** The asset the last PATCH (or the creation of an empty upload) answered. */
  assetId: string | undefined;
}

class Model {
  readonly assets = new Map<string, AssetModel>();
  readonly uploads = new Map<string, UploadModel>();
  /** Invariant violations, each a line naming what was sent and what came back. */
  readonly failures: string[] = [];

  created(id: string, hash: string, tags: string[], isNew: boolean): void {
    const known = this.assets.get(id);
    if (known) {
      if (known.hash !== hash) this.failures.push(`asset ${id} answered with hash ${hash}, before ${known.hash}`);
      known.tagsKnown &&= isNew;
      return;
    }
    this.assets.set(id, {
      hash,
      deleteAsked: false,
      deleteAcked: false,
      tagChoices: new Set([tagKey(tags)]),
      tagsKnown: isNew,
    });
  }

  /** An asset id for a delete or an edit: any the client has heard of, deleted ones too (their 404 is fine). */
  pick(n: number): string | undefined {
    const ids = [...this.assets.keys()];
    return ids.length === 0 ? undefined : ids[n % ids.length];
  }
}

const tagKey = (tags: string[]): string => JSON.stringify([...tags].sort());

// ---- running a round ----------------------------------------------------------------------------------------------

/**
 * One request; `undefined` when it got no answer (the process died under it). A 5xx is recorded as a failure.
 * `label` names the kind of request for CRASH_STATS, `detail` the request itself for a failure's message.
 */
async function call(
  model: Model,
  svc: ServiceProcess,
  label: string,
  detail: string,
  pathname: string,
  init: RequestInit = {},
): Promise<{ status: number; headers: Headers; body: Buffer } | undefined> {
  const what = `${label}: ${detail}`;
  try {
    const res = await svc.fetch(pathname, { ...init, signal: AbortSignal.timeout(REQUEST_MS) });
    const body = Buffer.from(await res.arrayBuffer());
    count(`${label} ${res.status}`);
    if (res.status >= 500) model.failures.push(`${what}: ${res.status} ${body.toString().slice(0, 300)}`);
    return { status: res.status, headers: res.headers, body };
  } catch (err) {
    // A timeout is a hang, not a crash: the kill ends every request at once.
    if ((err as Error).name === 'TimeoutError') model.failures.push(`${what}: no answer within ${REQUEST_MS} ms`);
    count(`${label} cut`);
    return undefined;
  }
}

const parse = (body: Buffer): any => JSON.parse(body.toString());

/** With CRASH_STATS=1, how the requests ended (by kind and status, `cut` for none) is printed at the end. */
const STATS: Record<string, number> = {};
const count = (key: string) => (STATS[key] = (STATS[key] ?? 0) + 1);
afterAll(() => {
  if (process.env.CRASH_STATS)
    console.log(
      Object.entries(STATS)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, n]) => `${n}\t${k}`)
        .join('\n'),
    );
});

async function runOp(model: Model, svc: ServiceProcess, op: Op, datas: Buffer[]): Promise<void> {
  const what = JSON.stringify(op);
  switch (op.kind) {
    case 'upload': {
      const data = datas[op.content]!;
      const r = await call(model, svc, 'upload', what, '/api/assets', {
        method: 'POST',
        body: uploadForm(data, { tags: JSON.stringify(op.tags) }, `c${op.content}.bin`),
      });
      if (r?.status !== 200 && r?.status !== 201) return;
      const asset = parse(r.body);
      if (asset.asset_hash !== blake3Of(data))
        model.failures.push(`${what}: answered asset_hash ${asset.asset_hash}, sent ${blake3Of(data)}`);
      model.created(asset.id, asset.asset_hash, op.tags, r.status === 201);
      return;
    }
    case 'fromHash': {
      const hash = blake3Of(datas[op.content]!);
      const r = await call(model, svc, 'from-hash', what, '/api/assets/from-hash', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ hash, tags: op.tags }),
      });
      if (r?.status !== 200 && r?.status !== 201) return;
      const asset = parse(r.body);
      if (asset.asset_hash !== hash) model.failures.push(`${what}: answered asset_hash ${asset.asset_hash}`);
      model.created(asset.id, asset.asset_hash, op.tags, r.status === 201);
      return;
    }
    case 'delete': {
      const id = model.pick(op.pick);
      if (!id) return;
      const m = model.assets.get(id)!;
      m.deleteAsked = true;
      const r = await call(model, svc, 'DELETE asset', `${what} of ${id}`, `/api/assets/${id}`, { method: 'DELETE' });
      if (r?.status === 204) m.deleteAcked = true;
      return;
    }
    case 'edit': {
      const id = model.pick(op.pick);
      if (!id) return;
      model.assets.get(id)!.tagChoices.add(tagKey(op.tags));
      await call(model, svc, 'PUT asset', `${what} of ${id}`, `/api/assets/${id}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tags: op.tags, user_metadata: { edit: op.pick } }),
      });
      return;
    }
    case 'tus':
      return runTus(model, svc, op, datas[op.content]!);
  }
}

async function runTus(
  model: Model,
  svc: ServiceProcess,
  op: Extract<Op, { kind: 'tus' }>,
  data: Buffer,
): Promise<void> {
  const what = JSON.stringify(op);
  const created = await call(model, svc, 'tus POST', what, '/api/uploads', {
    method: 'POST',
    headers: {
      ...TUS,
      'Upload-Length': String(data.length),
      'Upload-Metadata': tusMetadata({ filename: `c${op.content}.bin`, tags: JSON.stringify(op.tags) }),
    },
  });
  if (created?.status !== 201) return;
  const id = created.headers.get('location')!.split('/').pop()!;
  const up: UploadModel = { data, acked: 0, terminateAsked: false, terminateAcked: false, assetId: undefined };
  model.uploads.set(id, up);
  const finished = (headers: Headers) => {
    const assetId = headers.get('asset-id');
    if (!assetId) return;
    up.assetId = assetId;
    model.created(assetId, blake3Of(data), op.tags, headers.get('asset-created') === 'true');
  };
  finished(created.headers);
  const step = Math.ceil(data.length / op.chunks);
  for (let i = 0; i < op.chunks && up.acked < data.length; i++) {
    if (op.terminateAfter === i) break;
    const r = await call(model, svc, 'tus PATCH', `${what} at ${up.acked} of ${id}`, `/api/uploads/${id}`, {
      method: 'PATCH',
      headers: { ...TUS, 'Upload-Offset': String(up.acked), 'Content-Type': 'application/offset+octet-stream' },
      body: data.subarray(up.acked, up.acked + step),
    });
    if (r?.status !== 204) return;
    up.acked = Number(r.headers.get('upload-offset'));
    finished(r.headers);
  }
  if (op.terminateAfter === undefined || up.assetId) return;
  up.terminateAsked = true;
  const r = await call(model, svc, 'tus DELETE', `${what} of ${id}`, `/api/uploads/${id}`, {
    method: 'DELETE',
    headers: TUS,
  });
  if (r?.status === 204) up.terminateAcked = true;
}

/** Runs the round's operations, CONCURRENCY at a time, SIGKILLs `svc` at the round's moment; resolves once dead. */
async function runRound(model: Model, svc: ServiceProcess, round: Round, datas: Buffer[]): Promise<void> {
  let next = 0;
  let ended = 0;
  let killed: Promise<void> | undefined;
  const killAt = Math.min(round.killAfterOps, round.ops.length);
  const kill = () =>
    (killed ??= new Promise<void>((r) => setTimeout(r, round.killDelayMs)).then(() => svc.kill('SIGKILL')));
  if (killAt === 0) void kill();
  const worker = async () => {
    while (next < round.ops.length && svc.proc.exitCode === null && svc.proc.signalCode === null) {
      await runOp(model, svc, round.ops[next++]!, datas);
      if (++ended === killAt) void kill();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  await kill();
}

// ---- the invariants -----------------------------------------------------------------------------------------------

interface Stack {
  env: Record<string, string>;
  dataDir: string;
  db: Client;
  store: StoreView;
}

/** What the invariants read of the blob store, without the service. */
interface StoreView {
  /** Every object named like a blob (`ab/cd/<hex>`; derived files such as thumbnails aside). */
  blobs(): Promise<Set<string>>;
  /** Bytes of a tus upload's part. */
  partSize(id: string): Promise<number>;
  /** Temporaries of processes other than `pid` (invariant 4), where the store can tell (the disk store). */
  strayTemps(pid: number): Promise<string[]>;
}

function diskView(dataDir: string): StoreView {
  const root = path.join(dataDir, 'blobs');
  return {
    blobs: async () => {
      const found = new Set<string>();
      const hex2 = /^[0-9a-f]{2}$/;
      for (const a of fs.readdirSync(root).filter((n) => hex2.test(n))) {
        for (const b of fs.readdirSync(path.join(root, a)).filter((n) => hex2.test(n))) {
          for (const name of fs.readdirSync(path.join(root, a, b))) if (/^[0-9a-f]{64}$/.test(name)) found.add(name);
        }
      }
      return found;
    },
    partSize: async (id) => {
      const part = path.join(root, '.partial', `upload-${id}`);
      return fs.existsSync(part) ? fs.statSync(part).size : 0;
    },
    strayTemps: async (pid) => {
      const prefix = `${os.hostname().replace(/[^\w-]/g, '_')}.${pid}.`;
      return fs.readdirSync(path.join(root, '.tmp')).filter((n) => !n.startsWith(prefix));
    },
  };
}

/**
 * On S3 a part is its run of segment objects; temporaries of a dead process are the hourly sweeper's (any instance
 * may own them), so invariant 4 has nothing to check there.
 */
function s3View(s3: TestS3Server): StoreView {
  return {
    blobs: async () =>
      new Set((await s3.objectKeys()).flatMap((k) => /^[0-9a-f]{2}\/[0-9a-f]{2}\/([0-9a-f]{64})$/.exec(k)?.[1] ?? [])),
    partSize: async (id) => {
      const res = await s3.client.send(
        new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `.partial/upload-${id}/` }),
      );
      return (res.Contents ?? []).filter((o) => /\/\d{16}$/.test(o.Key ?? '')).reduce((n, o) => n + (o.Size ?? 0), 0);
    },
    strayTemps: async () => [],
  };
}

async function contentRows(stack: Stack): Promise<Set<string>> {
  return new Set((await stack.db.query<{ blake3: string }>('SELECT blake3 FROM content')).rows.map((r) => r.blake3));
}

/** Downloads asset `id`'s content and compares its BLAKE3 with `hash`. */
async function checkContent(model: Model, svc: ServiceProcess, id: string, hash: string): Promise<void> {
  const r = await call(model, svc, 'check GET content', id, `/api/assets/${id}/content`);
  if (r && r.status !== 200) model.failures.push(`invariant 2: content of ${id} answered ${r.status}`);
  else if (r && blake3Of(r.body) !== hash)
    model.failures.push(`invariant 2: content of ${id} has ${blake3Of(r.body)}, its asset_hash is ${hash}`);
}

async function checkAssets(model: Model, svc: ServiceProcess): Promise<void> {
  // The assets known before the listing: uploads finished beside this check add theirs, for the next round to check.
  const known = [...model.assets];
  // 2: the listing, paged through, and every asset in it.
  const listed = new Map<string, any>();
  let after: string | undefined;
  for (let page = 0; page < 100; page++) {
    const r = await call(
      model,
      svc,
      'check GET /api/assets',
      `after ${after}`,
      `/api/assets?limit=500${after ? `&after=${encodeURIComponent(after)}` : ''}`,
    );
    if (r?.status !== 200) {
      model.failures.push(`invariant 2: the listing answered ${r?.status ?? 'nothing'}`);
      return;
    }
    const body = parse(r.body);
    for (const a of body.assets) listed.set(a.id, a);
    if (!body.has_more) break;
    after = body.next_cursor;
  }
  for (const [id, a] of listed) await checkContent(model, svc, id, a.asset_hash);

  // 1: what the client was told.
  for (const [id, m] of known) {
    const r = await call(model, svc, 'check GET asset', id, `/api/assets/${id}`);
    if (!r) continue;
    if (m.deleteAcked) {
      if (r.status !== 404) model.failures.push(`invariant 1: asset ${id} was deleted (204) but answers ${r.status}`);
      continue;
    }
    if (r.status === 404 && m.deleteAsked) continue;
    if (r.status !== 200) {
      model.failures.push(`invariant 1: acknowledged asset ${id} answers ${r.status}`);
      continue;
    }
    const asset = parse(r.body);
    if (asset.asset_hash !== m.hash)
      model.failures.push(`invariant 1: asset ${id} has asset_hash ${asset.asset_hash}, acknowledged ${m.hash}`);
    if (!listed.has(id)) model.failures.push(`invariant 2: asset ${id} exists but is not listed`);
    if (m.tagsKnown && !m.tagChoices.has(tagKey(asset.tags))) {
      model.failures.push(
        `invariant 1: asset ${id} has tags ${JSON.stringify(asset.tags)}, none of those sent (${[...m.tagChoices].join(' ')})`,
      );
    }
    await checkContent(model, svc, id, m.hash);
  }
}

/** 3: every upload the client knows of; unfinished ones are finished here (and become assets of the model). */
async function checkUpload(
  model: Model,
  svc: ServiceProcess,
  stack: Stack,
  id: string,
  up: UploadModel,
): Promise<void> {
  const head = await call(model, svc, 'check HEAD upload', id, `/api/uploads/${id}`, { method: 'HEAD', headers: TUS });
  if (!head) return;
  if (up.terminateAcked || (up.terminateAsked && head.status === 404)) {
    if (head.status !== 404)
      model.failures.push(`invariant 3: upload ${id} was terminated (204) but HEAD answers ${head.status}`);
    model.uploads.delete(id);
    return;
  }
  if (head.status !== 200) {
    model.failures.push(
      `invariant 3: upload ${id} (acknowledged offset ${up.acked} of ${up.data.length}) answers HEAD ${head.status}`,
    );
    model.uploads.delete(id);
    return;
  }
  const offset = Number(head.headers.get('upload-offset'));
  let assetId = head.headers.get('asset-id') ?? undefined;
  if (offset < up.acked)
    model.failures.push(`invariant 3: upload ${id} reports offset ${offset}, ${up.acked} were acknowledged`);
  count(
    assetId
      ? 'upload found finished'
      : offset > up.acked
        ? 'upload found past its acknowledged offset'
        : 'upload found at its acknowledged offset',
  );
  if (!assetId) {
    const stored = await stack.store.partSize(id);
    if (offset > stored)
      model.failures.push(`invariant 3: upload ${id} reports offset ${offset}, its part holds ${stored} bytes`);
    const r = await call(model, svc, 'check PATCH the rest', `${id} from ${offset}`, `/api/uploads/${id}`, {
      method: 'PATCH',
      headers: { ...TUS, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' },
      body: up.data.subarray(offset),
    });
    if (!r) return;
    assetId = r.headers.get('asset-id') ?? undefined;
    if (r.status !== 204 || !assetId) {
      model.failures.push(
        `invariant 3: finishing upload ${id} from offset ${offset} answered ${r.status} ${r.body.toString().slice(0, 200)}`,
      );
      model.uploads.delete(id);
      return;
    }
  } else if (up.assetId && assetId !== up.assetId) {
    model.failures.push(`invariant 3: upload ${id} names asset ${assetId}, its last PATCH answered ${up.assetId}`);
  }
  // A finished upload names its asset for good, deleted or not: the model follows the asset from here on.
  model.uploads.delete(id);
  if (model.assets.get(assetId)?.deleteAsked) return;
  const asset = await call(
    model,
    svc,
    'check GET upload asset',
    `${assetId} of upload ${id}`,
    `/api/assets/${assetId}`,
  );
  if (asset?.status !== 200) {
    if (asset) model.failures.push(`invariant 3: the asset ${assetId} of upload ${id} answers ${asset.status}`);
    return;
  }
  const hash = parse(asset.body).asset_hash;
  if (hash !== blake3Of(up.data))
    model.failures.push(`invariant 3: upload ${id} made asset ${assetId} of ${hash}, sent ${blake3Of(up.data)}`);
  if (!model.assets.has(assetId)) model.created(assetId, hash, [], false);
}

/** 4 and 5, and then 1–3, against `svc`, a new process on the stack of the one that died. */
async function check(model: Model, svc: ServiceProcess, stack: Stack): Promise<void> {
  // 4: start-up removed every temporary of a dead process before the service answered ready.
  const stray = await stack.store.strayTemps(svc.proc.pid!);
  if (stray.length > 0)
    model.failures.push(`invariant 4: blobs/.tmp holds temporaries of dead processes: ${stray.join(', ')}`);

  // 5: after the background reconciliation, before any request of ours makes content. A GC job of the new process may
  // be between a row's delete and its blob's (the blob goes after the row), hence the wait for blobs without rows;
  // listing the blobs before reading the rows makes the other direction exact.
  await waitFor(async () => (svc.logs().some((l) => l.msg === 'start-up reconciliation finished') ? true : undefined), {
    timeoutMs: 30_000,
    what: 'the start-up reconciliation',
  });
  const files = await stack.store.blobs();
  const rowless = [...(await contentRows(stack))].filter((h) => !files.has(h));
  if (rowless.length > 0) model.failures.push(`invariant 5: content rows without their blob: ${rowless.join(', ')}`);
  let rowsMissing: string[] = [];
  await waitFor(
    async () => {
      const rows = await contentRows(stack);
      rowsMissing = [...(await stack.store.blobs())].filter((h) => !rows.has(h));
      return rowsMissing.length === 0 ? true : undefined;
    },
    { timeoutMs: 10_000, what: 'blobs without content rows to go' },
  ).catch(() => undefined);
  if (rowsMissing.length > 0)
    model.failures.push(`invariant 5: blob files without a content row: ${rowsMissing.join(', ')}`);
  const unmarked = await stack.db.query<{ blake3: string }>(
    `SELECT blake3 FROM content c WHERE orphaned_at IS NULL AND NOT EXISTS (SELECT 1 FROM asset a WHERE a.content_hash = c.blake3)`,
  );
  if (unmarked.rows.length > 0)
    model.failures.push(
      `invariant 5: content no asset uses, never marked orphaned: ${unmarked.rows.map((r) => r.blake3).join(', ')}`,
    );

  await Promise.all([
    checkAssets(model, svc),
    ...[...model.uploads].map(([id, up]) => checkUpload(model, svc, stack, id, up)),
  ]);
}

// ---- the property -------------------------------------------------------------------------------------------------

const procs = new Set<ServiceProcess>();
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all([...procs].map((p) => p.kill('SIGKILL')));
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

async function start(stack: Stack): Promise<ServiceProcess> {
  const svc = await spawnService(stack.env);
  procs.add(svc);
  return svc;
}

async function crashRun(workload: Workload, s3?: TestS3Server): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-tests-crash-'));
  dirs.push(dataDir);
  const databaseUrl = await createTestDatabase();
  // GC at once (grace 0) so its row-then-blob deletes run beside the workload; no free-space floor on a small disk.
  const env = {
    ...s3?.env,
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    CONTENT_GC_GRACE_SECONDS: '0',
    STORAGE_MIN_FREE_BYTES: '0',
  };
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  const stack: Stack = { env, dataDir, db, store: s3 ? s3View(s3) : diskView(dataDir) };
  const model = new Model();
  const datas = workload.contents.map(bytesOf);
  let svc: ServiceProcess | undefined;
  try {
    svc = await start(stack);
    for (const [i, round] of workload.rounds.entries()) {
      await runRound(model, svc, round, datas);
      procs.delete(svc);
      svc = await start(stack);
      await check(model, svc, stack);
      if (model.failures.length > 0) {
        throw new Error(
          `after the crash of round ${i + 1}:\n  ${model.failures.join('\n  ')}\nworkload: ${JSON.stringify(workload)}`,
        );
      }
    }
  } finally {
    await svc?.kill('SIGKILL');
    if (svc) procs.delete(svc);
    await db.end();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

test('SIGKILLed at random moments of a mixed workload, a restarted service keeps what it acknowledged, and nothing else', async () => {
  await fc.assert(
    fc.asyncProperty(workloadArb, (w) => crashRun(w)),
    OPTS,
  );
});

test('the same on S3 (Ceph RGW), each run in a bucket of its own', async () => {
  const rgw = await startRgw();
  await fc.assert(
    fc.asyncProperty(workloadArb, async (w) => {
      const s3 = await rgw.newBucket();
      try {
        await crashRun(w, s3);
      } finally {
        await s3.stop();
      }
    }),
    { ...OPTS, numRuns: CRASH_RUNS_S3 },
  );
});
