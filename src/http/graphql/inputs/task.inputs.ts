import { ArrayMaxSize, IsUUID, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { ArgsType, Field, ID, InputType, Int } from 'type-graphql';
import { JSONScalar } from '../scalars';
import { SortOrderEnum, TaskStatusEnum } from '../types/enums';

@InputType({ description: 'Filters of `tasks` (the query parameters of GET /api/tasks).' })
export class TaskFilter {
  @Field(() => String, { nullable: true })
  @MaxLength(128)
  taskName?: string;

  @Field(() => String, { nullable: true })
  @MaxLength(1024)
  idempotencyKey?: string;

  @Field(() => [TaskStatusEnum], { nullable: true, description: 'Any of these statuses.' })
  @ArrayMaxSize(4)
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
  @ValidateNested()
  filter?: TaskFilter;

  @Field(() => Int, { defaultValue: 20, description: '1–100' })
  @Min(1)
  @Max(100)
  limit!: number;

  @Field(() => Int, { defaultValue: 0 })
  @Min(0)
  @Max(1_000_000_000)
  offset!: number;

  @Field({ defaultValue: false, description: "Admin keys only (FORBIDDEN otherwise): every owner's tasks." })
  allOwners!: boolean;
}

@InputType({ description: 'A download from an allowed provider.' })
export class StartDownloadInput {
  @Field({ description: 'An http(s) URL on HF_ENDPOINT or CIVITAI_ENDPOINT.' })
  @MaxLength(8192)
  sourceUrl!: string;

  @Field(() => [String], { nullable: true })
  @ArrayMaxSize(1024)
  @MaxLength(4096, { each: true })
  tags?: string[];

  @Field(() => JSONScalar, { nullable: true })
  userMetadata?: unknown;

  @Field(() => ID, { nullable: true })
  @IsUUID('all')
  previewId?: string;

  @Field(() => String, {
    nullable: true,
    description: 'Like the Idempotency-Key header: repeating it answers with the first task.',
  })
  @MaxLength(1024)
  idempotencyKey?: string;
}
