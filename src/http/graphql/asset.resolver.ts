import { Arg, Args, Ctx, FieldResolver, ID, Query, Resolver, Root, UseMiddleware } from 'type-graphql';
import type { AssetService } from '../../domain/assets/asset.service';
import { normalizeTags } from '../../domain/assets/validation';
import { assertJsonObject } from '../../domain/input';
import { hashArg, idArg } from './args';
import type { GraphQLContext } from './context';
import { ErrorInterceptor } from './errors';
import { InputCheck } from './input-check';
import { AssetsArgs } from './inputs/asset.inputs';
import { AssetPage, AssetType } from './types/asset.type';

@Resolver(() => AssetType)
@UseMiddleware(ErrorInterceptor, InputCheck)
export class AssetResolver {
  constructor(private readonly service: AssetService) {}

  @Query(() => AssetType, { description: 'One of your assets (ASSET_NOT_FOUND otherwise); records the access time.' })
  async asset(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<AssetType> {
    return AssetType.from(await this.service.get(ctx.principal, idArg(id)));
  }

  @Query(() => AssetPage, { description: 'Your assets, filtered and paginated (GET /api/assets).' })
  async assets(@Args(() => AssetsArgs) args: AssetsArgs, @Ctx() ctx: GraphQLContext): Promise<AssetPage> {
    const f = args.filter ?? {};
    const metadataFilter = f.metadataFilter ?? undefined;
    if (metadataFilter !== undefined) assertJsonObject(metadataFilter, 'metadataFilter', 'INVALID_BODY');
    const page = await this.service.list(ctx.principal, {
      includeTags: normalizeTags(f.includeTags ?? [], 'includeTags'),
      excludeTags: normalizeTags(f.excludeTags ?? [], 'excludeTags'),
      nameContains: f.nameContains || undefined,
      metadataFilter: metadataFilter as Record<string, unknown> | undefined,
      limit: args.limit,
      offset: args.offset,
      sort: args.sort,
      order: args.order,
    });
    return AssetPage.from(page);
  }

  @Query(() => Boolean, { description: 'Whether content with this hash is stored (by anyone): HEAD /api/assets/hash/{hash}.' })
  contentExists(@Arg('hash') hash: string): Promise<boolean> {
    return this.service.contentExists(hashArg(hash));
  }

  @FieldResolver(() => AssetType, { nullable: true, description: 'The preview asset (batched: no extra query per list item).' })
  async preview(@Root() asset: AssetType, @Ctx() ctx: GraphQLContext): Promise<AssetType | null> {
    if (!asset.previewId) return null;
    if (asset.previewId === asset.id) return asset;
    const found = await ctx.assetLoader.load(asset.previewId);
    return found ? AssetType.from(found) : null;
  }
}
