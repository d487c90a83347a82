import { Arg, Ctx, Mutation, Query, Resolver, UseMiddleware } from 'type-graphql';
import type { QuotaService } from '../../domain/quotas/quota.service';
import type { GraphQLContext } from './context';
import { InputChecked } from './input-check';
import { OwnerQuotaInput } from './inputs/quota.inputs';
import { UsageType } from './types/quota.type';

/** Quotas (contract 8), the same service calls as GET /api/usage and PUT /api/owners/{owner}/quota. */
@Resolver()
@UseMiddleware(InputChecked)
export class QuotaResolver {
  constructor(private readonly quotas: QuotaService) {}

  @Query(() => UsageType, { description: "GET /api/usage: this owner's use and limits (admin: another owner's)." })
  async usage(
    @Arg('owner', () => String, { nullable: true }) owner: string | undefined,
    @Ctx() ctx: GraphQLContext,
  ): Promise<UsageType> {
    return UsageType.from(await this.quotas.usage(ctx.principal, owner ?? undefined));
  }

  @Mutation(() => UsageType, { description: "PUT /api/owners/{owner}/quota (admin keys): the owner's usage after." })
  async setOwnerQuota(
    @Arg('owner', () => String) owner: string,
    @Arg('input', () => OwnerQuotaInput) input: OwnerQuotaInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<UsageType> {
    return UsageType.from(
      await this.quotas.setQuota(ctx.principal, owner, { maxBytes: input.maxBytes, maxAssets: input.maxAssets }),
    );
  }
}
