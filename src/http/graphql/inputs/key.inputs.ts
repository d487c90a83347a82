import { ArgsType, Field, InputType, Int } from 'type-graphql';
import { ApiKeyScopeEnum } from '../types/enums';

@InputType({ description: 'POST /api/keys: a new key (the secret is in the answer only).' })
export class CreateApiKeyInput {
  @Field(() => String, { nullable: true, description: "Default: the key's own owner; another owner needs admin." })
  owner?: string;

  @Field(() => String, { nullable: true, description: 'At most 128 characters.' })
  label?: string;

  @Field(() => [ApiKeyScopeEnum], {
    nullable: true,
    description: "Default [read, write]; without admin, at most the key's own scopes and never admin.",
  })
  scopes?: ApiKeyScopeEnum[];

  @Field(() => Date, { nullable: true, description: 'In the future; after it the key is refused.' })
  expiresAt?: Date;
}

@ArgsType()
export class ApiKeysArgs {
  @Field(() => String, { nullable: true, description: "Admin keys only for another owner's keys." })
  owner?: string;

  @Field({ defaultValue: false, description: "Admin keys only (FORBIDDEN otherwise): every owner's keys." })
  allOwners!: boolean;
}

@ArgsType()
export class AuditEventsArgs {
  @Field(() => Int, { defaultValue: 50, description: '1–500' })
  limit!: number;

  @Field(() => String, { nullable: true, description: '`nextCursor` of the previous page.' })
  after?: string;
}
