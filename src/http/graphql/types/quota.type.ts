import { Field, Int, ObjectType } from 'type-graphql';
import type { Usage } from '../../../domain/quotas/quota.types';
import { SafeIntScalar } from '../scalars';

@ObjectType('Usage', { simpleResolvers: true, description: "GET /api/usage: an owner's use and limits." })
export class UsageType {
  @Field()
  owner!: string;

  @Field(() => SafeIntScalar, { description: "Sum of size over the owner's assets." })
  bytes!: number;

  @Field(() => Int)
  assets!: number;

  @Field(() => SafeIntScalar, { nullable: true, description: 'Absent: no limit.' })
  maxBytes?: number;

  @Field(() => Int, { nullable: true, description: 'Absent: no limit.' })
  maxAssets?: number;

  static from(u: Usage): UsageType {
    return Object.assign(new UsageType(), u);
  }
}
