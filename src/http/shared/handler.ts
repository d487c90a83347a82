import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Principal } from '../../domain/assets/asset.types';

/** The key's owner, as the authentication step left it (`res.locals.principal`), for every transport's handlers. */
export const principalOf = (res: Response): Principal => res.locals.principal as Principal;

/** Wraps an async handler so a rejection reaches the error middleware. */
export const handle =
  (fn: (req: Request, res: Response) => Promise<unknown>): RequestHandler =>
  (req: Request, res: Response, next: NextFunction) => {
    fn(req, res).catch(next);
  };
