/**
 * Hostile input thrown at every REST and GraphQL input of the service, over real HTTP on real
 * PostgreSQL. The property: a 2xx, or a 4xx with a JSON body `{code: string, message: string}` (GraphQL: every error
 * has a string `extensions.code` other than INTERNAL); never a 5xx; and the service still answers afterwards.
 *
 * FUZZ_RUNS (default 60) sets the runs per property: `FUZZ_RUNS=10000 npx jest
 * test/integration/hostile-input.property`.
 */
import crypto from 'node:crypto';
import fc from 'fast-check';
import {
  FUZZ_RUNS,
  FUZZ_SEED,
  hostileDate,
  hostileJson,
  hostileJsonText,
  hostileNumber,
  hostileObject,
  hostileText,
  mostly,
  percentEncodedBytes,
  plausibleText,
} from '../helpers/hostile';
import { json, KEYS, startTestService, uploadForm, type TestService } from '../helpers/harness';

let svc: TestService;
let mine: { id: string; asset_hash: string };
beforeAll(async () => {
  svc = await startTestService();
  const res = await svc.fetch('/api/assets', {
    method: 'POST',
    body: uploadForm(`fuzz ${crypto.randomUUID()}`, { tags: 'fuzz' }),
  });
  mine = await json(res);
});
afterAll(async () => {
  await svc?.stop();
});

const OPTS = { numRuns: FUZZ_RUNS, endOnFailure: true, ...FUZZ_SEED };
// Long runs (FUZZ_RUNS=10000) need more than jest's default minute.
const TIMEOUT = Math.max(60_000, FUZZ_RUNS * 400);

/** A REST answer that obeys the property; throws with what was sent otherwise. */
async function clean(res: Response, sent: unknown): Promise<void> {
  const text = await res.text();
  const fail = (why: string) =>
    new Error(`${why}: ${res.status} ${text.slice(0, 300)} for ${JSON.stringify(sent)?.slice(0, 500)}`);
  if (res.status >= 500) throw fail('a 5xx');
  if (res.status < 400) return;
  // Node's own answer to a request head over 16 KiB (documented in openapi.yaml): no body.
  if (res.status === 431) return;
  let body: { code?: unknown; message?: unknown };
  try {
    body = JSON.parse(text);
  } catch {
    throw fail('an error without a JSON body');
  }
  if (typeof body.code !== 'string' || typeof body.message !== 'string') throw fail('an error without {code, message}');
}

/** A GraphQL answer that obeys the property. */
async function cleanGraphql(res: Response, sent: unknown): Promise<void> {
  const text = await res.text();
  const fail = (why: string) =>
    new Error(`${why}: ${res.status} ${text.slice(0, 300)} for ${JSON.stringify(sent)?.slice(0, 500)}`);
  if (res.status >= 500) throw fail('a 5xx');
  const body = JSON.parse(text) as { errors?: { extensions?: { code?: unknown } }[] };
  for (const e of body.errors ?? []) {
    if (typeof e.extensions?.code !== 'string' || e.extensions.code === 'INTERNAL')
      throw fail('an INTERNAL or code-less error');
  }
}

/** The service still answers a plain request. */
async function stillAnswers(): Promise<void> {
  const res = await svc.fetch('/api/assets?limit=1');
  expect(res.status).toBe(200);
}

/** A query string of the given parameters, each value either text (URL-encoded as a client would) or raw bytes. */
const queryOf = (params: [string, string | { raw: string }][]) =>
  params
    .map(
      ([k, v]) =>
        `${encodeURIComponent(k)}=${typeof v === 'string' ? new URLSearchParams({ v }).toString().slice(2) : v.raw}`,
    )
    .join('&');

/**
 * A parameter value: usually `valid` (so the other parameters do not mask a hostile one), else hostile text or bytes.
 */
const paramValue = (valid: fc.Arbitrary<string> = plausibleText) =>
  fc.oneof(
    { weight: 6, arbitrary: valid },
    { weight: 2, arbitrary: hostileText },
    { weight: 1, arbitrary: percentEncodedBytes.map((raw) => ({ raw })) },
    { weight: 1, arbitrary: hostileNumber.map(String) },
  );
const intValue = fc.integer({ min: 0, max: 100 }).map(String);

function queryProperty(path: string, params: Record<string, fc.Arbitrary<string | { raw: string }>>) {
  const entries = Object.entries(params).map(([name, arb]) =>
    fc.option(fc.tuple(fc.constant(name), arb), { nil: undefined }),
  );
  return fc.asyncProperty(fc.tuple(...entries), fc.boolean(), async (chosen, repeat) => {
    const present = chosen.filter((x): x is [string, string | { raw: string }] => x !== undefined);
    // Sometimes a parameter is repeated.
    const list = repeat && present[0] ? [...present, present[0]] : present;
    const url = `${path}?${queryOf(list)}`;
    await clean(await svc.fetch(url), url);
  });
}

