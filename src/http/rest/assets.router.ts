import { Router, type Request, type Response } from 'express';
import type { AssetService } from '../../domain/assets/asset.service';
import { ASSET_SORTS, type AssetFilter, type AssetListQuery, type CreateResult } from '../../domain/assets/asset.types';
import {
  MAX_RAW_FILTER_TAGS,
  resolveTagFilter,
  validateFromHashFields,
  validateHashField,
  validateUpdateFields,
} from '../../domain/assets/validation';
import type { ContentService } from '../../domain/content/content.service';
import type { DownloadService } from '../../domain/downloads/download.service';
import { MAX_CURSOR_LENGTH } from '../../domain/assets/cursor';
import { parseHash } from '../../domain/content/hashing';
import { DomainError } from '../../domain/errors';
import type { RemoteMetadata } from '../../domain/tasks/task.types';
import { linksOfRes } from '../base-url';
import { assetJson, assetPageJson } from './asset.presenter';
import { createInputOfBody, createInputOfForm, textOf, updateInputOfBody, uploadFormOf } from '../shared/asset-input';
import { hashParam } from '../shared/ids';
import { handle, principalOf } from '../shared/handler';
import { jsonBody, jsonBodyIfSent, pathId, sendJson, sendJsonBytes } from './middleware';
import { PageCache } from '../shared/page-cache';
import { check, checkBody } from '../schema/check';
import { AssetUploadForm } from '../schema/forms';
import { AssetUpdate, AssetUrlUpload, FromHashRequest, PathsRequest, TagEditRequest } from '../schema/rest';
import { parseMultipartUpload } from './multipart';
import { intParam, jsonObjectParam, listParam, oneOf, stringParam } from '../schema/query';

/**
 * The literal paths beside /assets/{id} (`POST /assets/export`, `GET /assets/remote-metadata` ...): another method on
 * one of them is that path's 405 with its `Allow`, not "an asset id that is not a UUID" (400 INVALID_ID).
 */
/** What a multipart upload's parts other than its file can take (fields, part headers, boundaries) at most. */
const MULTIPART_FIELDS_ALLOWANCE = 1024 * 1024;

const LITERAL_ASSET_PATHS = new Set(['export', 'download', 'from-hash', 'remote-metadata', 'seed', 'prune']);
const notAnAssetId = (req: Request, _res: Response, next: (err?: unknown) => void): void =>
  LITERAL_ASSET_PATHS.has(req.params.id as string) ? next('route') : next();

