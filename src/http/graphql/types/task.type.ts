import { Field, Float, ID, Int, ObjectType } from 'type-graphql';
import type { Links, Page } from '../../../domain/assets/asset.types';
import { exportFigures, type DownloadStart, type Task } from '../../../domain/tasks/task.types';
import { JSONScalar, SafeIntScalar } from '../scalars';
import { AssetType } from './asset.type';
import { TaskStatusEnum } from './enums';

@ObjectType('TaskPayload', { simpleResolvers: true, description: 'What the download was asked for.' })
export class TaskPayloadType {
  @Field()
  sourceUrl!: string;

  @Field(() => [String])
  tags!: string[];

  @Field(() => JSONScalar)
  userMetadata!: Record<string, unknown>;

  @Field(() => ID, { nullable: true })
  previewId!: string | null;
}

@ObjectType('ExportRequest', {
  simpleResolvers: true,
  description: 'What an export_assets task was asked for (startExport / POST /api/assets/export).',
})
export class ExportRequestType {
  @Field(() => [ID], { nullable: true })
  assetIds?: string[];

  @Field(() => [ID], { nullable: true })
  jobIds?: string[];

  @Field(() => JSONScalar, { nullable: true, description: '{jobId: [asset names]}' })
  jobAssetNameFilters?: Record<string, string[]>;

  @Field(() => Boolean, { nullable: true })
  includePreviews?: boolean;

  @Field({ description: 'preserve | asset_id | group_by_job_id | group_by_job_time' })
  namingStrategy!: string;
}

@ObjectType('TaskProgress', { simpleResolvers: true })
export class TaskProgressType {
  @Field(() => SafeIntScalar)
  bytesDownloaded!: number;

  @Field(() => SafeIntScalar, { nullable: true, description: 'null when the size is unknown.' })
  bytesTotal!: number | null;

  @Field(() => Float, { nullable: true, description: '0.0–1.0; null when the size is unknown.' })
  progress!: number | null;
}

@ObjectType('ExportFailedAsset', {
  simpleResolvers: true,
  description: "An asset an export left out of its archive (ComfyUI's failed_assets entry).",
})
export class ExportFailedAssetType {
  @Field(() => ID)
  assetId!: string;

  @Field({
    description:
      '`not_found`: a requested asset id names no asset of yours; `fetch_failed`: its content could not be read.',
  })
  error!: string;

  @Field(() => ID, { nullable: true, description: "The asset's job (prompt id), when it has one." })
  jobId?: string;

  @Field(() => String, { nullable: true, description: "The asset's name (fetch_failed)." })
  assetName?: string;
}

@ObjectType('ImportError', { simpleResolvers: true, description: 'A file an import skipped or could not read.' })
export class ImportErrorType {
  @Field({ description: 'Its tree path (`models/loras/x.safetensors`).' })
  path!: string;

  @Field({
    description: 'SYMLINK_OUTSIDE_ROOT, NOT_A_FILE, UNREADABLE, FILE_CHANGED, INVALID_FILE_NAME, ROOT_MISSING, ...',
  })
  code!: string;

  @Field()
  message!: string;
}

@ObjectType('ImportFigures', {
  simpleResolvers: true,
  description: 'seed_assets: what the import did (POST /api/assets/seed).',
})
export class ImportFiguresType {
  @Field(() => Int)
  scanned!: number;

  @Field(() => Int)
  total!: number;

  @Field(() => Int, { description: 'New assets.' })
  created!: number;

  @Field(() => Int, { description: 'Files not stored anew (unchanged, already an asset, or listed in errors).' })
  skipped!: number;

  @Field(() => Int, { description: 'Files opened and read.' })
  filesRead!: number;

  @Field(() => SafeIntScalar)
  bytesRead!: number;

  @Field(() => [ImportErrorType])
  errors!: ImportErrorType[];
}

@ObjectType('TaskResult', { simpleResolvers: true })
export class TaskResultType {
  @Field()
  success!: boolean;

  @Field(() => ID, { nullable: true })
  assetId!: string | null;

  @Field(() => String, { nullable: true })
  assetHash!: string | null;

  @Field(() => String, { nullable: true })
  filename!: string | null;

  @Field(() => SafeIntScalar)
  bytesDownloaded!: number;

  @Field(() => String, { nullable: true, description: 'export_assets: the archive (GET /api/assets/exports/{name}).' })
  exportName?: string;

  @Field(() => Int, { nullable: true, description: 'export_assets' })
  assetsTotal?: number;

  @Field(() => Int, { nullable: true, description: 'export_assets' })
  assetsAttempted?: number;

  @Field(() => Int, { nullable: true, description: 'export_assets' })
  assetsFailed?: number;

