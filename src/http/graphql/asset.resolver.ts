import { Arg, Args, Ctx, FieldResolver, ID, Query, Resolver, Root, UseMiddleware } from 'type-graphql';
import type { AssetService } from '../../domain/assets/asset.service';
import type { AssetFilter as DomainFilter } from '../../domain/assets/asset.types';
import { cappedFilterTags } from '../../domain/assets/validation';
import { parseHash } from '../../domain/content/hashing';
import { DomainError } from '../../domain/errors';
import { assertJsonObject } from '../../domain/input';
import { hashParam, idParam } from '../shared/ids';
import { plainAssetsArgs, plainTagCountsArgs, validatedBy } from './args-check';
import type { GraphQLContext } from './context';
import { toGraphQLError } from './errors';
import { InputChecked } from './input-check';
import { AssetsArgs, TagCountsArgs, type AssetFilter } from './inputs/asset.inputs';
import { TagCountType } from './types/tag.type';
import { AssetPage, AssetType } from './types/asset.type';

/**
 * The error interceptor and the input check are on each query, not on the class: on the class they would also wrap
 * the `preview` field of every item of a page in type-graphql's async middleware chain (docs/benchmarks-history.md,
 * "Third round: GraphQL"); `preview` translates its errors itself.
 */
@Resolver(() => AssetType)
export class AssetResolver {
  constructor(private readonly service: AssetService) {}

  @UseMiddleware(InputChecked)
  @Query(() => AssetType, { description: 'One of your assets (ASSET_NOT_FOUND otherwise); records the access time.' })
  async asset(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<AssetType> {
    return AssetType.from(await this.service.get(ctx.principal, idParam(id)), ctx.baseUrl);
  }

  @UseMiddleware(InputChecked)
  @Query(() => AssetPage, { description: 'Your assets, filtered and paginated (GET /api/assets).' })
  async assets(@Args(() => AssetsArgs, { validateFn: validatedBy(plainAssetsArgs) }) args: AssetsArgs, @Ctx() ctx: GraphQLContext): Promise<AssetPage> {
    const page = await this.service.list(ctx.principal, {
      ...filterOf(args.filter),
      limit: args.limit,
      offset: args.offset,
      sort: args.sort,
      order: args.order,
      after: args.after || undefined,
    });
    ctx.sawAssets(page.items);
    return AssetPage.from(page, ctx.baseUrl);
  }

  @UseMiddleware(InputChecked)
  @Query(() => [TagCountType], {
    description: 'How many of the assets matching the filter carry each tag, most used first (GET /api/assets/tags/refine).',
  })
  async tagCounts(
    @Args(() => TagCountsArgs, { validateFn: validatedBy(plainTagCountsArgs) }) args: TagCountsArgs,
    @Ctx() ctx: GraphQLContext,
  ): Promise<TagCountType[]> {
    return (await this.service.tagFacets(ctx.principal, filterOf(args.filter), args.limit)).counts;
  }

  @UseMiddleware(InputChecked)
  @Query(() => Boolean, { description: 'Whether content with this hash is stored (by anyone): HEAD /api/assets/hash/{hash}.' })
  contentExists(@Arg('hash') hash: string): Promise<boolean> {
    return this.service.contentExists(hashParam(hash));
  }

  @FieldResolver(() => AssetType, { nullable: true, description: 'The preview asset (batched: no extra query per list item).' })
  preview(@Root() asset: AssetType, @Ctx() ctx: GraphQLContext): AssetType | null | Promise<AssetType | null> {
    if (!asset.previewId) return null;
    if (asset.previewId === asset.id) return asset;
    // On the same page: no loader round (and no promise) for it.
    const seen = ctx.seenAsset(asset.previewId);
    if (seen) return AssetType.from(seen, ctx.baseUrl);
    return ctx.assetLoader.load(asset.previewId).then(
      (found) => (found ? AssetType.from(found, ctx.baseUrl) : null),
      // ErrorInterceptor's translation, without type-graphql's async middleware chain around every item of a page.
      (err: unknown) => {
        throw toGraphQLError(err, ctx, 'Asset.preview');
      },
    );
  }
}

function filterOf(f: AssetFilter = {}): DomainFilter {
  const metadataFilter = f.metadataFilter ?? undefined;
  if (metadataFilter !== undefined) assertJsonObject(metadataFilter, 'metadataFilter', 'INVALID_BODY');
  const hash = f.hash ? parseHash(f.hash) : undefined;
  if (f.hash && !hash) throw new DomainError('INVALID_BODY', 'hash must look like blake3:<64 hex> or sha256:<64 hex>', { field: 'hash' });
  return {
    includeTags: cappedFilterTags(f.includeTags ?? [], 'includeTags'),
    excludeTags: cappedFilterTags(f.excludeTags ?? [], 'excludeTags'),
    anyTags: cappedFilterTags(f.anyTags ?? [], 'anyTags'),
    nameContains: f.nameContains || undefined,
    metadataFilter: metadataFilter as Record<string, unknown> | undefined,
    hash,
  };
}
