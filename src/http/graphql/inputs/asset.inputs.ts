import { ArrayMaxSize, ArrayMinSize, IsUUID, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { GraphQLUpload, type FileUpload } from 'graphql-upload-minimal';
import { ArgsType, Extensions, Field, ID, InputType, Int } from 'type-graphql';
import { MAX_CURSOR_LENGTH } from '../../../domain/assets/cursor';
import { MAX_RAW_FILTER_TAGS } from '../../../domain/assets/validation';
import { NULL_IS_A_VALUE } from '../input-check';
import { JSONScalar } from '../scalars';
import { AssetSortEnum, SortOrderEnum, TagOrderEnum } from '../types/enums';

/*
 * class-validator checks shape and coarse size bounds only (a guard for the transport). The exact rules (tag
 * normalisation, the 512/64/128/256 KiB limits, MIME syntax) are the domain's validation.ts, shared with REST, so
 * both APIs accept and reject exactly the same values.
 */
const MAX_TEXT = 4096;
const MAX_LIST = 1024;

@InputType({
  description:
    'Filters of `assets` and `tagCounts`, as REST and ComfyUI answer them: tags match exactly (trimmed, case ' +
    'kept); an empty list counts as absent; tagsAll/tagsNone are also taken as includeTags/excludeTags (not both ' +
    'for one list); at most 100 tags per list; the same tag in the all-list and the none-list while a tags* name ' +
    'is used is INVALID_TAG_FILTER (else an empty page).',
})
export class AssetFilter {
  @Field(() => [String], { nullable: true, description: 'Assets carrying every one of these tags.' })
  @ArrayMaxSize(MAX_RAW_FILTER_TAGS)
  @MaxLength(MAX_TEXT, { each: true })
  includeTags?: string[];

  @Field(() => [String], { nullable: true, description: 'Assets carrying none of these tags.' })
  @ArrayMaxSize(MAX_RAW_FILTER_TAGS)
  @MaxLength(MAX_TEXT, { each: true })
  excludeTags?: string[];

  @Field(() => [String], {
    nullable: true,
    description: 'Assets carrying every one of these tags (ComfyUI `tags_all`).',
  })
  @ArrayMaxSize(MAX_RAW_FILTER_TAGS)
  @MaxLength(MAX_TEXT, { each: true })
  tagsAll?: string[];

  @Field(() => [String], {
    nullable: true,
    description: 'Assets carrying at least one of these tags (ComfyUI `tags_any`).',
  })
  @ArrayMaxSize(MAX_RAW_FILTER_TAGS)
  @MaxLength(MAX_TEXT, { each: true })
  tagsAny?: string[];

  @Field(() => [String], {
    nullable: true,
    description: 'Assets carrying none of these tags (ComfyUI `tags_none`); it wins.',
  })
  @ArrayMaxSize(MAX_RAW_FILTER_TAGS)
  @MaxLength(MAX_TEXT, { each: true })
  tagsNone?: string[];

  @Field(() => String, { nullable: true, description: 'Case-insensitive substring of the name.' })
  @MaxLength(1024)
  nameContains?: string;

  @Field(() => [String], { nullable: true, description: 'Assets carrying at least one of these tags.' })
  @ArrayMaxSize(MAX_RAW_FILTER_TAGS)
  @MaxLength(MAX_TEXT, { each: true })
  anyTags?: string[];

  @Field(() => String, {
    nullable: true,
    description: 'Assets of this content: `blake3:<64 hex>` or `sha256:<64 hex>`.',
  })
  @MaxLength(80)
  hash?: string;

  @Field(() => JSONScalar, {
    nullable: true,
    description:
      'A JSON object on userMetadata (ComfyUI semantics): keys ANDed; a scalar matches an equal value or an equal array element; ' +
      'a list is any-of; null matches a missing key or null; an object matches an equal object or array element.',
  })
  metadataFilter?: unknown;
}

@ArgsType()
export class AssetsArgs {
  @Field(() => AssetFilter, { nullable: true })
  @ValidateNested()
  filter?: AssetFilter;

  @Field(() => Int, { defaultValue: 20, description: '1–500' })
  @Min(1)
  @Max(500)
  limit!: number;

  @Field(() => Int, { defaultValue: 0 })
  @Min(0)
  @Max(1_000_000_000)
  offset!: number;

  @Field(() => AssetSortEnum, { defaultValue: AssetSortEnum.created_at })
  sort!: AssetSortEnum;

  @Field(() => SortOrderEnum, { defaultValue: SortOrderEnum.desc })
  order!: SortOrderEnum;

  @Field(() => String, {
    nullable: true,
    description: 'nextCursor of an earlier page with the same sort and order; offset is then ignored.',
  })
  @MaxLength(MAX_CURSOR_LENGTH)
  after?: string;
}

@ArgsType()
export class JobAssetsArgs {
  @Field(() => ID, { description: "The job's id (an asset's promptId / jobId)." })
  jobId!: string;

  @Field(() => Int, { defaultValue: 20, description: '1–500' })
  @Min(1)
  @Max(500)
  limit!: number;

  @Field(() => Int, { defaultValue: 0 })
  @Min(0)
  @Max(1_000_000_000)
  offset!: number;
}

@ArgsType()
export class TagCountsArgs {
  @Field(() => AssetFilter, { nullable: true })
  @ValidateNested()
  filter?: AssetFilter;

  @Field(() => Int, { defaultValue: 100, description: '1–1000' })
  @Min(1)
  @Max(1000)
  limit!: number;
}

@ArgsType()
export class TagsArgs {
  @Field(() => String, { nullable: true, description: 'Tags starting with this text.' })
  @MaxLength(1024)
  prefix?: string;

  @Field(() => Int, { defaultValue: 100, description: '1–1000' })
  @Min(1)
  @Max(1000)
  limit!: number;

  @Field(() => Int, { defaultValue: 0 })
  @Min(0)
  @Max(1_000_000_000)
  offset!: number;

  @Field(() => TagOrderEnum, { defaultValue: TagOrderEnum.count_desc })
  order!: TagOrderEnum;
}

@InputType({ description: 'Optional metadata of an upload; the name defaults to the file name.' })
export class UploadAssetInput {
  @Field(() => ID, { nullable: true, description: 'Client-chosen id: uploading again with it returns the same asset.' })
  @IsUUID('all')
  id?: string;

  @Field(() => String, { nullable: true })
  @MaxLength(MAX_TEXT)
  name?: string;

  @Field(() => String, { nullable: true })
  @MaxLength(MAX_TEXT)
  mimeType?: string;

  @Field(() => [String], { nullable: true })
  @ArrayMaxSize(MAX_LIST)
  @MaxLength(MAX_TEXT, { each: true })
  tags?: string[];

  @Field(() => JSONScalar, { nullable: true })
  userMetadata?: unknown;

  @Field(() => ID, { nullable: true })
  @IsUUID('all')
  previewId?: string;

  @Field(() => ID, { nullable: true })
  @IsUUID('all')
  promptId?: string;
}

@InputType({ description: 'An asset from content already stored, named by its hash.' })
export class CreateAssetFromHashInput {
  @Field({ description: '`blake3:<64 hex>` or `sha256:<64 hex>`' })
  @MaxLength(80)
  hash!: string;

  @Field(() => [String], { description: 'At least one tag.' })
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_LIST)
  @MaxLength(MAX_TEXT, { each: true })
  tags!: string[];

  @Field(() => String, {
    nullable: true,
    description:
      "Defaults to a name you gave the content before, else a public download's file name, else the first 16 hex of its BLAKE3.",
  })
  @MaxLength(MAX_TEXT)
  name?: string;

  @Field(() => String, { nullable: true })
  @MaxLength(MAX_TEXT)
  mimeType?: string;

  @Field(() => JSONScalar, { nullable: true })
  userMetadata?: unknown;

  @Field(() => ID, { nullable: true })
  @IsUUID('all')
  previewId?: string;

  @Field(() => ID, { nullable: true })
  @IsUUID('all')
  promptId?: string;
}

// Its nulls reach the domain, as the PUT body's: previewId null clears the preview, a null name or tags is refused.
@InputType({
  description: 'At least one field; tags and userMetadata replace the old values; previewId: null clears the preview.',
})
@Extensions(NULL_IS_A_VALUE)
export class UpdateAssetInput {
  @Field(() => String, { nullable: true })
  @MaxLength(MAX_TEXT)
  name?: string | null;

  @Field(() => [String], { nullable: true })
  @ArrayMaxSize(MAX_LIST)
  @MaxLength(MAX_TEXT, { each: true })
  tags?: string[] | null;

  @Field(() => String, { nullable: true })
  @MaxLength(MAX_TEXT)
  mimeType?: string | null;

  @Field(() => ID, { nullable: true })
  @IsUUID('all')
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
  @ValidateNested()
  input?: UploadAssetInput;
}

@ArgsType()
export class UpdateAssetArgs {
  @Field(() => ID)
  id!: string;

  @Field(() => UpdateAssetInput)
  @ValidateNested()
  input!: UpdateAssetInput;
}

@ArgsType()
export class SetAssetImmutableArgs {
  @Field(() => ID)
  id!: string;

  @Field()
  immutable!: boolean;
}
