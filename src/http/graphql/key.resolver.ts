import { Arg, Args, Ctx, ID, Mutation, Query, Resolver, UseMiddleware } from 'type-graphql';
import type { AuditService } from '../../domain/audit/audit.service';
import type { ApiKeyService } from '../../domain/auth/api-key.service';
import { idParam } from '../shared/ids';
import type { GraphQLContext } from './context';
import { InputChecked } from './input-check';
import { ApiKeysArgs, AuditEventsArgs, CreateApiKeyInput } from './inputs/key.inputs';
import type { ApiKeyScopeEnum } from './types/enums';
import { ApiKeyType, AuditEventPageType, CreatedApiKeyType, ViewerType } from './types/key.type';

/** Key management and the audit trail (contract 8), the same service calls as /api/keys and /api/audit. */
@Resolver()
@UseMiddleware(InputChecked)
export class KeyResolver {
  constructor(
    private readonly keys: ApiKeyService,
    private readonly audit: AuditService,
  ) {}

  @Query(() => ViewerType, { description: "The request's key: its owner and scopes." })
  viewer(@Ctx() ctx: GraphQLContext): ViewerType {
    return Object.assign(new ViewerType(), {
      owner: ctx.principal.ownerId,
      scopes: [...ctx.principal.scopes] as ApiKeyScopeEnum[],
    });
  }

  @Query(() => [ApiKeyType], { description: "GET /api/keys: this owner's keys (admin: another owner's, or all)." })
  async apiKeys(@Args(() => ApiKeysArgs) args: ApiKeysArgs, @Ctx() ctx: GraphQLContext): Promise<ApiKeyType[]> {
    const keys = await this.keys.list(ctx.principal, { owner: args.owner, allOwners: args.allOwners });
    return keys.map((k) => ApiKeyType.from(k));
  }

  @Mutation(() => CreatedApiKeyType, { description: 'POST /api/keys.' })
  async createApiKey(
    @Arg('input', () => CreateApiKeyInput) input: CreateApiKeyInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<CreatedApiKeyType> {
    const { key, info } = await this.keys.create(ctx.principal, {
      owner: input.owner,
      label: input.label,
      scopes: input.scopes,
      expiresAt: input.expiresAt,
    });
    return Object.assign(new CreatedApiKeyType(), { key, apiKey: ApiKeyType.from(info) });
  }

  @Mutation(() => Boolean, { description: 'DELETE /api/keys/{id}: true once revoked (NOT_FOUND for a key not yours).' })
  async revokeApiKey(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<boolean> {
    await this.keys.revoke(ctx.principal, idParam(id));
    return true;
  }

  @Query(() => AuditEventPageType, { description: 'GET /api/audit (admin keys): newest first.' })
  async auditEvents(
    @Args(() => AuditEventsArgs) args: AuditEventsArgs,
    @Ctx() ctx: GraphQLContext,
  ): Promise<AuditEventPageType> {
    return AuditEventPageType.from(await this.audit.list(ctx.principal, args.limit, args.after));
  }
}
