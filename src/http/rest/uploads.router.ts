import { Router, type RequestHandler } from 'express';
import type { UploadService } from '../../domain/uploads/upload.service';
import { keyFromHeaders, type RequestAuth } from '../shared/request-auth';
import { methodOverride } from '../tus/method-override';
import { tusHandler } from '../tus/tus-handler';
import { authenticate } from './middleware';

/**
 * Resumable uploads at /api/uploads: the routes of the tus protocol adapter (src/http/tus/), behind the API key.
 * `capabilities` answers `OPTIONS` (tus's capabilities: Tus-Version, Tus-Extension, Tus-Max-Size) without a key, as
 * tus servers do (it reads nothing stored; a key that is sent is checked all the same); `keyed` is every other
 * request, mounted behind authentication; `version` names the protocol version on every answer under /uploads.
 */
export function uploadsRouters(deps: { uploads: UploadService; auth: RequestAuth }): {
  version: RequestHandler;
  capabilities: RequestHandler[];
  keyed: Router;
} {
  const serve = tusHandler(deps);
  const { override, restore } = methodOverride();
  const r = Router();
  r.post('/uploads', serve);
  r.post('/uploads/:id', override);
  r.head('/uploads/:id', serve);
  r.patch('/uploads/:id', serve);
  r.delete('/uploads/:id', serve);
  // (Mounted without a path, which would read as a route of its own; it sees only the errors of this router's routes.)
  r.use(restore);
  // Discovery needs no key, but a key that is sent is checked: a client (the CLI's push) learns that its key is wrong
  // before it sends or hashes anything.
  const keyed = authenticate(deps.auth);
  const keyIfSent: RequestHandler = (req, res, next) => {
    if (keyFromHeaders(req.headers['x-api-key'], req.headers.authorization) === undefined) next();
    else keyed(req, res, next);
  };
  // tus 1.0: every answer names the protocol version, the service's own (401, 429, 404, 405 ...) included. Mounted
  // without a path (a path-mounted middleware would read as a route of its own): `url` is relative to /api here.
  const version: RequestHandler = (req, res, next) => {
    if (req.url.startsWith('/uploads')) res.setHeader('Tus-Resumable', '1.0.0');
    next();
  };
  return { version, capabilities: [keyIfSent, serve], keyed: r };
}