describe('REST query parameters', () => {
  test(
    'GET /api/assets',
    async () => {
      await fc.assert(
        queryProperty('/api/assets', {
          name_contains: paramValue(),
          include_tags: paramValue(),
          exclude_tags: paramValue(),
          metadata_filter: paramValue(hostileJsonText.filter((t) => t.length < 1500)),
          limit: paramValue(intValue),
          offset: paramValue(intValue),
          sort: paramValue(fc.constantFrom('name', 'size', 'created_at', 'nope')),
          order: paramValue(fc.constantFrom('asc', 'desc')),
        }),
        OPTS,
      );
      await stillAnswers();
    },
    TIMEOUT,
  );

  test(
    'GET /api/tags and GET /api/tasks',
    async () => {
      await fc.assert(
        queryProperty('/api/tags', {
          prefix: paramValue(),
          limit: paramValue(intValue),
          offset: paramValue(intValue),
          order: paramValue(fc.constantFrom('count_desc', 'name_asc')),
        }),
        OPTS,
      );
      await fc.assert(
        queryProperty('/api/tasks', {
          task_name: paramValue(),
          idempotency_key: paramValue(),
          status: paramValue(fc.constantFrom('created', 'running,failed', 'nope')),
          created_after: paramValue(hostileDate),
          created_before: paramValue(hostileDate),
          sort_order: paramValue(fc.constantFrom('asc', 'desc')),
          offset: paramValue(intValue),
          limit: paramValue(intValue),
        }),
        OPTS,
      );
      await stillAnswers();
    },
    TIMEOUT,
  );
});

describe('REST paths and methods', () => {
  test(
    'any method on any path segment: 2xx or a clean 4xx (405 with Allow on known paths)',
    async () => {
      const segment = fc.oneof(
        fc.uuid(),
        fc.constant(mine.asset_hash),
        plausibleText.map((t) => encodeURIComponent(t.replace(/[\ud800-\udfff]/g, ''))),
        percentEncodedBytes,
        fc.constantFrom('%', '%E0%A4%A', '..', '%2e%2e', '%2F', 'hash', 'content', 'from-hash'),
      );
      const path = fc.oneof(
        segment.map((x) => `/api/assets/${x}`),
        segment.map((x) => `/api/assets/${x}/content`),
        segment.map((x) => `/api/assets/hash/${x}`),
        segment.map((x) => `/api/tasks/${x}`),
        segment.map((x) => `/api/${x}`),
        fc.constantFrom(
          '/api/assets',
          '/api/tags',
          '/api/tasks',
          '/api/assets/from-hash',
          '/api/assets/download',
          '/healthz',
          '/openapi.yaml',
        ),
      );
      const method = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS');
      await fc.assert(
        fc.asyncProperty(method, path, async (m, p) => {
          const res = await svc.fetch(p, {
            method: m,
            ...(m === 'GET' || m === 'HEAD' ? {} : { headers: { 'content-type': 'application/json' }, body: '{}' }),
          });
          if (res.status === 405) expect(res.headers.get('allow')).toMatch(/^[A-Z]+(, [A-Z]+)*$/);
          if (m === 'HEAD' || m === 'OPTIONS' || p === '/openapi.yaml' || res.status === 304) {
            expect(res.status).toBeLessThan(500);
            await res.arrayBuffer();
            return;
          }
          await clean(res, `${m} ${p}`);
        }),
        OPTS,
      );
      await stillAnswers();
    },
    TIMEOUT,
  );
});

/** Asset fields for a JSON body: each absent, hostile, or hostile JSON of the wrong type. */
const validMime = fc.constantFrom('text/plain', 'text/plain; charset="a b"', 'a/b; c=d', 'application/x-thing+json');
const assetFields = fc.record(
  {
    name: mostly(plausibleText.filter((t) => t.trim() !== '')),
    tags: mostly(fc.array(plausibleText, { maxLength: 6 }), fc.array(hostileText, { maxLength: 70 })),
    mime_type: mostly(
      validMime,
      fc.oneof(hostileText, fc.constantFrom('text/plain; charset=\u0001', 'text/plain; charset="\u00e9"')),
    ),
    user_metadata: mostly(fc.dictionary(plausibleText, plausibleText, { maxKeys: 4 }), hostileObject),
    preview_id: mostly(fc.constant(null), fc.oneof(hostileText, fc.uuid())),
  },
  { requiredKeys: [] },
);

