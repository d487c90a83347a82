import { Extensions, Field, InputType, Int } from 'type-graphql';
import { NULL_IS_A_VALUE } from '../input-check';
import { SafeIntScalar } from '../scalars';

/** `null` clears a limit (as in the REST body), so its nulls are values (NULL_IS_A_VALUE). */
@InputType({ description: 'PUT /api/owners/{owner}/quota: a limit set, null to clear it, absent to keep it.' })
@Extensions(NULL_IS_A_VALUE)
export class OwnerQuotaInput {
  @Field(() => SafeIntScalar, { nullable: true, description: "The most bytes (sum of size) the owner's assets take." })
  maxBytes?: number | null;

  @Field(() => Int, { nullable: true, description: 'The most assets the owner has.' })
  maxAssets?: number | null;
}
