import type { Readable } from 'node:stream';
import { Arg, Args, Ctx, ID, Mutation, Resolver, UseMiddleware } from 'type-graphql';
import type { AssetService } from '../../domain/assets/asset.service';
import { validateCreateFields, validateFromHashFields, validateUpdateFields } from '../../domain/assets/validation';
import type { ContentService } from '../../domain/content/content.service';
import { isDomainError } from '../../domain/errors';
import { sanitizeFileName } from '../rest/multipart';
import { hashArg, idArg, validatorShape } from './args';
import type { GraphQLContext } from './context';
import { ErrorInterceptor } from './errors';
import { CreateAssetFromHashInput, SetAssetImmutableArgs, UpdateAssetArgs, UploadAssetArgs } from './inputs/asset.inputs';
import { AssetType, CreateAssetPayload, TagAddResultType, TagRemoveResultType } from './types/asset.type';

@Resolver()
@UseMiddleware(ErrorInterceptor)
export class AssetMutationResolver {
  constructor(
    private readonly assets: AssetService,
    private readonly content: ContentService,
  ) {}

  @Mutation(() => CreateAssetPayload, {
    description:
      'Upload a file (GraphQL multipart request; send the header Apollo-Require-Preflight: true). The same rules as ' +
      'POST /api/assets: dedupe per owner by content, idempotent id, MAX_UPLOAD_BYTES.',
  })
  async uploadAsset(@Args(() => UploadAssetArgs) { file, input }: UploadAssetArgs, @Ctx() ctx: GraphQLContext): Promise<CreateAssetPayload> {
    // The file part: its bytes are still arriving. (A rejected Upload maps to MISSING_FILE etc. in ErrorInterceptor.)
    const upload = await file;
    const stream = upload.createReadStream();
    let ingested;
    try {
      // The metadata arrives before the file, so bad metadata is refused before any byte is stored.
      const fields = validateCreateFields(validatorShape(input));
      ingested = await this.content.ingest(stream, { maxBytes: this.content.maxUploadBytes });
      return CreateAssetPayload.from(await this.assets.createFromIngested(ctx.principal, fields, ingested, { fileName: sanitizeFileName(upload.filename) }));
    } catch (err) {
      if (!ingested) abandon(stream, ctx, err);
      throw err;
    }
  }

  @Mutation(() => CreateAssetPayload, { description: 'An asset from stored content (POST /api/assets/from-hash).' })
  async createAssetFromHash(
    @Arg('input', () => CreateAssetFromHashInput) input: CreateAssetFromHashInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<CreateAssetPayload> {
    const hash = hashArg(input.hash, 'INVALID_BODY');
    const fields = validateFromHashFields(validatorShape({ ...input, hash: undefined }));
    return CreateAssetPayload.from(await this.assets.createFromStored(ctx.principal, fields, hash));
  }

  @Mutation(() => AssetType, { description: 'PUT /api/assets/{id}: at least one field; ASSET_IMMUTABLE for immutable assets.' })
  async updateAsset(@Args(() => UpdateAssetArgs) { id, input }: UpdateAssetArgs, @Ctx() ctx: GraphQLContext): Promise<AssetType> {
    const assetId = idArg(id);
    return AssetType.from(await this.assets.update(ctx.principal, assetId, validateUpdateFields(validatorShape(input))));
  }

  @Mutation(() => TagAddResultType, { description: 'POST /api/assets/{id}/tags: adds tags; concurrent edits never lose one.' })
  async addAssetTags(
    @Arg('id', () => ID) id: string,
    @Arg('tags', () => [String]) tags: string[],
    @Ctx() ctx: GraphQLContext,
  ): Promise<TagAddResultType> {
    return Object.assign(new TagAddResultType(), await this.assets.addTags(ctx.principal, idArg(id), tags));
  }

  @Mutation(() => TagRemoveResultType, { description: 'DELETE /api/assets/{id}/tags: removes tags.' })
  async removeAssetTags(
    @Arg('id', () => ID) id: string,
    @Arg('tags', () => [String]) tags: string[],
    @Ctx() ctx: GraphQLContext,
  ): Promise<TagRemoveResultType> {
    return Object.assign(new TagRemoveResultType(), await this.assets.removeTags(ctx.principal, idArg(id), tags));
  }

  @Mutation(() => Boolean, { description: 'DELETE /api/assets/{id}; true when deleted.' })
  async deleteAsset(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<boolean> {
    await this.assets.delete(ctx.principal, idArg(id));
    return true;
  }

  @Mutation(() => AssetType, { description: "Admin keys only (FORBIDDEN otherwise): set or clear isImmutable of any owner's asset." })
  async setAssetImmutable(@Args(() => SetAssetImmutableArgs) { id, immutable }: SetAssetImmutableArgs, @Ctx() ctx: GraphQLContext): Promise<AssetType> {
    return AssetType.from(await this.assets.setImmutable(ctx.principal, idArg(id), immutable));
  }
}

/** A refused upload: discard what is still arriving; past the size limit, close the connection instead of reading on. */
function abandon(stream: Readable, ctx: GraphQLContext, err: unknown): void {
  if (isDomainError(err) && err.code === 'PAYLOAD_TOO_LARGE') ctx.closeConnection();
  stream.on('error', () => undefined);
  stream.resume();
}
