import { Field, ID, Int, ObjectType } from 'type-graphql';
import {
  assetHashOf,
  jobOutputOf,
  loaderPathOf,
  type Asset,
  type Links,
  type AssetPage as DomainAssetPage,
  type CreateResult,
  type Page,
} from '../../../domain/assets/asset.types';
import { downloadUrlOf, previewUrlOf, shortUrlOf, thumbnailUrlOf } from '../../shared/asset-urls';
import { JSONScalar, SafeIntScalar } from '../scalars';

@ObjectType('Asset', { simpleResolvers: true, description: 'An asset: the REST asset, with camelCase field names.' })
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

  @Field({ description: 'The same value as assetHash (the name newer Comfy clients read).' })
  hash!: string;

  @Field({ description: 'The same value as name.' })
  displayName!: string;

  /** A thumbnail of the content exists (`thumbnailUrl`). */
  hasThumbnail!: boolean;

  /** The base of the absolute URLs below (PUBLIC_URL or the request's origin) and the grant media URLs carry. */
  links!: Links;

  @Field(() => ID, { nullable: true })
  previewId!: string | null;

  /** The nominated preview asset was deleted (`previewUrl` is then null). */
  previewRemoved!: boolean;

  @Field(() => ID, { nullable: true })
  promptId!: string | null;

  @Field(() => ID, { nullable: true, description: 'The same value as promptId.' })
  jobId!: string | null;

  @Field(() => String, {
    nullable: true,
    description:
      'For a model (tagged `models` or `model_type:<folder>`): its name when that is a safe relative path (what a ' +
      'ComfyUI loader node takes).',
  })
  loaderPath!: string | null;

  @Field(() => JSONScalar, {
    nullable: true,
    description:
      'Derived by the service at ingest: filename, content_length, format, width/height, safetensors, base_model, trained_words, source_url.',
  })
  metadata!: Record<string, unknown> | null;

  @Field()
  createdAt!: Date;

  @Field()
  updatedAt!: Date;

  @Field()
  lastAccessTime!: Date;

  @Field()
  isImmutable!: boolean;

  /*
   * The two URLs are plain fields of the object (getters, read by the default resolver only when a query asks for
   * them), not type-graphql field resolvers: those ran per item of a page through getParams and convertToType
   * (docs/benchmarks-history.md, "Third round: GraphQL, CPU per request").
   */
  @Field(() => String, {
    nullable: true,
    description:
      'Absolute URL of the preview content: the nominated preview asset (`previewId`), else the asset itself when ' +
      'it is an image, video, audio or plain text; null for other types and when the nominated preview was deleted. Carries a read grant (`?access=`, valid at least an hour) so an ' +
      '`<img src>` loads it without the key.',
  })
  get previewUrl(): string | null {
    return previewUrlOf(this, this.links) ?? null;
  }

  @Field(() => String, {
    nullable: true,
    description:
      'Absolute URL of a small WebP of the asset (`<base>/api/assets/{id}/thumbnail`, longest side 512 px), once it ' +
      'exists, with a read grant as previewUrl.',
  })
  get thumbnailUrl(): string | null {
    return thumbnailUrlOf(this, this.links) ?? null;
  }

  @Field(() => String, {
    description:
      'A durable link to the content (`<base>/api/s/{id}`): with the key, 302 to a freshly signed content URL. ' +
      'Safe to store.',
  })
  get shortUrl(): string {
    return shortUrlOf(this, this.links);
  }

  @Field(() => String, {
    description:
      'Absolute URL of the content as a download (`<base>/api/assets/{id}/content?disposition=attachment`), with a ' +
      'read grant as previewUrl: an `<a href>` saves it, streamed to disk by the browser (ranges work), no key ' +
      'needed. Valid at least an hour; without media grants (MEDIA_URL_GRANTS=false) it needs the key.',
  })
  get downloadUrl(): string {
    return downloadUrlOf(this, this.links);
  }

  /**
   * One object per asset (pages map 50–500 of them per request): the fields set on the instance, no literal copied
   * in. `links`: the context's, for the URL fields.
   */
  static from(a: Asset, links: Links): AssetType {
    const t = new AssetType();
    const hash = assetHashOf(a);
    t.id = a.id;
    t.name = a.name;
    t.size = a.size;
    t.assetHash = hash;
    t.hash = hash;
    t.displayName = a.name;
    t.mimeType = a.mimeType;
    t.tags = a.tags;
    t.userMetadata = a.userMetadata;
    t.hasThumbnail = a.hasThumbnail;
    t.previewId = a.previewId;
    t.previewRemoved = a.previewRemoved;
    t.promptId = a.promptId;
    t.jobId = a.promptId;
    t.loaderPath = loaderPathOf(a) ?? null;
    t.metadata = a.metadata;
    t.createdAt = a.createdAt;
    t.updatedAt = a.updatedAt;
    t.lastAccessTime = a.lastAccessTime;
    t.isImmutable = a.isImmutable;
    t.links = links;
    return t;
  }
}

@ObjectType('CreateAssetPayload', { simpleResolvers: true, description: 'What the create mutations answer.' })
export class CreateAssetPayload {
  @Field(() => AssetType)
  asset!: AssetType;

  @Field({
    description: 'true when a new asset was made; false when an existing one (same id or same content) is returned.',
  })
  createdNew!: boolean;

