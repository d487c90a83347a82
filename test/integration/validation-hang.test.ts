/**
 * No request blocks the event loop in validation (issue: a 100-character mime_type froze an instance). Every text
 * input a client controls gets the shapes that make a backtracking expression explode: a run of one repeated part at
 * the field's maximum length, then a character that cannot match; the REST, multipart, tus and GraphQL ways in; and
 * the fuzzer's own case (`text/plain` + `;  \t ` repeated + `;\u0001`). The service runs as its own process, so a
 * blocked loop cannot block the test: each request must be answered within a generous bound while a probe keeps
 * asking /healthz, and the longest wait the probe saw is bounded too (a hang detector, not a timing assertion: the
 * expression of before took longer than a day on one 255-character value).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase, KEYS } from '../helpers/harness';
import { rawRequest } from '../helpers/raw-http';
import { spawnService, type ServiceProcess } from '../helpers/service-process';

const HANG_MS = 10_000;

let svc: ServiceProcess;
let dataDir: string;
let asset: { id: string; asset_hash: string };
const probe = { stop: false, longestMs: 0, answers: 0, done: Promise.resolve() };

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'asset-hang-'));
  svc = await spawnService({
    DATABASE_URL: await createTestDatabase(),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ADMIN_API_KEYS: `admin:${KEYS.admin}`,
    // Failed keys are part of the attack; the limiter would answer them all 429 before validation.
    AUTH_FAILURES_PER_MINUTE: '1000000000',
  });
  const form = new FormData();
  form.append('file', new Blob([Buffer.from(`hang-${Date.now()}`)]), 'mine.txt');
  asset = (await (await svc.fetch('/api/assets', { method: 'POST', body: form })).json()) as typeof asset;
  expect(asset.asset_hash).toMatch(/^blake3:/);
  probe.done = (async () => {
    while (!probe.stop) {
      const t = Date.now();
      const res = await fetch(`${svc.url}/healthz`, { signal: AbortSignal.timeout(HANG_MS * 3) });
      await res.arrayBuffer();
      probe.longestMs = Math.max(probe.longestMs, Date.now() - t);
      probe.answers++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
}, 120_000);

afterAll(async () => {
  probe.stop = true;
  // A blocked process does not act on SIGTERM.
  await svc?.kill('SIGKILL');
  await probe.done.catch(() => undefined);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** The repeated parts and the characters that end a run without matching. */
const UNITS = [
  ' ',
  '\t',
  ' \t',
  ';',
  ';  \t ',
  '; ',
  'a',
  'a=',
  'a=b;',
  'a=b ; ',
  '/',
  '"',
  '\\"',
  '\\',
  '=',
  '-',
  '0',
  ':',
  '.',
  '. ',
  ',',
  ', ',
  '%',
  '{"a":',
  '[',
  '0-,',
  'ab',
];
const TEXT_ENDS = ['\u0001', '!', ';\u0001', '\u00e9'];
/** Header values cannot carry control characters (Node's parser refuses them before any code of ours). */
const HEADER_ENDS = ['!', '\u00e9', '"'];

/** Each unit repeated after `head` up to `max` characters in all, then each end. */
function attacks(head: string, max: number, ends = TEXT_ENDS): string[] {
  const out: string[] = [];
  for (const unit of UNITS)
    for (const end of ends) {
      const room = Math.max(0, max - head.length - end.length);
      out.push(head + unit.repeat(Math.ceil(room / unit.length)).slice(0, room) + end);
    }
  return out;
}

/** The fuzzer's case at `max` characters. */
const fuzzerCase = (max: number): string => {
  const tail = ';\u0001';
  return 'text/plain' + ';  \t '.repeat(Math.ceil(max / 5)).slice(0, max - 10 - tail.length) + tail;
};

type Req = { method: string; path: string; headers?: [string, string][]; body?: Buffer };

const jsonReq = (method: string, p: string, body: unknown, key: string = KEYS.alice): Req => ({
  method,
  path: p,
  headers: [
    ['X-API-Key', key],
    ['Content-Type', 'application/json'],
  ],
  body: Buffer.from(JSON.stringify(body)),
});

