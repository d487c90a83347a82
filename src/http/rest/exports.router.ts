import { Router } from 'express';
import { exportRequestOf, type ExportRequestBody, type ExportService } from '../../domain/exports/export.service';
import { contentDisposition } from '../../infra/content-disposition';
import { parseRange, unsatisfiable } from './content.router';
import { handle, principalOf } from '../shared/handler';
import { jsonBody } from './middleware';
import { checkBody } from '../schema/check';
import { ExportRequest } from '../schema/rest';
import { baseUrlOfRes } from '../base-url';

/** Bulk export: start an export task, and get a short-lived URL of a finished archive. */
export function exportsRouter(deps: { exports: ExportService }): Router {
  const r = Router();
  r.post(
    '/assets/export',
    ...jsonBody(),
    handle(async (req, res) => {
      checkBody(ExportRequest, req.body);
      const request = exportRequestOf(req.body as ExportRequestBody);
      const task = await deps.exports.start(principalOf(res), request, req.get('idempotency-key') ?? null);
      const message =
        task.status === 'created'
          ? 'export queued'
          : task.status === 'running'
            ? 'export in progress'
            : `export ${task.status}`;
      res.status(202).location(`/api/tasks/${task.id}`).json({ task_id: task.id, status: task.status, message });
    }),
  );
  r.get(
    '/assets/exports/:export_name',
    handle(async (req, res) => {
      const { url, expiresAt } = await deps.exports.url(
        principalOf(res),
        req.params.export_name as string,
        // The request's base as every other URL of the service has it (PUBLIC_URL, else Host, and behind a trusted
        // proxy X-Forwarded-Proto/-Host), so an export link names the address clients used, as preview_url does.
        baseUrlOfRes(res),
      );
      res.set('Cache-Control', 'no-store').json({ url, expires_at: expiresAt.toISOString() });
    }),
  );
  return r;
}

/**
 * The disk store's signed archive URLs (`.../download?expires=…&signature=…`): mounted at `/api/assets` before /api's
 * key check, as the signature is the credential.
 */
export function exportDownloadRouter(deps: { exports: ExportService }): Router {
  const r = Router();
  r.get(
    '/exports/:export_name/download',
    handle(async (req, res) => {
      const q = req.query as Record<string, unknown>;
      const name = req.params.export_name as string;
      const archive = await deps.exports.openSigned(name, String(q.expires ?? ''), String(q.signature ?? ''));
      // One byte range, so an interrupted download of a large archive can continue (curl -C -). An archive never
      // changes, so its name is its strong validator; an If-Range naming anything else (another ETag, a date: there
      // is no Last-Modified) gets the whole archive, as RFC 9110 13.1.5 asks.
      const etag = `"${name.replace(/\.zip$/, '')}"`;
      const ifRange = req.get('if-range');
      const range = ifRange !== undefined && ifRange !== etag ? undefined : parseRange(req.get('range'), archive.size);
      if (range === 'unsatisfiable') throw unsatisfiable(archive.size);
      res.set({
        'Content-Type': 'application/zip',
        'Content-Disposition': contentDisposition('attachment', archive.fileName),
        'Accept-Ranges': 'bytes',
        'Cache-Control': 'private, no-store',
        ETag: etag,
      });
      if (range) res.status(206).set('Content-Range', `bytes ${range.start}-${range.end}/${archive.size}`);
      res.set('Content-Length', String(range ? range.end - range.start + 1 : archive.size));
      if (req.method === 'HEAD') return void res.end();
      const stream = await archive.open(range);
      stream.on('error', () => res.destroy());
      stream.pipe(res);
    }),
  );
  return r;
}
