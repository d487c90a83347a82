import { Field, ID, Int, ObjectType } from 'type-graphql';
import { assetHashOf, previewUrlOf, type Asset, type CreateResult, type Page } from '../../../domain/assets/asset.types';
import { JSONScalar, SafeIntScalar } from '../scalars';

@ObjectType('Asset', { simpleResolvers: true, description: 'An asset: the REST asset of contract section 3, with camelCase field names.' })
export class AssetType {
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field(() => SafeIntScalar, { description: 'Size of the content in bytes.' })
  size!: number;

  @Field({ description: '`blake3:<64 hex>`' })
  assetHash!: string;

  @Field()
  mimeType!: string;

  @Field(() => [String])
  tags!: string[];

  @Field(() => JSONScalar, { description: 'A JSON object; `{}` when none was given.' })
  userMetadata!: Record<string, unknown>;

  @Field(() => String, { nullable: true, description: 'URL of the preview asset content (`/api/assets/{previewId}/content`).' })
  previewUrl!: string | null;

  @Field(() => ID, { nullable: true })
  previewId!: string | null;

  @Field(() => ID, { nullable: true })
  promptId!: string | null;

  @Field()
  createdAt!: Date;

  @Field()
  updatedAt!: Date;

  @Field()
  lastAccessTime!: Date;

  @Field()
  isImmutable!: boolean;

  static from(a: Asset): AssetType {
    return Object.assign(new AssetType(), {
      id: a.id,
      name: a.name,
      size: a.size,
      assetHash: assetHashOf(a),
      mimeType: a.mimeType,
      tags: a.tags,
      userMetadata: a.userMetadata,
      previewUrl: previewUrlOf(a),
      previewId: a.previewId,
      promptId: a.promptId,
      createdAt: a.createdAt,
      updatedAt: a.updatedAt,
      lastAccessTime: a.lastAccessTime,
      isImmutable: a.isImmutable,
    });
  }
}

@ObjectType('CreateAssetPayload', { simpleResolvers: true, description: 'What the create mutations answer.' })
export class CreateAssetPayload {
  @Field(() => AssetType)
  asset!: AssetType;

  @Field({ description: 'true when a new asset was made; false when an existing one (same id or same content) is returned.' })
  createdNew!: boolean;

  static from(r: CreateResult): CreateAssetPayload {
    return Object.assign(new CreateAssetPayload(), { asset: AssetType.from(r.asset), createdNew: r.created });
  }
}

@ObjectType('AssetPage', { simpleResolvers: true })
export class AssetPage {
  @Field(() => [AssetType])
  items!: AssetType[];

  @Field(() => Int)
  total!: number;

  @Field()
  hasMore!: boolean;

  static from(p: Page<Asset>): AssetPage {
    return Object.assign(new AssetPage(), { items: p.items.map(AssetType.from), total: p.total, hasMore: p.hasMore });
  }
}
