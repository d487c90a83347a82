/**
 * The input schemas (src/http/schema): every one compiles, each GraphQL input class declares exactly its schema's
 * fields, and a refusal is INVALID_BODY (or the schema's x-code) naming the field as the client spelt it.
 */
import 'reflect-metadata';
import { isInputObjectType, type GraphQLSchema } from 'graphql';
import { getMetadataStorage } from 'type-graphql';
import { isDomainError } from '../../src/domain/errors';
import { buildGraphQLSchema } from '../../src/http/graphql/schema';
import { check, checkBody, validatorOf } from '../../src/http/schema/check';
import { GRAPHQL_INPUT_SCHEMAS } from '../../src/http/schema/graphql';
import { AssetUploadForm, UploadMetadata } from '../../src/http/schema/forms';
import { REST_BODY_SCHEMAS } from '../../src/http/schema/rest';
import { uploadFormOf, uploadMetadataOf } from '../../src/http/shared/asset-input';

const refusal = (fn: () => void) => {
  try {
    fn();
  } catch (err) {
    if (isDomainError(err)) return { code: err.code, message: err.message, field: err.details?.field };
    throw err;
  }
  return undefined;
};

let schema: GraphQLSchema;
beforeAll(async () => {
  schema = await buildGraphQLSchema();
});

test('every schema compiles', () => {
  for (const s of [...Object.values(REST_BODY_SCHEMAS), ...GRAPHQL_INPUT_SCHEMAS.values()])
    expect(typeof validatorOf(s)).toBe('function');
});

test("each GraphQL input and args class declares exactly its schema's fields", () => {
  const storage = getMetadataStorage();
  for (const [cls, s] of GRAPHQL_INPUT_SCHEMAS) {
    const name = (cls as { name: string }).name;
    const type = schema.getType(name);
    const fields = isInputObjectType(type)
      ? Object.keys(type.getFields())
      : storage.fields.filter((f) => f.target === cls).map((f) => f.name);
    expect({ name, fields: fields.sort() }).toEqual({ name, fields: Object.keys(s.properties).sort() });
  }
});

test('REST bodies: refusals name the field; nulls are absent for create bodies, values for PUT', () => {
  const { AssetUpdate, FromHashRequest, DownloadRequest, ExportRequest, TagEdit } = REST_BODY_SCHEMAS;
  expect(refusal(() => check(AssetUpdate, { preview_id: 'x' }))).toEqual({
    code: 'INVALID_BODY',
    message: 'preview_id must be a UUID or null',
    field: 'preview_id',
  });
  expect(refusal(() => check(AssetUpdate, { preview_id: null }))).toBeUndefined();
  expect(refusal(() => check(AssetUpdate, { name: null }))?.field).toBe('name');
  expect(refusal(() => check(AssetUpdate, { name: '  ' }))?.message).toBe('name must not be blank');
  expect(refusal(() => check(AssetUpdate, { tags: ['a', 3] }))?.message).toBe('tags[1] must be text');
  expect(refusal(() => check(AssetUpdate, { mime_type: ' Text/Plain ' }))).toBeUndefined();
  expect(refusal(() => check(AssetUpdate, { mime_type: 'nonsense' }))?.field).toBe('mime_type');
  expect(
    refusal(() => checkBody(FromHashRequest, { hash: 'blake3:' + 'a'.repeat(64), tags: ['x'], name: null })),
  ).toBeUndefined();
  expect(refusal(() => checkBody(FromHashRequest, { tags: ['x'] }))?.message).toBe('hash is required');
  expect(refusal(() => checkBody(DownloadRequest, { source_url: 'ftp://h/x' }))?.code).toBe('SOURCE_NOT_ALLOWED');
  expect(refusal(() => checkBody(DownloadRequest, { source_url: '  ' }))?.code).toBe('INVALID_BODY');
  expect(refusal(() => checkBody(ExportRequest, { asset_ids: [] }))?.code).toBe('INVALID_BODY');
  expect(refusal(() => checkBody(ExportRequest, { job_ids: [crypto.randomUUID()] }))).toBeUndefined();
  expect(refusal(() => checkBody(TagEdit, { tags: [' ', ''] }))?.field).toBe('tags');
});

test('GraphQL arguments: ranges and nested filters', () => {
  const [AssetsArgs] = [...GRAPHQL_INPUT_SCHEMAS.entries()].find(
    ([c]) => (c as { name: string }).name === 'AssetsArgs',
  )!;
  const s = GRAPHQL_INPUT_SCHEMAS.get(AssetsArgs)!;
  expect(refusal(() => check(s, { limit: 501, offset: 0 }))?.message).toBe('limit must be from 1 to 500');
  const many = Array.from({ length: 1001 }, () => 't');
  expect(refusal(() => check(s, { limit: 1, offset: 0, filter: { tagsAll: many } }))?.field).toBe('filter.tagsAll');
  expect(refusal(() => check(s, { limit: 1, offset: 0, filter: { tagsAll: ['a'] } }))).toBeUndefined();
});

test('upload forms: a multipart field or an Upload-Metadata key that breaks its rule is refused by name', () => {
  const form = (fields: Record<string, string[]>) => uploadFormOf(new Map(Object.entries(fields)));
  expect(refusal(() => check(AssetUploadForm, form({ mime_type: ['x'.repeat(100)] })))?.field).toBe('mime_type');
  expect(refusal(() => check(AssetUploadForm, form({ id: ['not-a-uuid'] })))).toMatchObject({
    code: 'INVALID_BODY',
    field: 'id',
  });
  expect(refusal(() => check(AssetUploadForm, form({ path: ['../up'] })))).toMatchObject({ field: 'path' });
  expect(
    refusal(() => check(AssetUploadForm, form({ path: Array.from({ length: 101 }, (_, i) => `p${i}`) })))?.field,
  ).toBe('path');
  // The last value counts, trimmed; an empty one is absent; tags keep every value.
  expect(form({ name: ['first', '  last  '], hash: ['  '], tags: ['a', 'b'] })).toEqual({
    name: 'last',
    tags: ['a', 'b'],
  });
  expect(
    refusal(() => check(AssetUploadForm, form({ tags: ['a,b'], name: ['n'], path: ['x/y.png'] }))),
  ).toBeUndefined();
  const meta = (m: Record<string, string | null>) => uploadMetadataOf(m);
  expect(refusal(() => check(UploadMetadata, meta({ tags: 'a,b' })))).toEqual({
    code: 'INVALID_BODY',
    message: 'tags must be a JSON array of strings',
    field: 'tags',
  });
  expect(refusal(() => check(UploadMetadata, meta({ hash: 'md5:00' })))?.field).toBe('hash');
  expect(meta({ filename: ' a.bin ', tags: null, name: '' })).toEqual({ filename: 'a.bin' });
});
