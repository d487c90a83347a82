import { Field, InputType, Int } from 'type-graphql';
import { SafeIntScalar } from '../scalars';

@InputType({ description: 'PUT /api/owners/{owner}/quota: a limit set, null to clear it, absent to keep it.' })
export class OwnerQuotaInput {
  @Field(() => SafeIntScalar, { nullable: true, description: "The most bytes (sum of size) the owner's assets take." })
  maxBytes?: number | null;

  @Field(() => Int, { nullable: true, description: 'The most assets the owner has.' })
  maxAssets?: number | null;
}
