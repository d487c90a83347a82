import 'reflect-metadata';
import { printSchema, type GraphQLSchema } from 'graphql';
import { buildSchema } from 'type-graphql';
import type { AssetService } from '../../domain/assets/asset.service';
import type { DownloadService } from '../../domain/downloads/download.service';
import type { TaskService } from '../../domain/tasks/task.service';
import { AssetMutationResolver } from './asset-mutation.resolver';
import { AssetResolver } from './asset.resolver';
import { TagResolver } from './tag.resolver';
import { TaskResolver } from './task.resolver';
import { ExportResolver } from './export.resolver';
import { DateTimeISOScalar } from './scalars';
import { checkGraphQLArg } from '../schema/graphql';
import type { ExportService } from '../../domain/exports/export.service';
import type { ApiKeyService } from '../../domain/auth/api-key.service';
import type { AuditService } from '../../domain/audit/audit.service';
import { KeyResolver } from './key.resolver';
import type { QuotaService } from '../../domain/quotas/quota.service';
import { QuotaResolver } from './quota.resolver';

export interface ResolverDeps {
  assets: AssetService;
  tasks: TaskService;
  downloads: DownloadService;
  exports: ExportService;
  apiKeys: ApiKeyService;
  audit: AuditService;
  quotas: QuotaService;
}

const RESOLVERS = [
  AssetResolver,
  AssetMutationResolver,
  TagResolver,
  TaskResolver,
  ExportResolver,
  KeyResolver,
  QuotaResolver,
] as const;

/**
 * The executable schema. Resolver instances come from the composition root through a `{ get(cls) }` container;
 * without deps (schema:emit, the drift test) only the type definitions matter.
 */
export function buildGraphQLSchema(deps?: ResolverDeps): Promise<GraphQLSchema> {
  const instances = new Map<unknown, unknown>(
    deps
      ? [
          [AssetResolver, new AssetResolver(deps.assets)],
          [AssetMutationResolver, new AssetMutationResolver(deps.assets)],
          [TagResolver, new TagResolver(deps.assets)],
          [TaskResolver, new TaskResolver(deps.tasks, deps.downloads)],
          [ExportResolver, new ExportResolver(deps.exports)],
          [KeyResolver, new KeyResolver(deps.apiKeys, deps.audit)],
          [QuotaResolver, new QuotaResolver(deps.quotas)],
        ]
      : [],
  );
  return buildSchema({
    resolvers: [...RESOLVERS],
    // Arguments are checked against their input schemas (http/schema), not by class-validator.
    validateFn: checkGraphQLArg,
    scalarsMap: [{ type: Date, scalar: DateTimeISOScalar }],
    container: {
      get: (cls: { name: string }) => {
        const instance = instances.get(cls);
        if (!instance) throw new Error(`no instance of ${cls.name} in the GraphQL container`);
        return instance;
      },
    },
  });
}

export const SCHEMA_FILE_HEADER =
  '# The GraphQL schema of the asset service, emitted from the code (src/http/graphql).\n' +
  '# Do not edit: regenerate with `npm run schema:emit`; test/integration/graphql-schema.test.ts fails when it is stale.\n\n';

/** The text of schema.graphql. */
export function schemaFileText(schema: GraphQLSchema): string {
  return SCHEMA_FILE_HEADER + printSchema(schema) + '\n';
}
