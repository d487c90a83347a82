import { createHash } from 'node:crypto';
import { HeaderMap, type ApolloServerPlugin, type GraphQLRequestListener } from '@apollo/server';
import { Kind, type FormattedExecutionResult, type OperationDefinitionNode } from 'graphql';
import type { Principal } from '../../domain/assets/asset.types';
import { PageCache } from '../shared/page-cache';
import type { GraphQLContext } from './context';

/** The `data` of a kept answer, as the JSON text it was sent as (see `stringifyResult`). */
class KeptData {
  constructor(readonly text: string) {}
}

/**
 * Apollo's `stringifyResult` (what it sends as the body, by default `JSON.stringify(result) + '\n'`): a kept
 * answer's `data` is written as the text it was kept as, every other result as Apollo writes it.
 */
export function stringifyResult(result: FormattedExecutionResult): string {
  const data = result.data as unknown;
  if (data instanceof KeptData && result.errors === undefined && result.extensions === undefined)
    return `{"data":${data.text}}\n`;
  return JSON.stringify(result) + '\n';
}

/**
 * Repeated `assets` queries (with `tagCounts` and the schema's `__type` beside them, as the asset browser's first
 * screen asks) answered from their kept `data` while the owner's rows version is unchanged, through
 * Apollo's documented hook for a whole-response cache (`responseForOperation`, after parsing, validation and the
 * context). An answer is kept under the rows version read before the execution that made it, keyed by everything it
 * is a function of besides the owner's rows: the owner, the base of its URLs and their grant (which changes every
 * window: read-grants.ts), the document text, the operation name and the variables. Only a whole answer is kept: no
 * error (so no partial data), no status or header set by the operation. test/integration/graphql-kept.test.ts.
 */
export function keptAnswers(
  rowsVersion: (principal: Principal) => Promise<string>,
): ApolloServerPlugin<GraphQLContext> {
  const kept = new PageCache();
  // What an `assets` request will keep, by its request context: the same listener serves every request.
  const pending = new WeakMap<object, { key: string; version: string }>();
  const listener: GraphQLRequestListener<GraphQLContext> = {
    async responseForOperation(rc) {
      if (!rc.operation || !ownerAssetsOnly(rc.operation)) return null;
      const { principal, links } = rc.contextValue;
      const key = createHash('sha256')
        .update(
          JSON.stringify([
            principal.ownerId,
            links.base,
            links.access ?? null,
            rc.request.operationName ?? null,
            rc.source ?? null,
            rc.request.variables ?? null,
          ]),
        )
        .digest('base64');
      const entry = kept.get(key);
      let version: string;
      try {
        version = await rowsVersion(principal);
      } catch {
        // The execution meets the same outage and answers it; nothing is kept.
        return null;
      }
      if (entry && entry.version === version) {
        return {
          http: { status: undefined, headers: new HeaderMap() },
          body: { kind: 'single', singleResult: { data: new KeptData(entry.body.toString()) as never } },
        };
      }
      pending.set(rc, { key, version });
      return null;
    },
    async willSendResponse(rc) {
      const p = pending.get(rc);
      if (p === undefined) return;
      const { body, http } = rc.response;
      if (body.kind !== 'single' || rc.errors?.length || http.status !== undefined || http.headers.size > 0) return;
      const { data, errors, extensions } = body.singleResult;
      if (data == null || errors !== undefined || extensions !== undefined) return;
      kept.set(p.key, p.version, JSON.stringify(data));
    },
  };
  return {
    async requestDidStart() {
      return listener;
    },
  };
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
