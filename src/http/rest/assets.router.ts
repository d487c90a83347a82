import { Router, type Request, type Response } from 'express';
import type { AssetService } from '../../domain/assets/asset.service';
import { ASSET_SORTS, type AssetFilter, type AssetListQuery, type CreateResult, type Principal } from '../../domain/assets/asset.types';
import { validateCreateFields, validateFromHashFields, validateUpdateFields } from '../../domain/assets/validation';
import type { ContentService } from '../../domain/content/content.service';
import { parseHash } from '../../domain/content/hashing';
import { DomainError } from '../../domain/errors';
import type { RemoteMetadata } from '../../domain/tasks/task.types';
import { baseUrlOfRes } from '../base-url';
import { assetJson, assetPageJson } from './asset.presenter';
import { handle, jsonBody, pathHash, pathId, principalOf, sendJson } from './middleware';
import { parseJsonField, parseMultipartUpload, parseTagsField, type ParsedUpload } from './multipart';
import { intParam, jsonObjectParam, listParam, oneOf, stringParam } from './query';

/** The JSON method of POST /api/assets (the service fetches `url` itself); DownloadService provides it. */
export type UrlUploader = (principal: Principal, body: Record<string, unknown>) => Promise<CreateResult>;
/** GET /api/assets/remote-metadata; DownloadService provides it. */
export type RemoteMetadataLookup = (principal: Principal, url: string) => Promise<RemoteMetadata>;

/** GET /api/assets/{id}: the hottest read (also taken by the pipeline's route table, http/rest/hot-routes.ts). */
export const assetById =
  (assets: AssetService) =>
  async (req: Request, res: Response): Promise<void> => {
    sendJson(res, assetJson(await assets.get(principalOf(res), pathId(req)), baseUrlOfRes(res)));
  };

/** HEAD /api/assets/hash/{hash}: is this content stored (200) or not (404)? (Also in the route table.) */
export const contentByHash =
  (assets: AssetService) =>
  async (req: Request, res: Response): Promise<void> => {
    const hash = pathHash(req.params.hash);
    res.status((await assets.contentExists(hash)) ? 200 : 404).end();
  };

