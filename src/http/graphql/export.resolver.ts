import { Arg, Ctx, Mutation, Resolver, UseMiddleware } from 'type-graphql';
import { exportRequestOf, type ExportService } from '../../domain/exports/export.service';
import type { GraphQLContext } from './context';
import { InputChecked } from './input-check';
import { StartExportInput } from './inputs/export.inputs';
import { TaskType } from './types/task.type';

@Resolver()
@UseMiddleware(InputChecked)
export class ExportResolver {
  constructor(private readonly exports: ExportService) {}

  @Mutation(() => TaskType, {
    description:
      'POST /api/assets/export: a task (`export_assets`) whose `result.exportName` names the archive once done.',
  })
  async startExport(
    @Arg('input', () => StartExportInput) input: StartExportInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<TaskType> {
    // Checked by its schema (http/schema/graphql.ts); the same request as REST's, over the same field names.
    const request = exportRequestOf({
      asset_ids: input.assetIds,
      job_ids: input.jobIds,
      job_asset_name_filters: input.jobAssetNameFilters,
      include_previews: input.includePreviews,
      naming_strategy: input.namingStrategy,
    });
    return TaskType.from(await this.exports.start(ctx.principal, request, input.idempotencyKey ?? null));
  }
}
