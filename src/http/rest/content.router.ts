import { Router, type Request, type RequestHandler, type Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { contentDispositionOf, type AssetService } from '../../domain/assets/asset.service';
import { assetHashOf, type Asset } from '../../domain/assets/asset.types';
import { servedContentType } from '../../domain/content/mime';
import { servableMediaType } from '../../domain/input';
import { stringParam } from '../schema/query';
import { NO_METER, type TransferMeter } from '../../domain/transfer-meter';
import { contentDisposition } from '../../infra/content-disposition';
import { FileBody } from '../../infra/blob-store/file-body';
import { handle, principalOf } from '../shared/handler';
import { pathId } from './middleware';
import { DomainError } from '../../domain/errors';

export interface ContentDeps {
  assets: AssetService;
  presignedDownloads: boolean;
  meter?: TransferMeter;
}

/** GET|HEAD /api/assets/{id}/content with the key (with a read grant: granted.router.ts). */
export function contentRouter(deps: ContentDeps): Router {
  const r = Router();
  const serve = contentHandler(deps);
  r.get('/assets/:id/content', serve);
  r.head('/assets/:id/content', serve);
  return r;
}

/** The bytes of the asset `:id` of the request's principal, with ETag, conditional requests and single byte ranges. */
export function contentHandler(deps: ContentDeps): RequestHandler {
  const meter = deps.meter ?? NO_METER;
  return handle(async (req, res) => {
    const principal = principalOf(res);
    const { asset, open, assertServable } = await deps.assets.openContent(principal, pathId(req));
    // Anything but `inline` (absent, unknown) is an attachment.
    const requested =
      stringParam(req.query as Record<string, unknown>, 'disposition') === 'inline' ? 'inline' : 'attachment';
    const etag = `"${assetHashOf(asset)}"`;
    // SVG is answered by what fetches it (setContentHeaders): caches must keep the two answers apart.
    const svg = isSvg(asset.mimeType);
    if (svg) res.vary('Sec-Fetch-Dest');
    const asImage = svg && req.get('sec-fetch-dest') === 'image';
    res.set('ETag', etag);
    res.set('Accept-Ranges', 'bytes');
    res.set('Cache-Control', 'private, max-age=0, must-revalidate');
    if (ifNoneMatch(req, etag)) {
      res.status(304).end();
      return;
    }
    if (deps.presignedDownloads && req.method === 'GET' && !asImage) {
      const url = await deps.assets.presignedContentUrl(asset, asset.name, requested);
      if (url) {
        res.redirect(302, url);
        return;
      }
    }
    let range = parseRange(req.get('range'), asset.size);
    const ifRange = req.get('if-range');
    if (range && ifRange && ifRange !== etag) range = undefined;
    if (range === 'unsatisfiable') throw unsatisfiable(asset.size);
    setContentHeaders(res, asset, requested, asImage);
    if (range) {
      res.status(206).set('Content-Range', `bytes ${range.start}-${range.end}/${asset.size}`);
      res.set('Content-Length', String(range.end - range.start + 1));
    } else {
      res.status(200).set('Content-Length', String(asset.size));
    }
    if (req.method === 'HEAD' || asset.size === 0) {
      // What the GET would answer: an in-place file that changed or is out of reach is not announced as servable.
      await assertServable();
      res.end();
      return;
    }
    const body = await open(range ?? undefined);
    const served = (n: number) => meter.add('served', n);
    // The disk store's body is written through its reusable read buffers; other stores' streams are piped as they
    // are, counted by a listener (an async-generator stage between them cost a few promises per chunk).
    const sent =
      body instanceof FileBody
        ? body.sendTo(res, served)
        : pipeline(
            body.on('data', (c: Buffer) => served(c.length)),
            res,
          );
    await sent.catch(() => {
      // The client went away mid-transfer (or the blob could not be read after the headers went out): cut it.
      body.destroy();
      res.destroy();
    });
  });
}

// 416 with `Content-Range: bytes */<size>` and the usual {code, message} body (rendered by the error middleware).
export const unsatisfiable = (size: number): DomainError =>
  new DomainError('RANGE_NOT_SATISFIABLE', `the Range is not satisfiable: the content is ${size} bytes`, { size });

/**
 * Active content (HTML, XML, JavaScript, SVG) goes out as an `application/octet-stream` attachment whatever
 * `disposition` asks, so no browser renders or runs it from this origin. The one exception is SVG fetched by an image
 * element (`Sec-Fetch-Dest: image`), where scripts cannot run: `image/svg+xml`, still under a sandboxing policy.
 */
function setContentHeaders(res: Response, asset: Asset, requested: 'inline' | 'attachment', asImage: boolean): void {
  // A row written before media types were checked may hold a value no header can carry: serve it as bytes.
  const mimeType = servableMediaType(asset.mimeType);
  const served = asImage ? 'image/svg+xml' : servedContentType(mimeType);
  res.set('Content-Type', served);
  res.set('X-Content-Type-Options', 'nosniff');
  // Active content is the one served as another type (application/octet-stream is never active).
  if (asImage || served !== mimeType) res.set('Content-Security-Policy', "sandbox; default-src 'none'");
  const disposition = asImage ? 'inline' : contentDispositionOf({ mimeType }, requested);
  res.set('Content-Disposition', contentDisposition(disposition, asset.name));
}

const isSvg = (mimeType: string): boolean => mimeType.split(';')[0]!.trim().toLowerCase() === 'image/svg+xml';

function ifNoneMatch(req: Request, etag: string): boolean {
  const h = req.get('if-none-match');
  if (!h) return false;
  return h.trim() === '*' || h.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/** One byte range of `bytes=a-b`, `bytes=a-` or `bytes=-n`; several ranges are answered with the whole body. */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m) return undefined;
  const [, a, b] = m;
  if (a === '' && b === '') return undefined;
  let start: number;
  let end: number;
  if (a === '') {
    const n = Number(b);
    if (n === 0) return 'unsatisfiable';
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(a);
    end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
    if (b !== '' && Number(b) < start) return undefined;
  }
  if (start >= size || size === 0) return 'unsatisfiable';
  return { start, end };
}