  static from(r: CreateResult, links: Links): CreateAssetPayload {
    return Object.assign(new CreateAssetPayload(), { asset: AssetType.from(r.asset, links), createdNew: r.created });
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

  @Field({ description: 'true when total is a lower bound (the count stops above 10,000 matches).' })
  totalIsLowerBound!: boolean;

  @Field(() => String, {
    nullable: true,
    description: 'Pass as `after` for the next page; null on the last page (and for lastAccessTime sorts).',
  })
  nextCursor!: string | null;

  static from(p: DomainAssetPage, links: Links): AssetPage {
    return Object.assign(new AssetPage(), {
      items: p.items.map((a) => AssetType.from(a, links)),
      total: p.total,
      hasMore: p.hasMore,
      totalIsLowerBound: p.totalIsLowerBound,
      nextCursor: p.nextCursor ?? null,
    });
  }
}

@ObjectType('TagAddResult', { description: 'POST /api/assets/{id}/tags.' })
export class TagAddResultType {
  @Field(() => [String], { description: 'Tags that were new, sorted.' })
  added!: string[];

  @Field(() => [String], { description: 'Tags the asset already had, sorted.' })
  alreadyPresent!: string[];

  @Field(() => [String], { description: "The asset's tags now, in its order." })
  totalTags!: string[];
}

@ObjectType('TagRemoveResult', { description: 'DELETE /api/assets/{id}/tags.' })
export class TagRemoveResultType {
  @Field(() => [String], { description: 'Tags that were removed, sorted.' })
  removed!: string[];

  @Field(() => [String], { description: 'Tags the asset did not have, sorted.' })
  notPresent!: string[];

  @Field(() => [String], { description: "The asset's tags now, in its order." })
  totalTags!: string[];

  @Field(() => [String], {
    description:
      'System tags the request named and that were kept (REST `protected`): always empty, since naming one (`missing`) is SYSTEM_TAG_FORBIDDEN.',
  })
  protected!: string[];
}

@ObjectType('RemoteIssue')
export class RemoteIssueType {
  @Field()
  code!: string;

  @Field()
  message!: string;

  @Field()
  field!: string;
}

@ObjectType('RemoteValidation')
export class RemoteValidationType {
  @Field()
  isValid!: boolean;

  @Field(() => [RemoteIssueType])
  errors!: RemoteIssueType[];

  @Field(() => [RemoteIssueType])
  warnings!: RemoteIssueType[];
}

@ObjectType('RemoteMetadata', { description: 'GET /api/assets/remote-metadata: what a download of a URL would bring.' })
export class RemoteMetadataType {
  @Field(() => SafeIntScalar, { description: '-1 when unknown.' })
  contentLength!: number;

  @Field()
  finalUrl!: string;

  @Field(() => String, { nullable: true })
  contentType?: string;

  @Field(() => String, { nullable: true })
  filename?: string;

  @Field(() => String, { nullable: true })
  name?: string;

  @Field(() => [String], {
    nullable: true,
    description: '["models", "model_type:<folder>", <folder>] from the model type (a ComfyUI model folder).',
  })
  tags?: string[];

  @Field(() => String, { nullable: true, description: 'A data: URL of at most 512 KiB.' })
  previewImage?: string;

  @Field(() => RemoteValidationType)
  validation!: RemoteValidationType;
}

@ObjectType('JobOutputAsset', {
  simpleResolvers: true,
  description: "One of a job's outputs (Comfy Cloud's JobOutputAsset; GET /api/jobs/{job_id}/assets).",
})
export class JobOutputAssetType {
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field({ description: '`blake3:<64 hex>`' })
  hash!: string;

  @Field()
  mimeType!: string;

  @Field(() => SafeIntScalar)
  size!: number;

  @Field()
  createdAt!: Date;

  @Field(() => String, { nullable: true, description: 'As Asset.previewUrl.' })
  previewUrl!: string | null;

  @Field(() => String, { nullable: true, description: "userMetadata's node_id, when the uploader gave it." })
  nodeId!: string | null;

  @Field(() => String, { nullable: true, description: "userMetadata's output_key, when the uploader gave it." })
  outputKey!: string | null;

  @Field(() => Int, { nullable: true, description: "userMetadata's output_index, when the uploader gave it." })
  outputIndex!: number | null;

  static from(a: Asset, links: Links): JobOutputAssetType {
    return Object.assign(new JobOutputAssetType(), {
      id: a.id,
      name: a.name,
      hash: assetHashOf(a),
      mimeType: a.mimeType,
      size: a.size,
      createdAt: a.createdAt,
      previewUrl: previewUrlOf(a, links) ?? null,
      ...jobOutputOf(a),
    });
  }
}

@ObjectType('JobAssetPage', { simpleResolvers: true })
export class JobAssetPage {
  @Field(() => [JobOutputAssetType])
  items!: JobOutputAssetType[];

  @Field(() => Int)
  total!: number;

  @Field()
  hasMore!: boolean;

  static from(p: Page<Asset>, links: Links): JobAssetPage {
    const items = p.items.map((a) => JobOutputAssetType.from(a, links));
    return Object.assign(new JobAssetPage(), { items, total: p.total, hasMore: p.hasMore });
  }
}
