import { createHash } from 'node:crypto';
import { Kind, type OperationDefinitionNode } from 'graphql';
import type { Principal } from '../../domain/assets/asset.types';
import { PageCache } from '../shared/page-cache';
import type { GraphQLContext } from './context';
import type { GraphQLRequest } from './http/request';

/** What an `assets` request will keep its answer under, if it gets a whole one. */
export interface KeptSlot {
  key: string;
  version: string;
}

/**
 * Repeated `assets` queries (with `tagCounts` and the schema's `__type` beside them, as the asset browser's first
 * screen asks) answered with their kept body while the owner's rows version is unchanged (after parsing,
 * validation and the context). An answer is kept under the rows version read before the execution that made it,
 * keyed by everything it is a function of besides the owner's rows: the owner, the base of its URLs and their grant
 * (which changes every window: read-grants.ts), the document text, the operation name and the variables. Only a whole
 * answer is kept: no error (so no partial data), no status or header set by the operation.
 * test/integration/graphql-kept.test.ts.
 */
export class KeptAnswers {
  private readonly kept = new PageCache();

  constructor(private readonly rowsVersion: (principal: Principal) => Promise<string>) {}

  /**
   * The kept body of this request, or the slot its answer goes to (`keep`); undefined when the operation is not an
   * owner's `assets`/`tagCounts` query, or the rows version cannot be read (the execution meets the same outage and answers it).
   */
  async lookup(
    ctx: GraphQLContext,
    operation: OperationDefinitionNode,
    request: GraphQLRequest,
  ): Promise<{ body: Buffer } | KeptSlot | undefined> {
    if (!ownerAssetsOnly(operation)) return undefined;
    const { principal, links } = ctx;
    const key = createHash('sha256')
      .update(
        JSON.stringify([
          principal.ownerId,
          links.base,
          links.access ?? null,
          request.operationName ?? null,
          request.query ?? null,
          request.variables ?? null,
        ]),
      )
      .digest('base64');
    const entry = this.kept.get(key);
    let version: string;
    try {
      version = await this.rowsVersion(principal);
    } catch {
      return undefined;
    }
    if (entry && entry.version === version) return { body: entry.body };
    return { key, version };
  }

  /** Keeps a whole answer's body in its slot; what to send (the kept bytes or the text). */
  keep(slot: KeptSlot, body: string): Buffer | string {
    return this.kept.set(slot.key, slot.version, body);
  }
}

const OWNER_ASSETS_ONLY = new WeakMap<OperationDefinitionNode, boolean>();

/** Top-level fields whose answers are a function of the owner's asset rows alone (given their arguments). */
const OWNER_ROWS_FIELDS = new Set(['assets', 'tagCounts']);
/** Top-level fields whose answers are a function of the schema alone (the same for the life of the process). */
const SCHEMA_FIELDS = new Set(['__type', '__schema', '__typename']);

/**
 * Whether the operation's answer is a function of the owner's asset rows only (given its text, variables and the
 * URLs' base): a query with no directive whose top-level fields are `assets`, `tagCounts` (the counts of the tags of
 * those rows) and the schema's own (`__type`, as the asset browser's first screen asks for them beside its first
 * page), at least one of them an owner's. Below `assets` are only AssetPage and Asset fields: the page's rows and
 * their columns (`thumbnailUrl` from `has_thumbnail`, `previewUrl` from `preview_id`), and `preview`, which reads the
 * same owner's asset (AssetService.getMany is per owner). Every change of any of these rows, any column, moves the
 * owner's rows version in its own transaction (migration 20261122210000), on any instance; the tag counts change only
 * with the rows' tags. A field added under Asset that reads anything else must end this.
 */
function ownerAssetsOnly(operation: OperationDefinitionNode): boolean {
  let only = OWNER_ASSETS_ONLY.get(operation);
  if (only === undefined) {
    const fields = operation.selectionSet.selections;
    only =
      operation.operation === 'query' &&
      !operation.directives?.length &&
      fields.every(
        (s) =>
          s.kind === Kind.FIELD &&
          !s.directives?.length &&
          (OWNER_ROWS_FIELDS.has(s.name.value) || SCHEMA_FIELDS.has(s.name.value)),
      ) &&
      fields.some((s) => s.kind === Kind.FIELD && OWNER_ROWS_FIELDS.has(s.name.value));
    OWNER_ASSETS_ONLY.set(operation, only);
  }
  return only;
}