/** A JSON body: the fields as JSON, with one of them sometimes replaced by very deep JSON text. */
function bodyText(fields: Record<string, unknown>, deep: { field: string; depth: number } | undefined): string {
  const text = JSON.stringify(fields);
  if (!deep) return text;
  const nested = '{"a":'.repeat(deep.depth) + '1' + '}'.repeat(deep.depth);
  return text === '{}' ? `{"${deep.field}":${nested}}` : `{"${deep.field}":${nested},${text.slice(1)}`;
}
const deepField = fc.option(
  fc.record({
    field: fc.constantFrom('user_metadata', 'tags', 'name', 'x'),
    depth: fc.integer({ min: 60, max: 10_000 }),
  }),
  { nil: undefined },
);

describe('REST bodies', () => {
  test(
    'PUT /api/assets/{id}',
    async () => {
      await fc.assert(
        fc.asyncProperty(assetFields, deepField, async (fields, deep) => {
          const body = bodyText(fields, deep);
          await clean(
            await svc.fetch(`/api/assets/${mine.id}`, {
              method: 'PUT',
              headers: { 'content-type': 'application/json' },
              body,
            }),
            body,
          );
        }),
        OPTS,
      );
      await stillAnswers();
    },
    TIMEOUT,
  );

  test(
    'POST /api/assets/from-hash and POST /api/assets/download',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          assetFields,
          deepField,
          fc.oneof(fc.constant(mine.asset_hash), hostileText),
          async (fields, deep, hash) => {
            const body = bodyText({ ...fields, hash }, deep);
            const res = await svc.fetch('/api/assets/from-hash', {
              method: 'POST',
              key: KEYS.bob,
              headers: { 'content-type': 'application/json' },
              body,
            });
            await clean(res, body);
          },
        ),
        OPTS,
      );
      // Source URLs are never an allowed provider here (no network): the request is refused after validation.
      const headerSafe = fc.string({
        unit: fc.integer({ min: 0x20, max: 0x7e }).map((n) => String.fromCharCode(n)),
        maxLength: 300,
      });
      await fc.assert(
        fc.asyncProperty(
          assetFields,
          deepField,
          fc.oneof(hostileText, fc.constant('https://example.com/x.bin')),
          fc.option(headerSafe, { nil: undefined }),
          async (fields, deep, url, key) => {
            const body = bodyText({ ...fields, source_url: url }, deep);
            const headers: Record<string, string> = { 'content-type': 'application/json' };
            if (key !== undefined) headers['idempotency-key'] = key;
            await clean(await svc.fetch('/api/assets/download', { method: 'POST', headers, body }), { body, key });
          },
        ),
        OPTS,
      );
      await stillAnswers();
    },
    TIMEOUT,
  );

  test(
    'POST /api/assets multipart fields',
    async () => {
      const field = (valid: fc.Arbitrary<string>) =>
        fc.oneof(
          { weight: 5, arbitrary: valid },
          { weight: 4, arbitrary: hostileText },
          { weight: 1, arbitrary: hostileJsonText },
        );
      const metadataText = fc.dictionary(plausibleText, plausibleText, { maxKeys: 3 }).map((o) => JSON.stringify(o));
      await fc.assert(
        fc.asyncProperty(
          fc.record(
            {
              name: field(plausibleText),
              tags: fc.oneof(field(plausibleText), fc.array(plausibleText, { maxLength: 5 })),
              mime_type: field(validMime),
              user_metadata: field(metadataText),
              id: field(fc.uuid()),
              preview_id: field(fc.constant('')),
            },
            { requiredKeys: [] },
          ),
          // The fast path (a `hash` of stored content) and a missing file answer before the fields matter: rarer.
          fc.oneof(
            { weight: 4, arbitrary: fc.constant(undefined) },
            { weight: 1, arbitrary: field(fc.constant(mine.asset_hash)) },
          ),
          fc.oneof(
            { weight: 4, arbitrary: fc.uint8Array({ maxLength: 64 }) },
            { weight: 1, arbitrary: fc.constant(undefined) },
          ),
          async (fields, hash, file) => {
            const form = new FormData();
            if (hash !== undefined) form.append('hash', hash);
            for (const [k, v] of Object.entries(fields))
              for (const one of Array.isArray(v) ? v : [v]) form.append(k, one);
            if (file) form.append('file', new Blob([file]), 'f.bin');
            await clean(await svc.fetch('/api/assets', { method: 'POST', body: form }), {
              fields,
              hash,
              file: file?.length,
            });
          },
        ),
        OPTS,
      );
      await stillAnswers();
    },
    TIMEOUT,
  );
});

