import { GraphQLUpload, type FileUpload } from 'graphql-upload-minimal';
import { ArgsType, Extensions, Field, ID, InputType, Int } from 'type-graphql';
import { NULL_IS_A_VALUE } from '../input-check';
import { JSONScalar } from '../scalars';
import { AssetKindEnum, AssetSortEnum, SortOrderEnum, TagOrderEnum } from '../types/enums';

/*
 * The GraphQL types of the asset inputs. Their rules are the schemas of http/schema/graphql.ts (the field schemas
 * REST's bodies and openapi.yaml use too); the domain's validation.ts then applies what holds once normalised.
 */

/** A nullable list of tags of a filter. */
const TagList = (description: string) => Field(() => [String], { nullable: true, description });

@InputType({
  description:
    'Filters of `assets` and `tagCounts`, as REST and ComfyUI answer them: tags match exactly (trimmed, case ' +
    'kept); an empty list counts as absent; tagsAll/tagsNone are also taken as includeTags/excludeTags (not both ' +
    'for one list); at most 100 tags per list; the same tag in the all-list and the none-list while a tags* name ' +
    'is used is INVALID_TAG_FILTER (else an empty page).',
})
export class AssetFilter {
  @TagList('Assets carrying every one of these tags.')
  includeTags?: string[];

  @TagList('Assets carrying none of these tags.')
  excludeTags?: string[];

  @TagList('Assets carrying every one of these tags (ComfyUI `tags_all`).')
  tagsAll?: string[];

  @TagList('Assets carrying at least one of these tags (ComfyUI `tags_any`).')
  tagsAny?: string[];

  @TagList('Assets carrying none of these tags (ComfyUI `tags_none`); it wins.')
  tagsNone?: string[];

  @Field(() => String, { nullable: true, description: 'Case-insensitive substring of the name.' })
  nameContains?: string;

  @TagList('Assets carrying at least one of these tags.')
  anyTags?: string[];

  @Field(() => String, {
    nullable: true,
    description: 'Assets of this content: `blake3:<64 hex>` or `sha256:<64 hex>`.',
  })
  hash?: string;

  @Field(() => JSONScalar, {
    nullable: true,
    description:
      'A JSON object on userMetadata (ComfyUI semantics): keys ANDed; a scalar matches an equal value or an equal array element; ' +
      'a list is any-of; null matches a missing key or null; an object matches an equal object or array element.',
  })
  metadataFilter?: unknown;

  @Field(() => [AssetKindEnum], { nullable: true, description: 'Assets of at least one of these kinds.' })
  kinds?: AssetKindEnum[];

  @Field(() => Date, { nullable: true, description: 'Assets created after this time.' })
  createdAfter?: Date;

  @Field(() => Date, { nullable: true, description: 'Assets created before this time.' })
  createdBefore?: Date;

  @Field(() => String, {
    nullable: true,
    description: 'Assets whose derived metadata names this base model (metadata.base_model; see baseModels).',
  })
  baseModel?: string;
}

/** `limit` (default 20, 1–500) of a page of assets. */
const AssetPageLimit = () => Field(() => Int, { defaultValue: 20, description: '1–500' });
const Offset = () => Field(() => Int, { defaultValue: 0 });

@ArgsType()
export class AssetsArgs {
  @Field(() => AssetFilter, { nullable: true })
  filter?: AssetFilter;

  @AssetPageLimit()
  limit!: number;

  @Offset()
  offset!: number;

  @Field(() => AssetSortEnum, { defaultValue: AssetSortEnum.created_at })
  sort!: AssetSortEnum;

  @Field(() => SortOrderEnum, { defaultValue: SortOrderEnum.desc })
  order!: SortOrderEnum;

  @Field(() => String, {
    nullable: true,
    description: 'nextCursor of an earlier page with the same sort and order; offset is then ignored.',
  })
  after?: string;
}

@ArgsType()
export class JobAssetsArgs {
  @Field(() => ID, { description: "The job's id (an asset's promptId / jobId)." })
  jobId!: string;

  @AssetPageLimit()
  limit!: number;

  @Offset()
  offset!: number;
}

@ArgsType()
export class TagCountsArgs {
  @Field(() => AssetFilter, { nullable: true })
  filter?: AssetFilter;

  @Field(() => Int, { defaultValue: 100, description: '1–1000' })
  limit!: number;
}

@ArgsType()
export class BaseModelsArgs {
  @Field(() => Int, { defaultValue: 50, description: '1–500' })
  limit!: number;
}

@ArgsType()
export class TagsArgs {
  @Field(() => String, { nullable: true, description: 'Tags starting with this text.' })
  prefix?: string;

  @Field(() => Int, { defaultValue: 100, description: '1–1000' })
  limit!: number;

  @Offset()
  offset!: number;

  @Field(() => TagOrderEnum, { defaultValue: TagOrderEnum.count_desc })
  order!: TagOrderEnum;
}

/** The optional fields every create input has (upload and from-hash). */
@InputType()
class AssetMetadataInput {
  @Field(() => String, { nullable: true })
  name?: string;

  @Field(() => String, { nullable: true })
  mimeType?: string;

  @Field(() => JSONScalar, { nullable: true })
  userMetadata?: unknown;

  @Field(() => ID, { nullable: true })
  previewId?: string;

  @Field(() => ID, { nullable: true })
  promptId?: string;
}

@InputType({ description: 'Optional metadata of an upload; the name defaults to the file name.' })
export class UploadAssetInput extends AssetMetadataInput {
  @Field(() => ID, { nullable: true, description: 'Client-chosen id: uploading again with it returns the same asset.' })
  id?: string;

  @Field(() => [String], { nullable: true })
  tags?: string[];
}

@InputType({
  description:
    'An asset from content already stored, named by its hash. The name defaults to a name you gave the content ' +
    "before, else a public download's file name, else the first 16 hex of its BLAKE3.",
})
export class CreateAssetFromHashInput extends AssetMetadataInput {
  @Field({ description: '`blake3:<64 hex>` or `sha256:<64 hex>`' })
  hash!: string;

  @Field(() => [String], { description: 'At least one tag.' })
  tags!: string[];
}

// Its nulls reach the domain, as the PUT body's: previewId null clears the preview, a null name or tags is refused.
@InputType({
  description: 'At least one field; tags and userMetadata replace the old values; previewId: null clears the preview.',
})
@Extensions(NULL_IS_A_VALUE)
export class UpdateAssetInput {
  @Field(() => String, { nullable: true })
  name?: string | null;

  @Field(() => [String], { nullable: true })
  tags?: string[] | null;

  @Field(() => String, { nullable: true })
  mimeType?: string | null;

  @Field(() => ID, { nullable: true })
  previewId?: string | null;

  @Field(() => JSONScalar, { nullable: true })
  userMetadata?: unknown;
}

// Multi-argument mutations take an ArgsType so the schema lists the arguments in the contract's order.

@ArgsType()
export class UploadAssetArgs {
  @Field(() => GraphQLUpload, { description: 'The file part of the multipart request.' })
  file!: Promise<FileUpload>;

  @Field(() => UploadAssetInput, { nullable: true })
  input?: UploadAssetInput;
}

@ArgsType()
export class UpdateAssetArgs {
  @Field(() => ID)
  id!: string;

  @Field(() => UpdateAssetInput)
  input!: UpdateAssetInput;
}

@ArgsType()
export class SetAssetImmutableArgs {
  @Field(() => ID)
  id!: string;

  @Field()
  immutable!: boolean;
}
