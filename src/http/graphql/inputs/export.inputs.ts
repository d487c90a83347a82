import { Field, ID, InputType } from 'type-graphql';
import type { NamingStrategy } from '../../../domain/tasks/task.types';
import { JSONScalar } from '../scalars';

@InputType({ description: 'A bulk export: at least one of assetIds / jobIds.' })
export class StartExportInput {
  @Field(() => [ID], { nullable: true })
  assetIds?: string[];

  @Field(() => [ID], { nullable: true, description: 'Every asset of these jobs (prompt ids).' })
  jobIds?: string[];

  @Field(() => JSONScalar, {
    nullable: true,
    description: '{jobId: [asset names or hashes]}: only these assets of that job (a non-empty list).',
  })
  jobAssetNameFilters?: Record<string, string[]>;

  @Field(() => Boolean, { nullable: true })
  includePreviews?: boolean;

  @Field(() => String, {
    nullable: true,
    description: 'preserve | asset_id | group_by_job_id | group_by_job_time (default)',
  })
  namingStrategy?: NamingStrategy;

  @Field(() => String, {
    nullable: true,
    description: 'Like the Idempotency-Key header: repeating it answers with the first task.',
  })
  idempotencyKey?: string;
}
