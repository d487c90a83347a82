import { ArgsType, Field, ID, InputType, Int } from 'type-graphql';
import { JSONScalar } from '../scalars';
import { SortOrderEnum, TaskStatusEnum } from '../types/enums';

@InputType({ description: 'Filters of `tasks` (the query parameters of GET /api/tasks).' })
export class TaskFilter {
  @Field(() => String, { nullable: true })
  taskName?: string;

  @Field(() => String, { nullable: true })
  idempotencyKey?: string;

  @Field(() => [TaskStatusEnum], { nullable: true, description: 'Any of these statuses.' })
  status?: TaskStatusEnum[];

  @Field(() => Date, { nullable: true })
  createdAfter?: Date;

  @Field(() => Date, { nullable: true })
  createdBefore?: Date;

  @Field(() => SortOrderEnum, { nullable: true, description: 'By creation time; default desc.' })
  sortOrder?: SortOrderEnum;
}

@ArgsType()
export class TasksArgs {
  @Field(() => TaskFilter, { nullable: true })
  filter?: TaskFilter;

  @Field(() => Int, { defaultValue: 20, description: '1–100' })
  limit!: number;

  @Field(() => Int, { defaultValue: 0 })
  offset!: number;

  @Field({ defaultValue: false, description: "Admin keys only (FORBIDDEN otherwise): every owner's tasks." })
  allOwners!: boolean;
}

@InputType({ description: 'A download from an allowed provider.' })
export class StartDownloadInput {
  @Field({ description: 'An http(s) URL on HF_ENDPOINT or CIVITAI_ENDPOINT.' })
  sourceUrl!: string;

  @Field(() => [String], { nullable: true })
  tags?: string[];

  @Field(() => JSONScalar, { nullable: true })
  userMetadata?: unknown;

  @Field(() => ID, { nullable: true })
  previewId?: string;

  @Field(() => String, {
    nullable: true,
    description: 'Like the Idempotency-Key header: repeating it answers with the first task.',
  })
  idempotencyKey?: string;
}
