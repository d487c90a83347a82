import { Arg, Args, Ctx, ID, Mutation, Query, Resolver, UseMiddleware } from 'type-graphql';
import type { DownloadService } from '../../domain/downloads/download.service';
import type { TaskService } from '../../domain/tasks/task.service';
import { idParam } from '../shared/ids';
import type { GraphQLContext } from './context';
import { InputChecked } from './input-check';
import { StartDownloadInput, TasksArgs } from './inputs/task.inputs';
import { SortOrderEnum } from './types/enums';
import { StartDownloadPayload, TaskPage, TaskType } from './types/task.type';
import { RemoteMetadataType } from './types/asset.type';

@Resolver(() => TaskType)
@UseMiddleware(InputChecked)
export class TaskResolver {
  constructor(
    private readonly taskService: TaskService,
    private readonly downloads: DownloadService,
  ) {}

  @Query(() => RemoteMetadataType, {
    description: 'What a download of url would bring, without downloading it (GET /api/assets/remote-metadata).',
  })
  async remoteMetadata(@Arg('url') url: string, @Ctx() ctx: GraphQLContext): Promise<RemoteMetadataType> {
    return Object.assign(new RemoteMetadataType(), await this.downloads.remoteMetadata(ctx.principal, url));
  }

  @Query(() => TaskType, { description: 'One of your tasks (TASK_NOT_FOUND otherwise).' })
  async task(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<TaskType> {
    return TaskType.from(await this.taskService.get(ctx.principal, idParam(id)));
  }

  @Query(() => TaskPage, { description: 'Your tasks, newest first by default (GET /api/tasks).' })
  async tasks(@Args(() => TasksArgs) args: TasksArgs, @Ctx() ctx: GraphQLContext): Promise<TaskPage> {
    const f = args.filter ?? {};
    const page = await this.taskService.list(ctx.principal, {
      taskName: f.taskName || undefined,
      idempotencyKey: f.idempotencyKey || undefined,
      statuses: f.status ?? [],
      createdAfter: f.createdAfter ?? undefined,
      createdBefore: f.createdBefore ?? undefined,
      sortOrder: f.sortOrder ?? SortOrderEnum.desc,
      offset: args.offset,
      limit: args.limit,
      allOwners: args.allOwners,
    });
    return TaskPage.from(page);
  }

  @Mutation(() => StartDownloadPayload, {
    description:
      'POST /api/assets/download: `asset` when the content is already known, else the `task` downloading it.',
  })
  async startDownload(
    @Arg('input', () => StartDownloadInput) input: StartDownloadInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<StartDownloadPayload> {
    // The download service validates the request itself (the same code path as POST /api/assets/download).
    const started = await this.downloads.start(ctx.principal, {
      sourceUrl: input.sourceUrl,
      tags: input.tags,
      userMetadata: input.userMetadata as Record<string, unknown> | undefined,
      previewId: input.previewId,
      idempotencyKey: input.idempotencyKey,
    });
    return StartDownloadPayload.from(started, ctx.links);
  }

  @Mutation(() => TaskType, {
    description: 'DELETE /api/tasks/{id}: cancels a created or running task; a finished one is TASK_NOT_CANCELLABLE.',
  })
  async cancelTask(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<TaskType> {
    return TaskType.from(await this.taskService.cancel(ctx.principal, idParam(id)));
  }
}
