import type { TestService } from './harness';

export type Json = any;

export interface GqlResult {
  status: number;
  data: Json;
  errors: Json[] | undefined;
  /** The first error's extensions.code. */
  code: string | undefined;
  body: Json;
}

/** POSTs a GraphQL operation as JSON with a key (alice's by default; null for none). */
export async function gql(
  svc: TestService,
  query: string,
  variables: Record<string, unknown> = {},
  opts: { key?: string | null; headers?: Record<string, string> } = {},
): Promise<GqlResult> {
  const res = await svc.fetch('/graphql', {
    method: 'POST',
    key: opts.key,
    headers: { 'content-type': 'application/json', ...opts.headers },
    body: JSON.stringify({ query, variables }),
  });
  return result(res);
}

/** A GraphQL multipart request (one file at `variables.file`), with the CSRF preflight header unless told otherwise. */
export async function gqlUpload(
  svc: TestService,
  query: string,
  variables: Record<string, unknown>,
  file: Buffer | string | undefined,
  opts: { key?: string | null; fileName?: string; preflight?: boolean } = {},
): Promise<GqlResult> {
  const form = new FormData();
  form.append('operations', JSON.stringify({ query, variables: { ...variables, file: null } }));
  form.append('map', JSON.stringify(file === undefined ? {} : { '0': ['variables.file'] }));
  if (file !== undefined)
    form.append('0', new Blob([typeof file === 'string' ? Buffer.from(file) : file]), opts.fileName ?? 'file.bin');
  const res = await svc.fetch('/graphql', {
    method: 'POST',
    key: opts.key,
    headers: opts.preflight === false ? {} : { 'apollo-require-preflight': 'true' },
    body: form,
  });
  return result(res);
}

async function result(res: Response): Promise<GqlResult> {
  const text = await res.text();
  let body: Json;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`not JSON (${res.status}): ${text.slice(0, 500)}`);
  }
  return { status: res.status, data: body.data, errors: body.errors, code: body.errors?.[0]?.extensions?.code, body };
}

export const ASSET_FIELDS = `id name size assetHash mimeType tags userMetadata previewUrl previewId promptId createdAt updatedAt lastAccessTime isImmutable`;

export const UPLOAD = `mutation Up($file: Upload!, $input: UploadAssetInput) {
  uploadAsset(file: $file, input: $input) { createdNew asset { ${ASSET_FIELDS} } }
}`;