  @Field(() => SafeIntScalar, { nullable: true, description: 'export_assets: the size of the archive.' })
  bytesTotal?: number;

  @Field(() => Int, { nullable: true, description: "export_assets: members written (ComfyUI's assets_succeeded)." })
  assetsSucceeded?: number;

  @Field(() => SafeIntScalar, {
    nullable: true,
    description: "export_assets with an archive: its size (ComfyUI's export_size, = bytesTotal).",
  })
  exportSize?: number;

  @Field(() => SafeIntScalar, {
    nullable: true,
    description: "export_assets with an archive: the bytes of its members (ComfyUI's uncompressed_size).",
  })
  uncompressedSize?: number;

  @Field(() => String, {
    nullable: true,
    description: 'export_assets that completed with success false: why (nothing to export, or nothing could be read).',
  })
  error?: string;

  @Field(() => [ExportFailedAssetType], {
    nullable: true,
    description:
      'export_assets: the assets left out of the archive, and why (an empty list when none); null for downloads.',
  })
  failedAssets?: ExportFailedAssetType[];

  @Field(() => ImportFiguresType, {
    nullable: true,
    description: "seed_assets: the import's figures and skipped files.",
  })
  seed?: ImportFiguresType;
}

@ObjectType('Task', { simpleResolvers: true, description: 'A background task (the REST task), camelCase.' })
export class TaskType {
  @Field(() => ID)
  id!: string;

  @Field({ description: 'The owner of the task (of interest with `tasks(allOwners: true)`).' })
  ownerId!: string;

  @Field(() => String, { description: "The client's Idempotency-Key, else `download_file:<id>`." })
  idempotencyKey!: string;

  @Field({ description: '`download_file`, `export_assets` or `seed_assets`' })
  taskName!: string;

  @Field(() => TaskPayloadType, {
    description:
      'download_file tasks: what was asked for (an export_assets task answers an empty sourceUrl here; see exportRequest).',
  })
  payload!: TaskPayloadType;

  @Field(() => ExportRequestType, {
    nullable: true,
    description: 'export_assets tasks: what the export was asked for.',
  })
  exportRequest?: ExportRequestType;

  @Field(() => [String], {
    nullable: true,
    description: 'seed_assets tasks: the roots imported (models, input, output).',
  })
  importRoots?: string[];

  @Field(() => TaskStatusEnum)
  status!: TaskStatusEnum;

  @Field()
  createTime!: Date;

  @Field()
  updateTime!: Date;

  @Field(() => Date, { nullable: true })
  startedAt!: Date | null;

  @Field(() => Date, { nullable: true })
  completedAt!: Date | null;

  @Field(() => TaskProgressType)
  progress!: TaskProgressType;

  @Field(() => TaskResultType, { nullable: true })
  result!: TaskResultType | null;

  @Field(() => String, { nullable: true })
  errorMessage!: string | null;

  static from(t: Task): TaskType {
    // The domain task already has this shape; only the enum needs its GraphQL type, and an export's result lists
    // its failed assets (none: an empty list, never null).
    const r = t.result;
    const result =
      r && t.taskName === 'export_assets'
        ? {
            ...r,
            failedAssets: r.failedAssets ?? [],
            uncompressedSize: undefined,
            ...exportFigures(r),
          }
        : r;
    return Object.assign(new TaskType(), { ...t, status: t.status as TaskStatusEnum, result });
  }
}

@ObjectType('TaskPage', { simpleResolvers: true })
export class TaskPage {
  @Field(() => [TaskType])
  items!: TaskType[];

  @Field(() => Int)
  total!: number;

  @Field()
  hasMore!: boolean;

  static from(p: Page<Task>): TaskPage {
    return Object.assign(new TaskPage(), { items: p.items.map(TaskType.from), total: p.total, hasMore: p.hasMore });
  }
}

@ObjectType('StartDownloadPayload', {
  simpleResolvers: true,
  description:
    'Either `asset` (the content was already known: stored at once) or `task` (a download was started); exactly one is set.',
})
export class StartDownloadPayload {
  @Field(() => AssetType, { nullable: true })
  asset!: AssetType | null;

  @Field(() => Boolean, {
    nullable: true,
    description: 'With `asset`: whether the asset record is new for this owner.',
  })
  createdNew!: boolean | null;

  @Field(() => TaskType, { nullable: true })
  task!: TaskType | null;

  static from(s: DownloadStart, links: Links): StartDownloadPayload {
    return Object.assign(new StartDownloadPayload(), {
      asset: s.asset ? AssetType.from(s.asset.asset, links) : null,
      createdNew: s.asset ? s.asset.created : null,
      task: s.task ? TaskType.from(s.task) : null,
    });
  }
}