const getReq = (p: string, headers: [string, string][] = [['X-API-Key', KEYS.alice]]): Req => ({
  method: 'GET',
  path: p,
  headers,
});

const BOUNDARY = 'hang-boundary-7f3a';
/** A multipart upload with `fields`, and a file part whose Content-Disposition is `disposition` when given. */
function multipartReq(fields: Record<string, string>, disposition?: string): Req {
  const parts = Object.entries(fields).map(
    ([k, v]) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`,
  );
  const file =
    `--${BOUNDARY}\r\nContent-Disposition: ${disposition ?? 'form-data; name="file"; filename="f.bin"'}\r\n` +
    `Content-Type: application/octet-stream\r\n\r\nhang-${Math.random()}\r\n--${BOUNDARY}--\r\n`;
  return {
    method: 'POST',
    path: '/api/assets',
    headers: [
      ['X-API-Key', KEYS.alice],
      ['Content-Type', `multipart/form-data; boundary=${BOUNDARY}`],
    ],
    body: Buffer.from(parts.join('') + file),
  };
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const tusReq = (metadata: string, extra: [string, string][] = []): Req => ({
  method: 'POST',
  path: '/api/uploads',
  headers: [['X-API-Key', KEYS.alice], ['Tus-Resumable', '1.0.0'], ['Upload-Length', '10'], ...extra].concat(
    metadata === '' ? [] : [['Upload-Metadata', metadata]],
  ) as [string, string][],
});

const gqlReq = (query: string, variables: Record<string, unknown>): Req =>
  jsonReq('POST', '/graphql', { query, variables });

/** GraphQL's multipart upload with `input`. */
function gqlUploadReq(input: Record<string, unknown>): Req {
  const ops = JSON.stringify({
    query:
      'mutation Up($file: Upload!, $input: UploadAssetInput) { uploadAsset(file: $file, input: $input) { createdNew } }',
    variables: { file: null, input },
  });
  const body =
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${ops}\r\n` +
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0":["variables.file"]}\r\n` +
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="0"; filename="f.bin"\r\n\r\nhang-${Math.random()}\r\n` +
    `--${BOUNDARY}--\r\n`;
  return {
    method: 'POST',
    path: '/graphql',
    headers: [
      ['X-API-Key', KEYS.alice],
      ['Apollo-Require-Preflight', 'true'],
      ['Content-Type', `multipart/form-data; boundary=${BOUNDARY}`],
    ],
    body: Buffer.from(body),
  };
}

const described = (r: Req) => `${r.method} ${r.path.slice(0, 200)} ${JSON.stringify(r.body?.toString().slice(0, 200))}`;

/** Sends every request, one after another; each must be answered (not a 5xx) before HANG_MS. */
async function expectAnswered(label: string, reqs: Req[]): Promise<void> {
  const statuses = new Map<number, number>();
  let slowest = { ms: 0, r: reqs[0] };
  for (const r of reqs) {
    let status: number;
    const t = Date.now();
    try {
      ({ status } = await rawRequest(svc.url, r.method, r.path, r.headers ?? [], r.body, { timeoutMs: HANG_MS }));
    } catch (err) {
      throw new Error(`${label}: ${(err as Error).message}: ${described(r)}`);
    }
    if (status >= 500) throw new Error(`${label}: ${status} for ${described(r)}`);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    if (Date.now() - t > slowest.ms) slowest = { ms: Date.now() - t, r };
  }
  expect(statuses.size).toBeGreaterThan(0);
  if (process.env.HANG_DEBUG) console.log(label, [...statuses], slowest.ms, described(slowest.r!).slice(0, 120));
}

const q = encodeURIComponent;
const MT = 255;

describe('each text input, at its maximum length, answers while /healthz does', () => {
  test("mime_type: the fuzzer's case on every way in", async () => {
    const v = fuzzerCase(MT);
    expect(v).toHaveLength(MT);
    await expectAnswered('mime_type', [
      jsonReq('PUT', `/api/assets/${asset.id}`, { mime_type: v }),
      jsonReq('POST', '/api/assets/from-hash', { hash: asset.asset_hash, mime_type: v }),
      jsonReq('POST', '/api/assets', { url: 'https://example.invalid/x.bin', mime_type: v }),
      multipartReq({ mime_type: v }),
      tusReq(`filename ${b64('x.bin')},mime_type ${b64(v)}`),
      gqlReq('mutation U($id: ID!, $m: String) { updateAsset(id: $id, input: { mimeType: $m }) { id } }', {
        id: asset.id,
        m: v,
      }),
      gqlUploadReq({ mimeType: v }),
    ]);
  });

  test('mime_type: every shape', async () => {
    const values = [...attacks('text/plain', MT), ...attacks('', MT), ...attacks('a/b; c="', MT)];
    await expectAnswered(
      'mime_type',
      values.flatMap((v) => [
        jsonReq('PUT', `/api/assets/${asset.id}`, { mime_type: v }),
        multipartReq({ mime_type: v }),
        tusReq(`mime_type ${b64(v)}`),
        gqlReq('mutation U($id: ID!, $m: String) { updateAsset(id: $id, input: { mimeType: $m }) { id } }', {
          id: asset.id,
          m: v,
        }),
      ]),
    );
  });

  test('names, tags, metadata, ids and hashes in bodies', async () => {
    const reqs: Req[] = [];
    for (const v of attacks('', 512)) reqs.push(jsonReq('PUT', `/api/assets/${asset.id}`, { name: v }));
    for (const v of attacks('', 128)) {
      reqs.push(jsonReq('PUT', `/api/assets/${asset.id}`, { tags: [v] }));
      reqs.push(jsonReq('POST', `/api/assets/${asset.id}/tags`, { tags: [v] }));
      reqs.push(jsonReq('DELETE', `/api/assets/${asset.id}/tags`, { tags: [v] }));
    }
    for (const v of attacks('', 4096)) {
      reqs.push(jsonReq('PUT', `/api/assets/${asset.id}`, { user_metadata: { [v]: v } }));
      reqs.push(jsonReq('POST', `/api/assets/${asset.id}/paths`, { paths: [v] }));
    }
    for (const v of attacks('', 36)) reqs.push(jsonReq('PUT', `/api/assets/${asset.id}`, { preview_id: v }));
    for (const v of [...attacks('blake3:', 71), ...attacks('sha256:', 71), ...attacks('', 71)])
      reqs.push(jsonReq('POST', '/api/assets/from-hash', { hash: v }));
    for (const v of [...attacks('https://', 2048), ...attacks('', 2048)]) {
      reqs.push(jsonReq('POST', '/api/assets', { url: v }));
      reqs.push(jsonReq('POST', '/api/assets/download', { source_url: v }));
      reqs.push(getReq(`/api/assets/remote-metadata?url=${q(v)}`));
    }
    for (const v of attacks('', 128)) {
      reqs.push(jsonReq('POST', '/api/keys', { label: v, scopes: [v], expires_at: v }));
      reqs.push(getReq(`/api/keys?owner=${q(v)}`, [['X-API-Key', KEYS.admin]]));
      reqs.push(getReq(`/api/audit?after=${q(v)}&limit=${q(v)}`, [['X-API-Key', KEYS.admin]]));
    }
    for (const v of attacks('', 512)) {
      reqs.push(jsonReq('POST', '/api/assets/export', { job_ids: [v], job_asset_name_filters: { [v]: [v] } }));
      reqs.push(jsonReq('POST', '/api/assets/seed', { roots: [v] }, KEYS.admin));
      reqs.push(getReq(`/api/assets/tags/refine?include_tags=${q(v)}&name_contains=${q(v)}`));
    }
    await expectAnswered('bodies', reqs);
  });

  test('multipart fields and part headers', async () => {
    const reqs: Req[] = [];
    for (const v of attacks('', 512)) reqs.push(multipartReq({ name: v }));
    for (const v of attacks('', 128)) reqs.push(multipartReq({ tags: v }), multipartReq({ tags: `["${v}"]` }));
    for (const v of attacks('', 4096)) reqs.push(multipartReq({ user_metadata: v }));
    for (const v of attacks('blake3:', 71)) reqs.push(multipartReq({ hash: v }));
    for (const v of attacks('', 36)) reqs.push(multipartReq({ id: v }), multipartReq({ preview_id: v }));
    for (const v of attacks('', 1024, HEADER_ENDS)) {
      reqs.push(multipartReq({}, `form-data; name="file"; filename="${v}"`));
      reqs.push(multipartReq({}, `form-data; name="file"; filename=${v}`));
      reqs.push(multipartReq({}, `form-data; ${v}`));
      reqs.push(multipartReq({}, v));
    }
    await expectAnswered('multipart', reqs);
  });

  test('queries, path segments and headers', async () => {
    const reqs: Req[] = [];
    const key: [string, string] = ['X-API-Key', KEYS.alice];
    for (const v of attacks('', 1024)) {
      reqs.push(getReq(`/api/assets?name_contains=${q(v)}`));
      reqs.push(getReq(`/api/assets?include_tags=${q(v)}&exclude_tags=${q(v)}`));
      reqs.push(getReq(`/api/tags?prefix=${q(v)}`));
      reqs.push(getReq(`/api/tasks?status=${q(v)}&task_name=${q(v)}&idempotency_key=${q(v)}`));
      reqs.push(getReq(`/api/tasks?created_after=${q(v)}`));
      reqs.push(getReq(`/api/assets?sort=${q(v)}&order=${q(v)}&limit=${q(v)}`));
      reqs.push(getReq(`/api/assets/${asset.id}/content?disposition=${q(v)}`));
      reqs.push(getReq(`/api/assets/${asset.id}/content?access=${q(v)}`, []));
      reqs.push(getReq(`/api/s/${q(v)}`, []));
      reqs.push(getReq(`/api/assets/${q(v)}`));
      reqs.push(getReq(`/api/tasks/${q(v)}`));
      reqs.push(getReq(`/api/jobs/${q(v)}/assets`));
      reqs.push(getReq(`/api/assets/exports/${q(v)}`));
      reqs.push({ method: 'HEAD', path: `/api/assets/hash/${q(`blake3:${v}`)}`, headers: [key] });
    }
    for (const v of attacks('{"a":', 4096)) reqs.push(getReq(`/api/assets?metadata_filter=${q(v)}`));
    for (const v of attacks('', 4200)) reqs.push(getReq(`/api/assets?after=${q(v)}`));
    for (const v of [...attacks('bytes=', 1024, HEADER_ENDS), ...attacks('bytes=0-', 1024, HEADER_ENDS)])
      reqs.push(getReq(`/api/assets/${asset.id}/content`, [key, ['Range', v]]));
    for (const v of attacks('', 1024, HEADER_ENDS)) {
      reqs.push(getReq(`/api/assets/${asset.id}/content`, [key, ['If-None-Match', v]]));
      reqs.push(getReq(`/api/assets/${asset.id}/content`, [key, ['If-Range', v]]));
      reqs.push(getReq('/api/assets', [['X-API-Key', v]]));
      reqs.push(getReq('/api/assets', [['Authorization', `Bearer ${v}`]]));
      reqs.push(getReq('/api/assets', [['Authorization', `Bearer ${v}`]]));
      reqs.push(getReq('/api/assets', [key, ['Accept', v]]));
      reqs.push({
        method: 'POST',
        path: '/api/assets',
        headers: [key, ['Content-Type', `multipart/form-data; boundary=${v}`]],
        body: Buffer.from('x'),
      });
      reqs.push({
        method: 'PUT',
        path: `/api/assets/${asset.id}`,
        headers: [key, ['Content-Type', `application/json; ${v}`]],
        body: Buffer.from('{"name":"n"}'),
      });
    }
    await expectAnswered('queries and headers', reqs);
  });

  test('tus headers and metadata', async () => {
    const reqs: Req[] = [];
    for (const v of attacks('', 4096, HEADER_ENDS)) {
      reqs.push(tusReq(v));
      reqs.push(tusReq('', [['Upload-Length', v]]));
      reqs.push({
        method: 'PATCH',
        path: `/api/uploads/${q(v)}`,
        headers: [
          ['X-API-Key', KEYS.alice],
          ['Tus-Resumable', '1.0.0'],
          ['Upload-Offset', v],
          ['Content-Type', 'application/offset+octet-stream'],
        ],
        body: Buffer.from('x'),
      });
    }
    for (const v of attacks('', 512)) reqs.push(tusReq(`name ${b64(v)},tags ${b64(`["${v}"]`)}`));
    for (const v of attacks('', 4096)) reqs.push(tusReq(`user_metadata ${b64(v)}`));
    await expectAnswered('tus', reqs);
  });

  test('GraphQL arguments and variables', async () => {
    const reqs: Req[] = [];
    const update = 'mutation U($id: ID!, $in: UpdateAssetInput!) { updateAsset(id: $id, input: $in) { id } }';
    for (const v of attacks('', 512)) {
      reqs.push(gqlReq(update, { id: asset.id, in: { name: v, tags: [v.slice(0, 128)] } }));
      reqs.push(gqlReq('query A($f: AssetFilter) { assets(filter: $f) { total } }', { f: { nameContains: v } }));
      reqs.push(gqlReq('query A($id: ID!) { asset(id: $id) { id } }', { id: v }));
      reqs.push(gqlUploadReq({ name: v }));
    }
    for (const v of attacks('', 4096)) reqs.push(gqlReq(update, { id: asset.id, in: { userMetadata: { [v]: v } } }));
    await expectAnswered('graphql', reqs);
  });

  test("header values and URLs at Node's header limit (16 KiB)", async () => {
    const reqs: Req[] = [];
    const key: [string, string] = ['X-API-Key', KEYS.alice];
    const big = (head: string) => attacks(head, 15_000, HEADER_ENDS);
    for (const v of big('application/json')) {
      reqs.push(jsonReq('POST', '/graphql', { query: '{ __typename }' }));
      reqs.at(-1)!.headers![1] = ['Content-Type', v];
      reqs.push({ ...jsonReq('PUT', `/api/assets/${asset.id}`, { name: 'n' }) });
      reqs.at(-1)!.headers![1] = ['Content-Type', v];
    }
    for (const v of big('')) {
      reqs.push(getReq('/graphql?query=%7B__typename%7D', [key, ['Accept', v]]));
      reqs.push(getReq(`/api/assets/${asset.id}/content`, [key, ['Range', `bytes=${v}`]]));
      reqs.push(tusReq(v));
    }
    for (const v of big('/')) {
      reqs.push({ method: 'HEAD', path: `/api/uploads/${asset.id}?${v}`, headers: [key, ['Tus-Resumable', '1.0.0']] });
      reqs.push(getReq(`/api/assets?${v}`));
      reqs.push(getReq(`/api/assets/${asset.id}/${v}`));
    }
    await expectAnswered('header limit', reqs);
  });

  test('a Content-Type or a resumable-upload URL over its cap is refused before any parser', async () => {
    const key: [string, string] = ['X-API-Key', KEYS.alice];
    const type = `application/json; a=${'b'.repeat(1100)}`;
    for (const p of ['/graphql', '/api/assets']) {
      const a = await rawRequest(svc.url, 'POST', p, [key, ['Content-Type', type]], Buffer.from('{}'));
      expect({ p, status: a.status, body: JSON.parse(a.body.toString()) }).toEqual({
        p,
        status: 415,
        body: { code: 'UNSUPPORTED_MEDIA_TYPE', message: expect.stringContaining('1024') },
      });
    }
    const ok = await rawRequest(
      svc.url,
      'POST',
      '/graphql',
      [key, ['Content-Type', type.slice(0, 1024)]],
      Buffer.from('{"query":"{ __typename }"}'),
    );
    expect(ok.status).toBe(200);
    const url = `/api/uploads/${asset.id}?${'a/'.repeat(1100)}`;
    const b = await rawRequest(svc.url, 'PATCH', url, [key, ['Tus-Resumable', '1.0.0']], Buffer.from('x'));
    expect({ status: b.status, code: JSON.parse(b.body.toString()).code }).toEqual({
      status: 400,
      code: 'INVALID_QUERY',
    });
  });

  test('the probe was answered throughout', () => {
    expect(probe.answers).toBeGreaterThan(10);
    expect(probe.longestMs).toBeLessThan(HANG_MS);
  });
});
