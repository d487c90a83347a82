import type { PageColumns, PageHead } from '../../../domain/assets/asset.repository';
import type { AssetSort, ListPage } from '../../../domain/assets/asset.types';
import { isOwnPreviewType } from '../../../domain/content/mime';
import { safeRelativePath } from '../../../domain/assets/safe-path';

/**
 * GET /api/assets' read model: the page's columns read as PostgreSQL prints them (pg's type parsers bypassed), each
 * asset made the pieces of its REST JSON (`AssetJsonParts`), which `assetPageText` (asset.presenter.ts) joins. The
 * service makes no Date, array or number per asset: strings are made JSON here, timestamps sliced into
 * `toISOString`'s text, tags come as JSON; only the two jsonb values are parsed, to be printed exactly as
 * JSON.stringify prints them (jsonb prints blanks after `,` and `:`, and numbers as numeric does:
 * `1000000000000000000000` where JavaScript prints `1e+21`). Building the whole JSON in PostgreSQL instead cost more
 * CPU on the two sides together, and so did making the strings and timestamps JSON there
 * (`node bench/profiles/listing-json-cost.cjs`, `node bench/profiles/listing-pg-cost.cjs`). The statements it sends
 * are checked in under queries/ (statements.ts; `npm run sql:snapshots` writes them again).
 */

/**
 * The stored values through their own output functions, not cast to text and not made JSON there (`to_json(name)`,
 * `to_char(...)` for the timestamps cost PostgreSQL more CPU than the service's JSON.stringify of the strings and
 * slicing of the timestamps). Timestamps are read in UTC (`AT TIME ZONE 'UTC'`, a timestamp without zone: the
 * session's TimeZone does not matter) and printed in the ISO DateStyle (PostgreSQL's default, which pg's own date
 * parser needs too); `isoOf` makes them `toISOString`'s text. No alias may be a sort column's name other than that
 * column itself: ORDER BY takes an output column first (a text `size` sorted sizes as text, with a Sort).
 */
const TEXT_COLUMNS = `id, name, size, content_hash AS "blake3", mime_type AS "mimeType",
  coalesce(array_to_json(tags)::text, '[]') AS "tagsJson", 'models' = ANY(tags) AS "isModel", user_metadata AS "userMetadata",
  preview_id AS "previewId", preview_removed AS "previewRemoved", prompt_id AS "promptId", is_immutable AS "isImmutable",
  created_at AT TIME ZONE 'UTC' AS "createdAt", updated_at AT TIME ZONE 'UTC' AS "updatedAt",
  last_access_time AT TIME ZONE 'UTC' AS "lastAccessTime", has_thumbnail AS "hasThumbnail", metadata`;

/** A row of the page statement, fields as PostgreSQL printed them (page fields null on an empty page). */
interface AssetTextRow extends PageHead {
  tagCounts: string;
  name: string;
  size: string;
  /** character(64): blank-padded when shorter. */
  blake3: string;
  mimeType: string;
  tagsJson: string;
  /** Booleans print as 't' or 'f'. */
  isModel: string;
  userMetadata: string;
  previewId: string | null;
  previewRemoved: string;
  promptId: string | null;
  isImmutable: string;
  /** UTC, ISO DateStyle: `2026-11-23 01:02:03.45` (the fraction's trailing zeros dropped; none when whole). */
  createdAt: string;
  updatedAt: string;
  lastAccessTime: string;
  hasThumbnail: string;
  metadata: string | null;
}

/**
 * A listed asset as the pieces of its REST JSON: `*Json` fields are JSON text (strings quoted and escaped, `tagsJson`
 * an array, the metadata objects as JSON.stringify prints them), the others plain text (ids, the decimal size,
 * timestamps as `toISOString` prints them).
 */
