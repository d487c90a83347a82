import DataLoader from 'dataloader';
import type { Request, Response } from 'express';
import { GraphQLError } from 'graphql';
import type { AssetService } from '../../domain/assets/asset.service';
import type { Asset, Links, Principal } from '../../domain/assets/asset.types';
import type { Logger } from '../../infra/logger';
import { closeAfterAnswer } from '../request-guard';
import { knownError, STATUS_OF } from '../shared/errors';
import { linksOfRes } from '../base-url';
import type { RequestAuth } from '../shared/request-auth';

export interface GraphQLContext {
  principal: Principal;
  requestId: string;
  logger: Logger;
  /** The base of absolute URLs (PUBLIC_URL or the request's origin) and the read grant media URLs carry. */
  links: Links;
  /** This owner's assets by id, batched per request (previews of a list cost one query, not one per item). */
  assetLoader: DataLoader<string, Asset | null>;
  /**
   * Assets of this owner the request has read already (a page's items): the loader takes them from here rather than
   * from the database (a page whose items preview each other costs no second query).
   */
  sawAssets(assets: readonly Asset[]): void;
  /** One of the assets of `sawAssets`, by id. */
  seenAsset(id: string): Asset | undefined;
  /** Asks for the connection to be closed after the answer (a rejected upload may still be streaming in). */
  closeConnection(): void;
}

/**
 * Apollo's context function: every operation needs a valid key (X-API-Key or Authorization: Bearer), else the
 * whole request fails with HTTP 401 and `extensions.code: UNAUTHORIZED`, like REST.
 */
export function createContext(deps: { auth: RequestAuth; assets: AssetService; logger: Logger }) {
  return async ({ req, res }: { req: Request; res: Response }): Promise<GraphQLContext> => {
    let principal: Principal;
    try {
      principal = await deps.auth.authenticate(req, res);
    } catch (err) {
      const known = knownError(err);
      if (!known) throw err;
      const headers = new Map<string, string>();
      if (known.details?.retry_after !== undefined) headers.set('retry-after', String(known.details.retry_after));
      throw new GraphQLError(known.message, {
        extensions: {
          code: known.code,
          ...(known.details ? { details: known.details } : {}),
          http: { status: STATUS_OF[known.code], headers },
        },
      });
    }
    return new RequestContext(principal, String(res.locals.requestId ?? ''), linksOfRes(res), res, deps);
  };
}

/**
 * The logger and the loader are made on first use: most operations need neither (a single asset, a page without
 * previews), and both cost allocations on every request otherwise. They are getters on the prototype over plain
 * fields because Apollo copies the context per operation (`Object.assign(Object.create(proto), ctx)`, for batches):
 * own getters would be called by that copy, on every request.
 */
class RequestContext implements GraphQLContext {
  private lazyLogger: Logger | undefined = undefined;
  private lazyLoader: DataLoader<string, Asset | null> | undefined = undefined;
  private seen: Array<readonly Asset[]> | undefined = undefined;
  private seenById: Map<string, Asset> | undefined = undefined;

  constructor(
    readonly principal: Principal,
    readonly requestId: string,
    readonly links: Links,
    private readonly res: Response,
    private readonly deps: { assets: AssetService; logger: Logger },
  ) {}

  get logger(): Logger {
    return (this.lazyLogger ??= this.deps.logger.child({ request_id: this.requestId }));
  }

  get assetLoader(): DataLoader<string, Asset | null> {
    return (this.lazyLoader ??= new DataLoader<string, Asset | null>(
      async (ids) => {
        const missing = ids.filter((id) => !this.seenAsset(id));
        const found = new Map<string, Asset>();
        if (missing.length > 0)
          for (const a of await this.deps.assets.getMany(this.principal, missing)) found.set(a.id, a);
        return ids.map((id) => this.seenAsset(id) ?? found.get(id) ?? null);
      },
      { maxBatchSize: 500 },
    ));
  }

  sawAssets(assets: readonly Asset[]): void {
    (this.seen ??= []).push(assets);
    this.seenById = undefined;
  }

  seenAsset(id: string): Asset | undefined {
    if (!this.seen) return undefined;
    if (!this.seenById) {
      this.seenById = new Map();
      for (const page of this.seen) for (const a of page) this.seenById.set(a.id, a);
    }
    return this.seenById.get(id);
  }

  closeConnection(): void {
    closeAfterAnswer(this.res);
  }
}