describe('GraphQL inputs', () => {
  const post = (query: string, variables: unknown) =>
    svc.fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
  /** A variable: usually of the right type with a hostile value, sometimes of any type. */
  const v = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: arb }, { weight: 1, arbitrary: hostileJson });
  /** Page sizes and offsets: usually valid, so they do not mask the hostile filter values. */
  const page = fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 1, max: 100 }) },
    { weight: 1, arbitrary: hostileNumber },
  );

  test(
    'queries: assets, tags, tasks',
    async () => {
      const assets = `query($n: String, $i: [String!], $x: [String!], $m: JSON, $l: Int, $o: Int) {
        assets(filter: { nameContains: $n, includeTags: $i, excludeTags: $x, metadataFilter: $m }, limit: $l, offset: $o) { total items { id name } } }`;
      await fc.assert(
        fc.asyncProperty(
          fc.record(
            {
              n: v(hostileText),
              i: v(fc.array(hostileText, { maxLength: 70 })),
              x: v(fc.array(hostileText, { maxLength: 5 })),
              m: v(hostileObject),
              l: v(page),
              o: v(page),
            },
            { requiredKeys: [] },
          ),
          async (vars) => cleanGraphql(await post(assets, vars), vars),
        ),
        OPTS,
      );
      const tags = 'query($p: String, $l: Int) { tags(prefix: $p, limit: $l) { total } }';
      const tasks = `query($n: String, $k: String, $a: DateTimeISO, $b: DateTimeISO) {
        tasks(filter: { taskName: $n, idempotencyKey: $k, createdAfter: $a, createdBefore: $b }) { total } }`;
      await fc.assert(
        fc.asyncProperty(
          fc.record({ p: v(hostileText), l: v(page) }, { requiredKeys: [] }),
          fc.record(
            { n: v(hostileText), k: v(hostileText), a: v(hostileDate), b: v(hostileDate) },
            { requiredKeys: [] },
          ),
          async (tv, kv) => {
            await cleanGraphql(await post(tags, tv), tv);
            await cleanGraphql(await post(tasks, kv), kv);
          },
        ),
        OPTS,
      );
      await stillAnswers();
    },
    TIMEOUT,
  );

  test(
    'mutations: updateAsset, createAssetFromHash, deep JSON variables, and documents themselves',
    async () => {
      const update = 'mutation($id: ID!, $i: UpdateAssetInput!) { updateAsset(id: $id, input: $i) { id } }';
      const fromHash = 'mutation($i: CreateAssetFromHashInput!) { createAssetFromHash(input: $i) { createdNew } }';
      const input = fc.record(
        {
          name: v(hostileText),
          tags: v(fc.array(hostileText, { maxLength: 8 })),
          mimeType: v(fc.oneof(validMime, hostileText)),
          userMetadata: v(hostileObject),
          previewId: v(fc.uuid()),
        },
        { requiredKeys: [] },
      );
      await fc.assert(
        fc.asyncProperty(input, fc.oneof(fc.constant(mine.asset_hash), hostileText), async (i, hash) => {
          await cleanGraphql(await post(update, { id: mine.id, i }), i);
          await cleanGraphql(await post(fromHash, { i: { ...i, hash, tags: i.tags ?? ['t'] } }), i);
        }),
        OPTS,
      );
      // Deep JSON variables, sent as text.
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 60, max: 12_000 }), async (depth) => {
          const deep = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
          const body = `{"query":${JSON.stringify(update)},"variables":{"id":"${mine.id}","i":{"userMetadata":${deep}}}}`;
          await cleanGraphql(
            await svc.fetch('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body }),
            depth,
          );
        }),
        { ...OPTS, numRuns: Math.min(FUZZ_RUNS, 30) },
      );
      // Documents: hostile text, deep literals, many aliases.
      const document = fc.oneof(
        hostileText,
        fc
          .integer({ min: 1, max: 30_000 })
          .map((n) => `{ assets(filter: { metadataFilter: ${'{a:'.repeat(n)}1${'}'.repeat(n)} }) { total } }`),
        fc
          .integer({ min: 1, max: 30_000 })
          .map((n) => `{ ${Array.from({ length: n }, (_, k) => `a${k}: __typename`).join(' ')} }`),
        fc
          .integer({ min: 1, max: 200 })
          .map((n) => `{ ${'assets { items { preview { '.repeat(n)} id ${'} } } '.repeat(n)} }`),
      );
      await fc.assert(
        fc.asyncProperty(document, async (query) => cleanGraphql(await post(query, {}), query.slice(0, 200))),
        { ...OPTS, numRuns: Math.min(FUZZ_RUNS, 40) },
      );
      await stillAnswers();
    },
    TIMEOUT,
  );
});
