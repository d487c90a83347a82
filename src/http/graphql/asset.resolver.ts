import { Arg, Args, Ctx, FieldResolver, ID, Query, Resolver, Root, UseMiddleware } from 'type-graphql';
import type { AssetService } from '../../domain/assets/asset.service';
import { previewTargetOf, type AssetFilter as DomainFilter } from '../../domain/assets/asset.types';
import { resolveTagFilter } from '../../domain/assets/validation';
import { parseHash } from '../../domain/content/hashing';
import { DomainError } from '../../domain/errors';
import { assertJsonObject } from '../../domain/input';
import { hashParam, idParam } from '../shared/ids';
import type { GraphQLContext } from './context';
import { toGraphQLError } from './errors';
import { InputChecked } from './input-check';
import { AssetsArgs, BaseModelsArgs, JobAssetsArgs, TagCountsArgs, type AssetFilter } from './inputs/asset.inputs';
import { BaseModelCountType, TagCountType } from './types/tag.type';
import { AssetPage, AssetType, JobAssetPage } from './types/asset.type';

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
    return AssetType.from(await this.service.get(ctx.principal, idParam(id)), ctx.links);
  }

  @UseMiddleware(InputChecked)
  @Query(() => AssetPage, { description: 'Your assets, filtered and paginated (GET /api/assets).' })
  async assets(@Args(() => AssetsArgs) args: AssetsArgs, @Ctx() ctx: GraphQLContext): Promise<AssetPage> {
    const page = await this.service.list(ctx.principal, {
      ...filterOf(args.filter),
      limit: args.limit,
      offset: args.offset,
      sort: args.sort,
      order: args.order,
      after: args.after || undefined,
    });
    ctx.sawAssets(page.items);
    return AssetPage.from(page, ctx.links);
  }

  @UseMiddleware(InputChecked)
  @Query(() => JobAssetPage, {
    description: "A job's outputs among your assets, oldest first (GET /api/jobs/{job_id}/assets); unknown job: none.",
  })
  async jobAssets(@Args(() => JobAssetsArgs) args: JobAssetsArgs, @Ctx() ctx: GraphQLContext): Promise<JobAssetPage> {
    const page = await this.service.jobAssets(ctx.principal, idParam(args.jobId, 'jobId'), args.limit, args.offset);
    return JobAssetPage.from(page, ctx.links);
  }

  @UseMiddleware(InputChecked)
  @Query(() => [TagCountType], {
    description:
      'How many of the assets matching the filter carry each tag, most used first (GET /api/assets/tags/refine).',
  })
  async tagCounts(@Args(() => TagCountsArgs) args: TagCountsArgs, @Ctx() ctx: GraphQLContext): Promise<TagCountType[]> {
    return (await this.service.tagFacets(ctx.principal, filterOf(args.filter), args.limit)).counts;
  }

  @UseMiddleware(InputChecked)
  @Query(() => [BaseModelCountType], {
    description:
      'The base models your assets name (metadata.base_model, from a safetensors header), most used first: the values of AssetFilter.baseModel.',
  })
  async baseModels(
    @Args(() => BaseModelsArgs) args: BaseModelsArgs,
    @Ctx() ctx: GraphQLContext,
  ): Promise<BaseModelCountType[]> {
    return this.service.baseModels(ctx.principal, args.limit);
  }

  @UseMiddleware(InputChecked)
  @Query(() => Boolean, {
    description: 'Whether content with this hash is stored (by anyone): HEAD /api/assets/hash/{hash}.',
  })
  contentExists(@Arg('hash') hash: string): Promise<boolean> {
    return this.service.contentExists(hashParam(hash));
  }

  @FieldResolver(() => AssetType, {
    nullable: true,
    description: 'The asset whose content previewUrl points to (itself for media with no nominated preview; batched).',
  })
  preview(@Root() asset: AssetType, @Ctx() ctx: GraphQLContext): AssetType | null | Promise<AssetType | null> {
    const target = previewTargetOf(asset);
    if (target === undefined) return null;
    if (target === asset.id) return asset;
    // On the same page: no loader round (and no promise) for it.
    const seen = ctx.seenAsset(target);
    if (seen) return AssetType.from(seen, ctx.links);
    return ctx.assetLoader.load(target).then(
      (found) => (found ? AssetType.from(found, ctx.links) : null),
      // InputChecked's translation, without type-graphql's async middleware chain around every item of a page.
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
  if (f.hash && !hash)
    throw new DomainError('INVALID_BODY', 'hash must look like blake3:<64 hex> or sha256:<64 hex>', { field: 'hash' });
  return {
    // REST's rules and error details, under GraphQL's names (anyTags is the older name of tagsAny).
    ...resolveTagFilter({
      all: [param('includeTags', f.includeTags, false), param('tagsAll', f.tagsAll, true)],
      any: [param('anyTags', f.anyTags, false), param('tagsAny', f.tagsAny, true)],
      none: [param('excludeTags', f.excludeTags, false), param('tagsNone', f.tagsNone, true)],
    }),
    nameContains: f.nameContains || undefined,
    metadataFilter: metadataFilter as Record<string, unknown> | undefined,
    hash,
    ...(f.kinds?.length ? { kinds: [...new Set(f.kinds)] } : {}),
    ...(f.createdAfter ? { createdAfter: f.createdAfter } : {}),
    ...(f.createdBefore ? { createdBefore: f.createdBefore } : {}),
    ...(f.baseModel ? { baseModel: f.baseModel } : {}),
  };
}

const param = (name: string, values: string[] | null | undefined, isNew: boolean) => ({
  name,
  values: values ?? undefined,
  isNew,
});
