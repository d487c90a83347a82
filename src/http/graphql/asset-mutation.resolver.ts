import type { Readable } from 'node:stream';
import { Arg, Args, Ctx, ID, Mutation, Resolver, UseMiddleware } from 'type-graphql';
import type { AssetService, ReceivedFile } from '../../domain/assets/asset.service';
import { validateCreateFields, validateFromHashFields, validateUpdateFields } from '../../domain/assets/validation';
import { isDomainError } from '../../domain/errors';
import { hashParam, idParam } from '../shared/ids';
import type { GraphQLContext } from './context';
import { InputChecked } from './input-check';
import {
  CreateAssetFromHashInput,
  SetAssetImmutableArgs,
  UpdateAssetArgs,
  UploadAssetArgs,
} from './inputs/asset.inputs';
import { AssetType, CreateAssetPayload, TagAddResultType, TagRemoveResultType } from './types/asset.type';
import { chunksOf, FILE_PART_BUFFER } from '../shared/body-stream';

@Resolver()
@UseMiddleware(InputChecked)
export class AssetMutationResolver {
  constructor(private readonly assets: AssetService) {}

  @Mutation(() => CreateAssetPayload, {
    description:
      'Upload a file (GraphQL multipart request; send the header Apollo-Require-Preflight: true). The same rules as ' +
      'POST /api/assets: dedupe per owner by content, idempotent id, MAX_UPLOAD_BYTES.',
  })
  async uploadAsset(
    @Args(() => UploadAssetArgs) { file, input }: UploadAssetArgs,
    @Ctx() ctx: GraphQLContext,
  ): Promise<CreateAssetPayload> {
    // The file part: its bytes are still arriving. (A rejected Upload maps to MISSING_FILE etc. in InputChecked,
    // through toGraphQLError.)
    const upload = await file;
    const stream = upload.createReadStream();
    let received: ReceivedFile | undefined;
    try {
      // The metadata arrives before the file, so bad metadata is refused before any byte is stored.
      validateCreateFields(input ?? {});
      received = await this.assets.receiveFile(chunksOf(stream, FILE_PART_BUFFER));
      return CreateAssetPayload.from(
        await this.assets.createFromUpload(ctx.principal, input ?? {}, { file: received, fileName: upload.filename }),
        ctx.links,
      );
    } catch (err) {
      if (!received) abandon(stream, ctx, err);
      throw err;
    }
  }

  @Mutation(() => CreateAssetPayload, { description: 'An asset from stored content (POST /api/assets/from-hash).' })
  async createAssetFromHash(
    @Arg('input', () => CreateAssetFromHashInput) input: CreateAssetFromHashInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<CreateAssetPayload> {
    const hash = hashParam(input.hash, 'INVALID_BODY');
    const fields = validateFromHashFields(input);
    return CreateAssetPayload.from(await this.assets.createFromStored(ctx.principal, fields, hash), ctx.links);
  }

  @Mutation(() => AssetType, {
    description: 'PUT /api/assets/{id}: at least one field; ASSET_IMMUTABLE for immutable assets.',
  })
  async updateAsset(
    @Args(() => UpdateAssetArgs) { id, input }: UpdateAssetArgs,
    @Ctx() ctx: GraphQLContext,
  ): Promise<AssetType> {
    const assetId = idParam(id);
    return AssetType.from(await this.assets.update(ctx.principal, assetId, validateUpdateFields(input)), ctx.links);
  }

  @Mutation(() => TagAddResultType, {
    description: 'POST /api/assets/{id}/tags: adds tags; concurrent edits never lose one.',
  })
  async addAssetTags(
    @Arg('id', () => ID) id: string,
    @Arg('tags', () => [String]) tags: string[],
    @Ctx() ctx: GraphQLContext,
  ): Promise<TagAddResultType> {
    return Object.assign(new TagAddResultType(), await this.assets.addTags(ctx.principal, idParam(id), tags));
  }

  @Mutation(() => [String], {
    description:
      "POST /api/assets/{id}/paths: records tree paths of the asset's content (metadata.paths); answers them all.",
  })
  async addAssetPaths(
    @Arg('id', () => ID) id: string,
    @Arg('paths', () => [String]) paths: string[],
    @Ctx() ctx: GraphQLContext,
  ): Promise<string[]> {
    return this.assets.addPaths(ctx.principal, idParam(id), paths);
  }

  @Mutation(() => TagRemoveResultType, { description: 'DELETE /api/assets/{id}/tags: removes tags.' })
  async removeAssetTags(
    @Arg('id', () => ID) id: string,
    @Arg('tags', () => [String]) tags: string[],
    @Ctx() ctx: GraphQLContext,
  ): Promise<TagRemoveResultType> {
    return Object.assign(new TagRemoveResultType(), await this.assets.removeTags(ctx.principal, idParam(id), tags));
  }

  @Mutation(() => Boolean, { description: 'DELETE /api/assets/{id}; true when deleted.' })
  async deleteAsset(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<boolean> {
    await this.assets.delete(ctx.principal, idParam(id));
    return true;
  }

  @Mutation(() => AssetType, {
    description: "Admin keys only (FORBIDDEN otherwise): set or clear isImmutable of any owner's asset.",
  })
  async setAssetImmutable(
    @Args(() => SetAssetImmutableArgs) { id, immutable }: SetAssetImmutableArgs,
    @Ctx() ctx: GraphQLContext,
  ): Promise<AssetType> {
    return AssetType.from(await this.assets.setImmutable(ctx.principal, idParam(id), immutable), ctx.links);
  }
}

/**
 * A refused upload: discard what is still arriving; past the size limit, close the connection instead of reading on.
 */
function abandon(stream: Readable, ctx: GraphQLContext, err: unknown): void {
  if (isDomainError(err) && err.code === 'PAYLOAD_TOO_LARGE') ctx.closeConnection();
  stream.on('error', () => undefined);
  stream.resume();
}