export function assetsRouter(deps: {
  assets: AssetService;
  content: ContentService;
  urlUploader?: UrlUploader;
  remoteMetadata?: RemoteMetadataLookup;
}): Router {
  const { assets, content } = deps;
  const r = Router();

  r.post(
    '/assets',
    handle(async (req, res) => {
      const principal = principalOf(res);
      let result: CreateResult;
      if (req.is('multipart/form-data')) {
        const declared = Number(req.get('content-length'));
        if (Number.isFinite(declared) && declared > content.maxUploadBytes + 1024 * 1024) {
          throw new DomainError('PAYLOAD_TOO_LARGE', `the body is larger than the limit of ${content.maxUploadBytes} bytes`);
        }
        const upload = await parseMultipartUpload(req, content, {
          maxBytes: content.maxUploadBytes,
          contentExists: (h) => assets.contentExists(h),
        });
        result = await createFromUpload(assets, content, principal, upload);
      } else if (req.is('application/json')) {
        const body = await readJson(req);
        if (typeof body.url !== 'string' || body.url.trim() === '') {
          throw new DomainError('INVALID_BODY', 'url is required (or send multipart/form-data with a file)', { field: 'url' });
        }
        if (!deps.urlUploader) throw new DomainError('NOT_IMPLEMENTED', 'uploads by URL are not available in this build');
        result = await deps.urlUploader(principal, body);
      } else {
        throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'send multipart/form-data with a file, or application/json with a url');
      }
      res.status(result.created ? 201 : 200).json(assetJson(result.asset, baseUrlOfRes(res), result.created));
    }),
  );

  r.get(
    '/assets',
    handle(async (req, res) => {
      const page = await assets.list(principalOf(res), parseListQuery(req));
      res.json(assetPageJson(page, baseUrlOfRes(res)));
    }),
  );

  // Literal paths under /assets/ come before /assets/:id, which would take them for ids.
  r.get(
    '/assets/tags/refine',
    handle(async (req, res) => {
      const q = req.query as Record<string, unknown>;
      const { counts, lowerBounds } = await assets.tagFacets(principalOf(res), parseFilter(q), intParam(q, 'limit', 100, 1, 1000));
      res.json({ tag_counts: Object.fromEntries(counts.map((c) => [c.name, c.count])), ...(lowerBounds ? { counts_are_lower_bounds: true } : {}) });
    }),
  );

  r.get(
    '/assets/remote-metadata',
    handle(async (req, res) => {
      const url = stringParam(req.query as Record<string, unknown>, 'url');
      if (url === undefined) throw new DomainError('INVALID_QUERY', 'url is required', { parameter: 'url' });
      if (!deps.remoteMetadata) throw new DomainError('NOT_IMPLEMENTED', 'remote metadata is not available in this build');
      res.json(remoteMetadataJson(await deps.remoteMetadata(principalOf(res), url)));
    }),
  );

  r.post(
    '/assets/from-hash',
    ...jsonBody(),
    handle(async (req, res) => {
      const body = req.body as Record<string, unknown>;
      const hash = typeof body.hash === 'string' ? pathHashOrBody(body.hash) : undefined;
      if (!hash) throw new DomainError('INVALID_BODY', 'hash is required, as blake3:<64 hex> or sha256:<64 hex>', { field: 'hash' });
      const fields = validateFromHashFields(body);
      const result = await assets.createFromStored(principalOf(res), fields, hash);
      res.status(result.created ? 201 : 200).json(assetJson(result.asset, baseUrlOfRes(res), result.created));
    }),
  );

  r.head('/assets/hash/:hash', handle(contentByHash(assets)));

  r.get(
    '/assets/hash/:hash',
    handle(async (req, res) => {
      const hash = pathHash(req.params.hash);
      if (!(await assets.contentExists(hash))) throw new DomainError('CONTENT_NOT_FOUND', 'no stored content has this hash');
      res.json({ exists: true, hash: req.params.hash });
    }),
  );

  r.get('/assets/:id', handle(assetById(assets)));

  r.put(
    '/assets/:id',
    ...jsonBody(),
    handle(async (req, res) => {
      const id = pathId(req);
      const fields = validateUpdateFields(req.body as Record<string, unknown>);
      // The whole asset (a superset of Comfy Cloud's update result): the ComfyUI frontend parses it as one.
      res.json(assetJson(await assets.update(principalOf(res), id, fields), baseUrlOfRes(res)));
    }),
  );

  r.post(
    '/assets/:id/tags',
    ...jsonBody(),
    handle(async (req, res) => {
      const id = pathId(req);
      const out = await assets.addTags(principalOf(res), id, (req.body as Record<string, unknown>).tags);
      res.json({ added: out.added, already_present: out.alreadyPresent, total_tags: out.totalTags });
    }),
  );

  r.delete(
    '/assets/:id/tags',
    ...jsonBody(),
    handle(async (req, res) => {
      const id = pathId(req);
      const out = await assets.removeTags(principalOf(res), id, (req.body as Record<string, unknown>).tags);
      res.json({ removed: out.removed, not_present: out.notPresent, total_tags: out.totalTags });
    }),
  );

  r.delete(
    '/assets/:id',
    handle(async (req, res) => {
      await assets.delete(principalOf(res), pathId(req));
      res.status(204).end();
    }),
  );

  return r;
}

function pathHashOrBody(v: string) {
  try {
    return pathHash(v);
  } catch {
    throw new DomainError('INVALID_BODY', 'hash must look like blake3:<64 hex> or sha256:<64 hex>', { field: 'hash' });
  }
}

/** Parses a JSON body on a route that also takes multipart (so the JSON parser cannot be route middleware). */
async function readJson(req: Request): Promise<Record<string, unknown>> {
  const [check, parse, shape] = jsonBody();
  for (const mw of [check, parse, shape]) {
    await new Promise<void>((resolve, reject) => mw!(req, req.res!, (err?: unknown) => (err ? reject(err) : resolve())));
  }
  return req.body as Record<string, unknown>;
}

