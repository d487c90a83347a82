import { Args, Ctx, Query, Resolver, UseMiddleware } from 'type-graphql';
import type { AssetService } from '../../domain/assets/asset.service';
import type { GraphQLContext } from './context';
import { InputChecked } from './input-check';
import { TagsArgs } from './inputs/asset.inputs';
import { TagPage } from './types/tag.type';

@Resolver()
@UseMiddleware(InputChecked)
export class TagResolver {
  constructor(private readonly assets: AssetService) {}

  @Query(() => TagPage, { description: 'Tags of your assets with their counts (GET /api/tags).' })
  async tags(@Args(() => TagsArgs) args: TagsArgs, @Ctx() ctx: GraphQLContext): Promise<TagPage> {
    const page = await this.assets.listTags(ctx.principal, {
      prefix: args.prefix || undefined,
      limit: args.limit,
      offset: args.offset,
      order: args.order,
    });
    return TagPage.from(page);
  }
}