export function assetsRouter(deps: {
  assets: AssetService;
  content: ContentService;
  downloads: DownloadService;
}): Router {
  const { assets, content, downloads } = deps;
  const r = Router();

  // The two hottest reads first: every layer before a route costs each request that reaches it a path match. A literal
  // path beside /assets/{id} passes on (notAnAssetId).
  r.get(
    '/assets/:id',
    notAnAssetId,
    handle(async (req, res) => {
      sendJson(res, assetJson(await assets.get(principalOf(res), pathId(req)), linksOfRes(res)));
    }),
  );

  // Is this content stored (200) or not (404)?
  r.head(
    '/assets/hash/:hash',
    handle(async (req, res) => {
      res.statusCode = (await assets.contentExists(hashParam(req.params.hash))) ? 200 : 404;
      res.end();
    }),
  );

  r.post(
    '/assets',
    ...jsonBodyIfSent(),
    handle(async (req, res) => {
      const principal = principalOf(res);
      let result: CreateResult;
      if (req.is('multipart/form-data')) {
        const declared = Number(req.get('content-length'));
        if (Number.isFinite(declared) && declared > content.maxUploadBytes + MULTIPART_FIELDS_ALLOWANCE) {
          throw new DomainError(
            'PAYLOAD_TOO_LARGE',
            `the body is larger than the limit of ${content.maxUploadBytes} bytes`,
          );
        }
        // The file is at least the body less what its other parts can take: refused before a byte of it is stored.
        if (Number.isFinite(declared) && declared > MULTIPART_FIELDS_ALLOWANCE)
          await assets.checkQuotaAhead(principal, declared - MULTIPART_FIELDS_ALLOWANCE);
        const { fields, file, fileName } = await parseMultipartUpload(req, assets);
        const form = uploadFormOf(fields);
        let input;
        try {
          check(AssetUploadForm, form);
          input = createInputOfForm(form);
        } catch (err) {
          await assets.discardFile(file);
          throw err;
        }
        result = await assets.createFromUpload(principal, input, {
          file,
          fileName,
          declaredHash: textOf(form.hash),
        });
      } else if (req.is('application/json')) {
        const body = req.body as Record<string, unknown>;
        checkBody(AssetUrlUpload, body);
        result = await downloads.uploadFromUrl(principal, body.url, createInputOfBody(body));
      } else {
        throw new DomainError(
          'UNSUPPORTED_MEDIA_TYPE',
          'send multipart/form-data with a file, or application/json with a url',
        );
      }
      res.status(result.created ? 201 : 200).json(assetJson(result.asset, linksOfRes(res), result.created));
    }),
  );

  const pages = new PageCache();
  r.get(
    '/assets',
    handle(async (req, res) => {
      const principal = principalOf(res);
      const query = parseListQuery(req);
      const links = linksOfRes(res);
      // The grant is in the key: a page kept with one window's grant is made again in the next (read-grants.ts).
      const key = `${principal.ownerId}\0${links.base}\0${links.access ?? ''}\0${JSON.stringify(query)}`;
      const cached = pages.get(key);
      const page = await assets.pageIfChanged(principal, query, cached?.version);
      sendJsonBytes(
        res,
        page ? pages.set(key, page.version, JSON.stringify(assetPageJson(page, links))) : cached!.body,
      );
    }),
  );

  r.get(
    '/assets/tags/refine',
    handle(async (req, res) => {
      const q = req.query as Record<string, unknown>;
      const { counts, lowerBounds } = await assets.tagFacets(
        principalOf(res),
        parseFilter(q),
        intParam(q, 'limit', 100, 1, 1000),
      );
      res.json({
        tag_counts: Object.fromEntries(counts.map((c) => [c.name, c.count])),
        ...(lowerBounds ? { counts_are_lower_bounds: true } : {}),
      });
    }),
  );

  r.get(
    '/assets/remote-metadata',
    handle(async (req, res) => {
      const url = stringParam(req.query as Record<string, unknown>, 'url');
      if (url === undefined) throw new DomainError('INVALID_QUERY', 'url is required', { parameter: 'url' });
      res.json(remoteMetadataJson(await downloads.remoteMetadata(principalOf(res), url)));
    }),
  );

  r.post(
    '/assets/from-hash',
    ...jsonBody(),
    handle(async (req, res) => {
      const body = req.body as Record<string, unknown>;
      checkBody(FromHashRequest, body);
      const hash = validateHashField(body.hash);
      const fields = validateFromHashFields(createInputOfBody(body));
      const result = await assets.keepPaths(
        principalOf(res),
        await assets.createFromStored(principalOf(res), fields, hash),
        fields.paths,
      );
      res.status(result.created ? 201 : 200).json(assetJson(result.asset, linksOfRes(res), result.created));
    }),
  );

  r.get(
    '/assets/hash/:hash',
    handle(async (req, res) => {
      const hash = hashParam(req.params.hash);
      if (!(await assets.contentExists(hash)))
        throw new DomainError('CONTENT_NOT_FOUND', 'no stored content has this hash');
      res.json({ exists: true, hash: req.params.hash });
    }),
  );

  r.put(
    '/assets/:id',
    notAnAssetId,
    ...jsonBody(),
    handle(async (req, res) => {
      const id = pathId(req);
      check(AssetUpdate, req.body);
      const fields = validateUpdateFields(updateInputOfBody(req.body as Record<string, unknown>));
      // The whole asset (a superset of Comfy Cloud's update result): the ComfyUI frontend parses it as one.
      res.json(assetJson(await assets.update(principalOf(res), id, fields), linksOfRes(res)));
    }),
  );

  r.post(
    '/assets/:id/tags',
    ...jsonBody(),
    handle(async (req, res) => {
      const id = pathId(req);
      checkBody(TagEditRequest, req.body);
      const out = await assets.addTags(principalOf(res), id, (req.body as Record<string, unknown>).tags);
      res.json({ added: out.added, already_present: out.alreadyPresent, total_tags: out.totalTags });
    }),
  );

  // The tree paths of the asset's content (metadata.paths), appended: `assets push` records each path it pushed.
  r.post(
    '/assets/:id/paths',
    ...jsonBody(),
    handle(async (req, res) => {
      checkBody(PathsRequest, req.body);
      const paths = await assets.addPaths(principalOf(res), pathId(req), (req.body as Record<string, unknown>).paths);
      res.json({ paths });
    }),
  );

  r.delete(
    '/assets/:id/tags',
    ...jsonBody(),
    handle(async (req, res) => {
      const id = pathId(req);
      checkBody(TagEditRequest, req.body);
      const out = await assets.removeTags(principalOf(res), id, (req.body as Record<string, unknown>).tags);
      res.json({
        removed: out.removed,
        not_present: out.notPresent,
        total_tags: out.totalTags,
        protected: out.protected,
      });
    }),
  );

  r.delete(
    '/assets/:id',
    notAnAssetId,
    handle(async (req, res) => {
      await assets.delete(principalOf(res), pathId(req));
      res.status(204).end();
    }),
  );

  return r;
}

/** The filters GET /api/assets and GET /api/assets/tags/refine share, Comfy Cloud's names included. */
function parseFilter(q: Record<string, unknown>): AssetFilter {
  // Repeated keys and comma-separated values are joined (listParam); the rules are resolveTagFilter's (contract 3.7).
  const param = (name: string, isNew: boolean) => ({ name, isNew, values: listParam(q, name, MAX_RAW_FILTER_TAGS) });
  const hashText = stringParam(q, 'hash');
  const hash = hashText === undefined ? undefined : parseHash(hashText);
  if (hashText !== undefined && !hash) {
    throw new DomainError('INVALID_QUERY', 'hash must look like blake3:<64 hex> or sha256:<64 hex>', {
      parameter: 'hash',
    });
  }
  // There are no public assets here: include_public is accepted (and checked) but changes nothing.
  oneOf(q, 'include_public', ['true', 'false', '1', '0'] as const, 'false');
  return {
    ...resolveTagFilter({
      all: [param('include_tags', false), param('tags_all', true)],
      any: [param('tags_any', true)],
      none: [param('exclude_tags', false), param('tags_none', true)],
    }),
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
    after: stringParam(q, 'after', MAX_CURSOR_LENGTH),
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