export interface AssetJsonParts {
  id: string;
  nameJson: string;
  size: string;
  blake3: string;
  mimeTypeJson: string;
  tagsJson: string;
  userMetadataJson: string;
  previewId: string | null;
  /** The id `preview_url` points to (`previewTargetOf`); absent without a preview. */
  previewTarget?: string;
  promptId: string | null;
  createdAt: string;
  updatedAt: string;
  lastAccessTime: string;
  isImmutable: boolean;
  hasThumbnail: boolean;
  /** The name's JSON when the asset is a model and its name a safe relative path (`loaderPathOf`). */
  loaderPathJson?: string;
  /** Absent when the asset has no derived metadata. */
  metadataJson?: string;
}

/** A page of GET /api/assets with its assets as JSON pieces. */
export type AssetJsonPage = ListPage<AssetJsonParts>;

/** The page's columns as text, each row made `AssetJsonParts` (`AssetService.pageIfChanged`). */
export const ASSET_JSON_PAGE: PageColumns<AssetTextRow, AssetJsonParts> = {
  sql: TEXT_COLUMNS,
  asText: true,
  item: (r) => jsonPartsOf(r),
  cursorValue: (r, a, sort) => textSortValue(r, a, sort),
};

/**
 * A UTC timestamp as PostgreSQL prints it (ISO DateStyle) as `Date.toISOString()` prints the Date pg's parser makes
 * of it: milliseconds always three digits (more are truncated, as that parser truncates them).
 */
export function isoOf(t: string): string {
  if (
    t.length <= 26 &&
    t.charCodeAt(4) === 45 &&
    t.charCodeAt(10) === 32 &&
    (t.length === 19 || (t.length > 20 && t.charCodeAt(19) === 46))
  ) {
    return t.length === 23
      ? `${t.slice(0, 10)}T${t.slice(11)}Z`
      : `${t.slice(0, 10)}T${t.slice(11, 19)}.${(t.slice(20) + '000').slice(0, 3)}Z`;
  }
  // Anything else (a year past 9999, BC: no asset has one): through a Date.
  return new Date(`${t.replace(' ', 'T')}Z`).toISOString();
}

/** A `model_type:<folder>` element in a tag array's JSON text (isModelTagged's rule). */
const MODEL_TYPE_TAG_JSON = /[[,]"model_type:[^"]/;

/** The asset's pieces, its jsonb values printed as JSON.stringify prints what pg's JSON.parse made of them. */
function jsonPartsOf(r: AssetTextRow & { id: string }): AssetJsonParts {
  const userMetadata = JSON.parse(r.userMetadata) as unknown;
  const metadata = r.metadata === null ? null : (JSON.parse(r.metadata) as unknown);
  const nameJson = JSON.stringify(r.name);
  // `model_type:<folder>` tags make a model too: looked for in the tags' JSON text, where an element starts after `[`
  // or `,` (inside a string a `"` is always escaped).
  const isModel = r.isModel === 't' || (r.tagsJson.includes('"model_type:') && MODEL_TYPE_TAG_JSON.test(r.tagsJson));
  const loaderPath = isModel ? safeRelativePath(r.name) : undefined;
  return {
    id: r.id,
    nameJson,
    size: r.size,
    blake3: r.blake3.trim(),
    mimeTypeJson: JSON.stringify(r.mimeType),
    tagsJson: r.tagsJson,
    userMetadataJson: JSON.stringify(userMetadata ?? {}),
    previewId: r.previewId,
    previewTarget: r.previewId ?? (r.previewRemoved !== 't' && isOwnPreviewType(r.mimeType) ? r.id : undefined),
    promptId: r.promptId,
    createdAt: isoOf(r.createdAt),
    updatedAt: isoOf(r.updatedAt),
    lastAccessTime: isoOf(r.lastAccessTime),
    isImmutable: r.isImmutable === 't',
    hasThumbnail: r.hasThumbnail === 't',
    // The name itself (the same JSON text) when it is a safe path.
    loaderPathJson: loaderPath === undefined ? undefined : nameJson,
    metadataJson: metadata ? JSON.stringify(metadata) : undefined,
  };
}

function textSortValue(r: AssetTextRow, a: AssetJsonParts, sort: AssetSort): string | number {
  if (sort === 'name') return r.name;
  if (sort === 'size') return Number(r.size);
  return sort === 'created_at' ? a.createdAt : a.updatedAt;
}