async function createFromUpload(
  assets: AssetService,
  content: ContentService,
  principal: Principal,
  upload: ParsedUpload,
): Promise<CreateResult> {
  const { fields: raw, ingested } = upload;
  try {
    const last = (k: string) => raw.get(k)?.[raw.get(k)!.length - 1];
    const fields = validateCreateFields({
      id: emptyToUndefined(last('id')),
      name: emptyToUndefined(last('name')),
      mime_type: emptyToUndefined(last('mime_type')),
      preview_id: emptyToUndefined(last('preview_id')),
      prompt_id: emptyToUndefined(last('prompt_id')),
      tags: parseTagsField(raw.get('tags')),
      user_metadata: parseJsonField(raw.get('user_metadata'), 'user_metadata'),
    });
    const hashText = emptyToUndefined(last('hash'));
    const declared = hashText === undefined ? undefined : pathHashOrBody(hashText);
    const digest = ingested?.digest ?? upload.discardedDigest;
    if (declared && digest && (declared.algorithm === 'blake3' ? digest.blake3 : digest.sha256) !== declared.hex) {
      throw new DomainError('HASH_MISMATCH', 'the uploaded bytes do not match the hash field');
    }
    if (ingested) return await assets.createFromIngested(principal, fields, ingested, { fileName: upload.fileName });
    if (upload.discardedDigest) {
      return await assets.createFromStored(principal, { ...fields, name: fields.name ?? upload.fileName }, { algorithm: 'blake3', hex: upload.discardedDigest.blake3 });
    }
    if (declared) {
      // No file part: the hash alone, when its content is stored.
      if (!(await assets.contentExists(declared))) {
        throw new DomainError('MISSING_FILE', 'the content of hash is not stored; send the file');
      }
      return await assets.createFromStored(principal, fields, declared);
    }
    throw new DomainError('MISSING_FILE', 'a file part named "file" is required');
  } finally {
    if (ingested) await content.discard(ingested);
  }
}

const emptyToUndefined = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());

/** The filters GET /api/assets and GET /api/assets/tags/refine share, Comfy Cloud's names included. */
function parseFilter(q: Record<string, unknown>): AssetFilter {
  const tags = (...names: string[]) => [...new Set(names.flatMap((n) => listParam(q, n)).map((t) => t.toLowerCase()))];
  const hashText = stringParam(q, 'hash');
  const hash = hashText === undefined ? undefined : parseHash(hashText);
  if (hashText !== undefined && !hash) {
    throw new DomainError('INVALID_QUERY', 'hash must look like blake3:<64 hex> or sha256:<64 hex>', { parameter: 'hash' });
  }
  // There are no public assets here: include_public is accepted (and checked) but changes nothing.
  oneOf(q, 'include_public', ['true', 'false', '1', '0'] as const, 'false');
  return {
    includeTags: tags('include_tags', 'tags_all'),
    excludeTags: tags('exclude_tags', 'tags_none'),
    anyTags: tags('tags_any'),
    nameContains: stringParam(q, 'name_contains'),
    metadataFilter: jsonObjectParam(q, 'metadata_filter'),
    hash,
  };
}

function parseListQuery(req: Request): AssetListQuery {
  const q = req.query as Record<string, unknown>;
  return {
    ...parseFilter(q),
    limit: intParam(q, 'limit', 20, 1, 500),
    offset: intParam(q, 'offset', 0, 0, 1_000_000_000),
    sort: oneOf(q, 'sort', ASSET_SORTS, 'created_at'),
    order: oneOf(q, 'order', ['asc', 'desc'] as const, 'desc'),
    after: stringParam(q, 'after'),
  };
}

function remoteMetadataJson(m: RemoteMetadata): Record<string, unknown> {
  return {
    content_length: m.contentLength,
    final_url: m.finalUrl,
    ...(m.contentType !== undefined ? { content_type: m.contentType } : {}),
    ...(m.filename !== undefined ? { filename: m.filename } : {}),
    ...(m.name !== undefined ? { name: m.name } : {}),
    ...(m.tags !== undefined ? { tags: m.tags } : {}),
    ...(m.previewImage !== undefined ? { preview_image: m.previewImage } : {}),
    validation: { is_valid: m.validation.isValid, errors: m.validation.errors, warnings: m.validation.warnings },
  };
}
